"""export: a ranked fork as training data, one JSONL file per layout.

Layouts (each line one JSON object; field by field in tests/app/data/test_export.py):
- `dpo_trl.jsonl`, TRL's conversational preference type with an explicit prompt, as its
  DPO trainer reads it (huggingface.co/docs/trl, "Dataset formats": Preference,
  Conversational):
      {"prompt": [{"role": "system", ...}, {"role": "user", ...}],
       "chosen": [{"role": "assistant", "content": ...}],
       "rejected": [{"role": "assistant", "content": ...}]}
- `dpo_openai.jsonl`, OpenAI's preference (DPO) fine-tuning input (developers.openai.com,
  "Direct preference optimization": Data format):
      {"input": {"messages": [...], "tools": [], "parallel_tool_calls": true},
       "preferred_output": [{"role": "assistant", "content": ...}],
       "non_preferred_output": [{"role": "assistant", "content": ...}]}
  (each output exactly one assistant message);
- `sft.jsonl`: {"messages": [system, user, assistant]} from verified winners (objective 1;
  one passed by a rubric judge alone only when audited: app/harness/data/admission.py),
  the conversational language-modelling type of the same TRL page and OpenAI's chat
  fine-tuning line;
- `rewards.jsonl`: {"prompt", "completion", "score", "components", "rollout_id",
  "question_id", "branch_index", "rank"} for every ranked branch.

A pair is (chosen = the best-ranked branch with objective score 1, rejected = the
worst-ranked branch with objective score 0) per question with both. The prompt is the
opening messages of the versions the fork ran (regenerated from skills/prompts versions,
without any memory block, and with each skill stripped of its momentum block and markers as
`export-skills` strips it: core/evolution/edits.py `strip_momentum`); the completion is the
branch's final reply.

Every record's string values go through every redaction pass (app/secrets.py `scrub_json`),
so each line stays valid JSON and the same secret gets the same placeholder in every file.
Questions of the test pool (app/harness/rollouts/pools.py) are left out unless `include_test`.
Every file gets `<file>.manifest.json`: counts, source versions, rollout ids, sha256 of the
file, layout and whether a simulated model wrote it. All files are written into a hidden
folder first and renamed into place (a failed export leaves nothing); a previous export in
the folder is replaced only with `overwrite`, and no path on the way may be a link.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loguru import logger

from app.errors import UserError
from app.harness.data.admission import NO_ADMISSION_RULES, Admissions, admissions, branch_key
from app.harness.data.export_formats import (
    CURATED_LAYOUTS,
    CURATION_MANIFEST,
    CurationOptions,
    curated_file_names,
    curated_lines,
)
from app.harness.data.export_ingest import ingested_lines, is_ingest_run
from app.harness.data.fork import held_out_question_ids
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.workspace.atomic import (
    check_no_links,
    fsync_dir,
    write_json_atomic,
    write_text_atomic,
)
from app.harness.workspace.clock import now_iso
from app.harness.workspace.ids import check_run_id
from app.harness.workspace.leftovers import OUT_STAGING_PREFIX, note_out_staging
from app.secrets import scrub_json
from core.evolution.edits import strip_momentum
from core.types import Question

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

EXPORT_VERSION = 1
LAYOUTS = {
    "dpo_trl.jsonl": "trl-dpo-conversational-preference",
    "dpo_openai.jsonl": "openai-preference-fine-tuning",
    "sft.jsonl": "chat-messages-sft",
    "rewards.jsonl": "reward-records",
}


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text or ""}]


def _prompt_messages(
    prompts_cache: dict[tuple[str, str], AgentPrompts],
    session: Session,
    branch: dict[str, Any],
    question: Question,
) -> list[dict[str, Any]]:
    key = (branch["skills_version"], branch["prompts_version"])
    if key not in prompts_cache:
        root = session.paths.root
        loaded = AgentPrompts.load(
            root / "skills" / key[0], root / "prompts" / key[1], session.config.skill_mode
        )
        # the skills as export-skills writes them: no momentum block or markers
        skills = {
            n: strip_momentum(t) if n.endswith(".md") else t for n, t in loaded.skills.items()
        }
        prompts_cache[key] = replace(loaded, skills=skills)
    return prompts_cache[key].opening_messages(question)


def export_rollouts(
    session: Session,
    rollout_ids: Sequence[str],
    out_dir: Path,
    *,
    include_test: bool = False,
    overwrite: bool = False,
    curation: CurationOptions | None = None,
    audited: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The files above plus the curated ones (app/harness/data/export_formats.py). A branch
    only a rubric judge passed is no training target unless `audited` names it
    (app/harness/data/admission.py)."""
    log = session.log
    for rid in rollout_ids:
        check_run_id(rid, "rollout id")
    if any(is_ingest_run(session, rid) for rid in rollout_ids):  # traces, by their feedback
        return _export_ingested(
            session, rollout_ids, Path(out_dir), include_test, overwrite, curation
        )
    _check_target(session.paths.root, Path(out_dir), overwrite)
    for rid in rollout_ids:
        if not log.has_ranking(rid):
            raise UserError(
                f"{session.paths.db}: rollout {rid!r} has no ranking; "
                f"run `rank -w {session.paths.root} {rid}` first"
            )
    test_ids = set() if include_test else held_out_question_ids(session.benchmark)
    admitted = admissions(log, rollout_ids, session.questions_by_id, audited)
    if admitted.refused:
        logger.warning(
            "{} branch(es) passed by a rubric judge alone are left out of the training targets "
            "(sft, DPO chosen, curated SFT, KTO positives); list the ones you audited in "
            "--audited FILE (their ids are in sft.jsonl.manifest.json)",
            len(admitted.refused),
        )
    if admitted.unmatched_ids:
        logger.warning(
            "--audited: {} id(s) name no judge-only branch of these forks (first: {})",
            len(admitted.unmatched_ids),
            admitted.unmatched_ids[0],
        )
    lines: dict[str, list[str]] = {name: [] for name in LAYOUTS}
    versions: set[tuple[str, str]] = set()
    skipped_test = 0
    prompts_cache: dict[tuple[str, str], AgentPrompts] = {}
    for rid in rollout_ids:
        rows = [r.as_dict() for r in log.ranked_branches(rid)]  # the layouts read by column
        by_q: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_q.setdefault(r["question_id"], []).append(r)
        for qid, ranked in by_q.items():
            question = session.questions_by_id.get(qid)
            if question is None:
                continue
            if qid in test_ids:
                skipped_test += 1
                continue
            prompt = _prompt_messages(prompts_cache, session, ranked[0], question)
            for b in ranked:
                versions.add((b["skills_version"], b["prompts_version"]))
                lines["rewards.jsonl"].append(
                    _dump(
                        {
                            "prompt": prompt,
                            "completion": _assistant(b["final_text"]),
                            "score": b["reward"],
                            "components": json.loads(b["components_json"]),
                            "rollout_id": rid,
                            "question_id": qid,
                            "branch_index": b["branch_index"],
                            "rank": b["rank"],
                        }
                    )
                )
            winners = [
                b
                for b in ranked
                if b["objective"] == 1 and admitted.allows(branch_key(rid, qid, b["branch_index"]))
            ]
            losers = [b for b in ranked if b["objective"] == 0]
            if winners:
                lines["sft.jsonl"].append(
                    _dump({"messages": prompt + _assistant(winners[0]["final_text"])})
                )
            if winners and losers:
                chosen, rejected = winners[0]["final_text"], losers[-1]["final_text"]
                lines["dpo_trl.jsonl"].append(
                    _dump(
                        {
                            "prompt": prompt,
                            "chosen": _assistant(chosen),
                            "rejected": _assistant(rejected),
                        }
                    )
                )
                lines["dpo_openai.jsonl"].append(
                    _dump(
                        {
                            "input": {"messages": prompt, "tools": [], "parallel_tool_calls": True},
                            "preferred_output": _assistant(chosen),
                            "non_preferred_output": _assistant(rejected),
                        }
                    )
                )
    curated, curation_manifest = curated_lines(
        session, rollout_ids, test_ids, curation or CurationOptions(), admitted
    )
    lines.update(curated)
    with _staged(session.paths.root, Path(out_dir)) as staging:
        write_json_atomic(staging / CURATION_MANIFEST, curation_manifest)
        return _write_files(
            session, staging, lines, rollout_ids, versions, include_test, skipped_test, admitted
        )


