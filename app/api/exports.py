"""Exports, which call no model: `export` (ranked forks or ingested traces as DPO, SFT and reward
JSONL), `export_traces` (OTLP or Inspect AI logs) and `export_verify` (an export's lineage and
hashes checked again)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import paths
from app.api._common import _names, _workspace
from app.api.curation import CurationSummary, _curation_options, _curation_summary
from app.api_args import bad as _bad
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.api_args import resolve_config
from app.harness.rollouts.session import Session
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars


@dataclass(frozen=True)
class SourceVersion:
    skills: str
    prompts: str


@dataclass(frozen=True)
class ExportedFile:
    """One JSONL file of an export and its manifest (`<file>.manifest.json` beside it)."""

    file: str
    layout: str
    export_version: int
    count: int
    sha256: str
    rollout_ids: tuple[str, ...]
    source_versions: tuple[SourceVersion, ...]
    test_pool_included: bool
    test_questions_skipped: int
    simulated_model: bool
    created_at: str
    # branches only a rubric judge passed, left out of training targets unless audited
    # (app/harness/data/admission.py)
    judge_only_refused: int = 0
    judge_only_audited: int = 0
    judge_only_refused_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExportResult:
    out: Path
    files: dict[str, ExportedFile]  # by file name, e.g. "sft.jsonl"
    curation: CurationSummary | None = None  # curation.manifest.json (app/api/curation.py)


def export(
    workspace: str | Path,
    rollout_ids: list[str] | str,
    *,
    out: str | Path | None = None,
    include_test: bool = False,
    overwrite: bool = False,
    mix: Mapping[str, float] | str | None = None,
    by: str = "tokens",
    mix_total: int | None = None,
    seed: int = 0,
    allow_copyleft: bool = False,
    allow_restricted: bool = False,
    audited: str | Path | None = None,
) -> ExportResult:
    """Write the ranked forks `rollout_ids` (or ingest runs: their traces by their feedback,
    docs/ingest.md#as-training-data) as DPO pairs, SFT examples and reward records
    (JSONL, each with a manifest) into `out` (default `<workspace>/exports/<first id>`); the
    test pool's questions are left out unless `include_test`. Calls no model.
    `mix` ("pristine=0.65,recovery=0.25" or a mapping) down-samples the curated SFT files to
    those shares `by` tokens or count (seeded by `seed`; `mix_total` fixes the size). A
    benchmark without a licence, or a proprietary or non-commercial one, is refused unless
    `allow_restricted` (the user's own data); strong copyleft needs `allow_copyleft`.
    A branch only a rubric judge passed is no training target unless the `audited` ids file
    names it (docs/checkers.md)."""
    from app.harness.data.admission import read_audited
    from app.harness.data.export import export_rollouts

    root = _workspace(workspace)
    ids = _names("rollout_ids", rollout_ids)
    if not ids:
        raise _bad("rollout_ids", rollout_ids, "at least one ranked fork's id")
    _expect("out", out, _is_path(out, none=True), "a folder's path or None")
    _expect("include_test", include_test, isinstance(include_test, bool), "True or False")
    _expect("overwrite", overwrite, isinstance(overwrite, bool), "True or False")
    _expect("allow_copyleft", allow_copyleft, isinstance(allow_copyleft, bool), "True or False")
    _expect(
        "allow_restricted", allow_restricted, isinstance(allow_restricted, bool), "True or False"
    )
    options = _curation_options(mix, by, mix_total, seed, allow_copyleft, allow_restricted)
    _expect("audited", audited, _is_path(audited, none=True), "an audited-ids file's path or None")
    audited_ids = read_audited(paths.absolute(audited)) if audited is not None else frozenset()
    with (
        WriterLock(root, "export"),
        Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session,
    ):
        target = paths.absolute(out) if out is not None else session.paths.root / "exports" / ids[0]
        manifests = export_rollouts(
            session,
            ids,
            target,
            include_test=include_test,
            overwrite=overwrite,
            curation=options,
            audited=audited_ids,
        )
    return ExportResult(
        target,
        {name: _exported_file(m) for name, m in manifests.items()},
        _curation_summary(target / "curation.manifest.json"),
    )


def _exported_file(manifest: Mapping[str, Any]) -> ExportedFile:
    return ExportedFile(
        **{
            **manifest,
            "rollout_ids": tuple(manifest["rollout_ids"]),
            "source_versions": tuple(SourceVersion(**v) for v in manifest["source_versions"]),
            "judge_only_refused_ids": tuple(manifest.get("judge_only_refused_ids", ())),
        }
    )


@dataclass(frozen=True)
class TraceFile:
    """One file of a trace export and its manifest (`<file>.manifest.json` beside it)."""

    file: str
    format: str
    count: int  # trajectories: fork branches or run predictions
    sha256: str
    run_ids: tuple[str, ...]
    test_pool_included: bool
    simulated_model: bool
    created_at: str


@dataclass(frozen=True)
class TraceExportResult:
    out: Path
    files: dict[str, TraceFile]  # by file name: "otlp.json" or "inspect-<run>.json"


def export_traces(
    workspace: str | Path,
    run_ids: list[str] | str,
    *,
    format: str = "otlp",  # noqa: A002 -- the CLI's --format
    out: str | Path | None = None,
    include_test: bool = False,
    overwrite: bool = False,
) -> TraceExportResult:
    """Write runs or forks `run_ids` as OTLP JSON (`format="otlp"`: GenAI spans, one trace per
    trajectory) or as Inspect AI eval logs (`format="inspect"`) into `out` (default
    `<workspace>/exports/<first id>`), every string redacted (app/secrets.py `scrub_json`);
    the step-to-span mapping is in app/harness/data/export_otel.py. Calls no model."""
    from app.harness.data.export_otel import FORMATS
    from app.harness.data.export_otel import export_traces as write_traces

    root = _workspace(workspace)
    ids = _names("run_ids", run_ids)
    if not ids:
        raise _bad("run_ids", run_ids, "at least one run or fork id")
    _expect("format", format, format in FORMATS, " or ".join(repr(f) for f in FORMATS))
    _expect("out", out, _is_path(out, none=True), "a folder's path or None")
    _expect("include_test", include_test, isinstance(include_test, bool), "True or False")
    _expect("overwrite", overwrite, isinstance(overwrite, bool), "True or False")
    with (
        WriterLock(root, "export"),
        Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session,
    ):
        target = paths.absolute(out) if out is not None else session.paths.root / "exports" / ids[0]
        manifests = write_traces(
            session, ids, target, format, include_test=include_test, overwrite=overwrite
        )
    return TraceExportResult(
        target,
        {n: TraceFile(**{**m, "run_ids": tuple(m["run_ids"])}) for n, m in manifests.items()},
    )


@dataclass(frozen=True)
class ExportVerifyResult:
    """`export verify DIR`: records whose digest, lineage id (and, with a workspace, whose
    component hashes) no longer match, files whose sha256 or record count differ from their
    manifests; the first one named as file:line. `checked` says how each file was checked,
    `not_checked` which were not and why."""

    folder: Path
    files: int
    records: int
    failures: int
    first_failure: str | None
    keyed: bool
    workspace_checked: bool
    checked: dict[str, str]  # file -> what was checked
    not_checked: dict[str, str]  # file -> why not (absent, no manifest)


def export_verify(folder: str | Path, workspace: str | Path | None = None) -> ExportVerifyResult:
    """Recompute every curated record's lineage in `folder`; with `workspace`, also every
    component hash from it. Calls no model and writes nothing."""
    from app.harness.data.export import LAYOUTS
    from app.harness.data.export_formats import CURATED_LAYOUTS
    from app.harness.data.lineage import verify_folder

    _expect("folder", folder, _is_path(folder, none=False), "an export folder's path")
    names, hashed = tuple(CURATED_LAYOUTS), tuple(LAYOUTS)
    if workspace is None:
        r = verify_folder(paths.absolute(folder), names, None, hashed)
    else:
        root = _workspace(workspace)
        with Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session:
            r = verify_folder(paths.absolute(folder), names, session, hashed)
    return ExportVerifyResult(
        r.folder,
        r.files,
        r.records,
        r.failures,
        r.first_failure,
        r.keyed,
        r.workspace_checked,
        r.checked,
        r.not_checked,
    )
