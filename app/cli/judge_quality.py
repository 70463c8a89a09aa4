"""`judge-quality`: grade the rubric judge on labelled cases (docs/checkers.md; app/api.py
`judge_quality`, the work in app/harness/rollouts/judge_quality.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import config_from, notice_if_simulated, out, out_json

HELP = "grade the rubric judge on labelled cases; training warns until one passes"
EXAMPLE = "judge-quality -w workspaces/mine --cases judge_cases.jsonl"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", type=Path, required=True, help="labelled cases (JSONL)")
    p.add_argument(
        "--pass-line", type=float, default=0.9, help="agreement a trustworthy judge reaches"
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    result = api.judge_quality(
        args.workspace, args.cases, config_from(args), pass_line=args.pass_line
    )
    if args.json:
        out_json(result)
        return 0
    verdict = "PASS" if result.passed else "FAIL"
    out(
        f"judge-quality {result.run_id}: judge_model {result.judge_model}, "
        f"{result.judged}/{result.cases} cases judged"
    )
    out(f"  agreement {result.agreement:.3f} (pass line {result.pass_line:.2f}): {verdict}")
    for kind, share in result.by_kind.items():
        out(f"    {kind:<10} {share:.3f} in band")
    out(
        f"  bias: leniency {result.leniency:+.3f} (distance to the band; > 0 too lenient), "
        f"verbosity {result.verbosity_bias:+.3f} (score change when padded)"
    )
    out(
        f"  invalid: {result.invalid_cases} case(s) without a verdict, "
        f"{result.invalid_replies} unreadable judge replies (excluded, never scored 0)"
    )
    for miss in result.band_misses[:10]:
        out(
            f"  miss {miss['case_id']} ({miss['kind']}): {miss['score']:.2f} outside "
            f"[{miss['low']:.2f}, {miss['high']:.2f}]"
        )
    if len(result.band_misses) > 10:
        out(f"  ... {len(result.band_misses) - 10} more misses (--json lists them all)")
    out(f"  recorded in {result.record}")
    notice_if_simulated(result.simulated_model)
    return 0