def _export_ingested(
    session: Session,
    run_ids: Sequence[str],
    out_dir: Path,
    include_test: bool,
    overwrite: bool,
    curation: CurationOptions | None,
) -> dict[str, Any]:
    """Ingest runs' traces by their feedback (app/harness/data/export_ingest.py), written
    into the same files, staged the same way."""
    options = curation or CurationOptions()
    lines, manifest, skipped_test = ingested_lines(session, run_ids, include_test, options)
    _check_target(session.paths.root, out_dir, overwrite)
    with _staged(session.paths.root, out_dir) as staging:
        write_json_atomic(staging / CURATION_MANIFEST, manifest)
        return _write_files(
            session, staging, lines, run_ids, set(), include_test, skipped_test, NO_ADMISSION_RULES
        )


def _write_files(
    session: Session,
    staging: Path,
    lines: dict[str, list[str]],
    rollout_ids: Sequence[str],
    versions: set[tuple[str, str]],
    include_test: bool,
    skipped_test: int,
    admitted: Admissions,
) -> dict[str, Any]:
    manifests = {}
    for name in lines.keys() - LAYOUTS.keys() - CURATED_LAYOUTS.keys():  # lineage sidecars
        write_text_atomic(staging / name, "".join(line + "\n" for line in lines[name]))
    for name, layout in {**LAYOUTS, **CURATED_LAYOUTS}.items():
        text = "".join(line + "\n" for line in lines[name])
        write_text_atomic(staging / name, text)
        manifest = {
            "file": name,
            "layout": layout,
            "export_version": EXPORT_VERSION,
            "count": len(lines[name]),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "rollout_ids": list(rollout_ids),
            "source_versions": [{"skills": s, "prompts": p} for s, p in sorted(versions)],
            "test_pool_included": include_test,
            "test_questions_skipped": skipped_test,
            "simulated_model": session.config.uses_sim,
            "created_at": now_iso(),
            **admitted.manifest(),
        }
        write_json_atomic(staging / f"{name}.manifest.json", manifest)
        manifests[name] = manifest
    return manifests


