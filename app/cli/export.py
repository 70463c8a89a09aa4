"""`export`: ranked forks as DPO pairs, SFT examples and reward records (app/api.py `export`,
curated with `--mix`: app/harness/data/export_formats.py), runs and forks as traces
(`--format otlp|inspect`: app/harness/data/export_otel.py), and `export verify DIR`, which
checks an export."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli._output import out, out_json
from app.errors import UserError

if TYPE_CHECKING:
    from app import api

HELP = "write DPO pairs, SFT examples and reward records of ranked forks as JSONL"
EXAMPLE = "export -w workspaces/mine fork-1 --out exports/"
OPTIONS = ("verbose", "workspace", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "rollout_ids",
        nargs="+",
        help="ranked forks to export (e.g. fork-1), or ingest runs (ingest-<hash>: traces by "
        "their feedback); with --format otlp or inspect, any fork or run id (e.g. infer-1, "
        "serve-1)",
    )
    p.add_argument("--out", type=Path, help="folder (default WS/exports/<first rollout>)")
    p.add_argument(
        "--overwrite", action="store_true", help="replace a previous export in the folder"
    )
    p.add_argument(
        "--include-test",
        action="store_true",
        help="also export questions of the test pool (left out by default)",
    )
    p.add_argument(
        "--format",
        choices=("jsonl", "otlp", "inspect"),
        default="jsonl",
        help="jsonl: DPO/SFT/reward files of ranked forks (default); otlp: runs and forks as "
        "OTLP JSON GenAI spans; inspect: an Inspect AI eval log per run",
    )
    p.add_argument(
        "--audited",
        type=Path,
        metavar="IDS_FILE",
        help="ids (ROLLOUT/QUESTION_ID/BRANCH or question ids, one a line) of branches passed "
        "by a rubric judge alone that a person checked: only these become training targets",
    )
    _add_curation_options(p)


def _add_curation_options(p: argparse.ArgumentParser) -> None:
    """Curated exports (app/harness/data/export_formats.py); `export verify DIR` checks one."""
    p.add_argument(
        "--mix",
        metavar="CLASS=SHARE,...",
        help="SFT class mix, e.g. pristine=0.65,recovery=0.25; shares are normalised to sum 1 "
        "over the classes named (here 72.2%%, 27.8%%); negatives: preference only",
    )
    p.add_argument(
        "--by", choices=("tokens", "count"), default="tokens", help="what --mix shares count"
    )
    p.add_argument("--mix-total", type=int, help="size of the mix (tokens or records)")
    p.add_argument("--seed", type=int, default=0, help="seed of the mix's down-sampling")
    p.add_argument(
        "--allow-copyleft",
        action="store_true",
        help="export from strong-copyleft sources (GPL, CC-BY-SA, ...)",
    )
    p.add_argument(
        "--allow-restricted",
        action="store_true",
        help="export from sources without a licence or with a proprietary one: data you own "
        "(recorded in the manifest)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    if args.format != "jsonl":  # runs and forks as traces
        return _run_traces(args)
    if args.rollout_ids[0] == "verify":  # `export verify DIR`
        return _run_verify(args)
    result = api.export(
        args.workspace,
        args.rollout_ids,
        out=args.out,
        include_test=args.include_test,
        overwrite=args.overwrite,
        mix=args.mix,
        by=args.by,
        mix_total=args.mix_total,
        seed=args.seed,
        allow_copyleft=args.allow_copyleft,
        allow_restricted=args.allow_restricted,
        audited=args.audited,
    )
    if args.json:
        out_json(result)
        return 0
    for name, m in result.files.items():
        out(f"  {result.out / name}: {m.count} rows ({m.layout})")
    first = next(iter(result.files.values()))
    if first.judge_only_refused:
        ids = ", ".join(first.judge_only_refused_ids[:3])
        more = ", ..." if first.judge_only_refused > 3 else ""
        out(
            f"  {first.judge_only_refused} branch(es) passed by a rubric judge alone left out of "
            f"the training targets ({ids}{more}; all in sft.jsonl.manifest.json): "
            "--audited FILE lets the ones you checked through"
        )
    if first.judge_only_audited:
        out(f"  {first.judge_only_audited} judge-only branch(es) exported as audited")
    if result.curation is not None:
        for line in export_curation_lines(result.curation):
            out(line)
    skipped = next(iter(result.files.values())).test_questions_skipped
    if skipped:
        out(f"  {skipped} test-pool questions left out (--include-test to export them)")
    return 0


def export_curation_lines(c: api.CurationSummary) -> list[str]:
    """A curated export's classes, its mix as asked and as written, and its records."""
    avail = ", ".join(f"{v} {k}" for k, v in c.classes_available.items())
    lines = [f"  classes available: {avail}"]
    if c.mix_requested is not None and c.mix_realised is not None:
        given = c.mix_given or {}  # an export written before `given` was recorded has none
        shares = ", ".join(
            f"{k} {f'{given[k]:g} -> ' if k in given else ''}"
            f"{100 * c.mix_requested[k]:.2f}% -> {100 * c.mix_realised[k]:.2f}%"
            for k in c.mix_requested
        )
        how = "given -> normalised to sum 1 -> realised" if given else "normalised -> realised"
        lines.append(f"  mix by {c.mix_by} ({how}): {shares}")
    neg = "n/a" if c.negative_token_share is None else f"{100 * c.negative_token_share:.2f}%"
    lines.append(
        f"  {c.sft_records} SFT records, {c.preference_records} preference records "
        f"(negatives {neg} of their tokens); lineage ids {c.lineage_id}; "
        f"licence tier {c.licence_tier}"
    )
    return lines


def _run_traces(args: argparse.Namespace) -> int:
    """`export --format otlp|inspect`: runs and forks as traces
    (app/harness/data/export_otel.py)."""
    from app import api

    result = api.export_traces(
        args.workspace,
        args.rollout_ids,
        format=args.format,
        out=args.out,
        include_test=args.include_test,
        overwrite=args.overwrite,
    )
    if args.json:
        out_json(result)
        return 0
    what = "traces (OTLP JSON)" if args.format == "otlp" else "samples (Inspect eval log)"
    for name, f in result.files.items():
        out(f"  {result.out / name}: {f.count} {what}")
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    """`export verify DIR`: an export's records checked against their lineage."""
    from app import api

    if len(args.rollout_ids) != 2:
        raise UserError("export verify: give one folder (export verify -w WS DIR)")
    result = api.export_verify(args.rollout_ids[1], args.workspace)
    if args.json:
        out_json(result)
    else:
        out(
            f"export verify {result.folder}: {result.records} records in {result.files} files, "
            f"{result.failures} not matching"
            + ("" if result.workspace_checked else " (lineage only)")
        )
        if result.first_failure:
            out(f"  first: {result.first_failure}")
        for name, how in result.checked.items():
            out(f"  checked {name}: {how}")
        for name, why in result.not_checked.items():
            out(f"  not checked {name}: {why}")
    return 1 if result.failures else 0