def _file_names() -> list[str]:
    data = [f for name in {**LAYOUTS, **CURATED_LAYOUTS} for f in (name, f"{name}.manifest.json")]
    return [*data, *(f for f in curated_file_names() if f not in data)]


def _check_target(workspace: Path, out_dir: Path, overwrite: bool) -> None:
    """No link on the way to the files (from the workspace for a folder inside it, else from
    `out_dir`), and a previous export is replaced only when asked."""
    root = workspace if out_dir.is_relative_to(workspace) else out_dir
    for name in _file_names():
        check_no_links(root, out_dir / name)
    previous = [name for name in _file_names() if os.path.lexists(out_dir / name)]
    if previous and not overwrite:
        raise UserError(
            f"{out_dir}: holds a previous export ({len(previous)} files: "
            f"{', '.join(previous[:3])}{', ...' if len(previous) > 3 else ''}); add "
            "--overwrite (overwrite=True) to replace them, or choose another --out"
        )
    if previous:
        logger.warning("replacing the previous export in {} ({} files)", out_dir, len(previous))


@contextlib.contextmanager
def _staged(root: Path, out_dir: Path) -> Iterator[Path]:
    """A hidden folder in `out_dir` to write every file into; on success each file is renamed
    into place, on failure the folder (and `out_dir`, when this export created it) is removed.
    The folder is noted in the workspace first, so the next writer removes it after a kill -9
    (app/harness/workspace/leftovers.py)."""
    created = not os.path.lexists(out_dir)
    staging = out_dir / f"{OUT_STAGING_PREFIX}{uuid.uuid4().hex[:8]}"
    note = note_out_staging(root, staging, out_dir, created)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
        yield staging
        for name in _file_names():
            os.replace(staging / name, out_dir / name)
        fsync_dir(out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        note.unlink(missing_ok=True)


def _dump(obj: dict[str, Any]) -> str:
    """One record as a JSON line, every string value through every redaction pass (key
    formats, e-mail and private IP addresses, high-entropy tokens: app/secrets.py `scrub_json`)
    first: model replies can echo what a tool read, and an export leaves the workspace."""
    return json.dumps(scrub_json(obj), ensure_ascii=False, sort_keys=False)
