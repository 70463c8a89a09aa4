"""`scorecard`: judge a ranked fork's data (docs/scorecard.md; app/api.py `scorecard`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.cli._output import out, out_json, overrides_from, progress_from

if TYPE_CHECKING:
    from app import api

HELP = (
    "judge a ranked fork's data: yield, verifier flakiness, canary leaks, cost per clean "
    "trajectory, held-out accuracy with its memories vs without (docs/scorecard.md)"
)
EXAMPLE = "scorecard -w workspaces/mine fork-1"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rollout_id", metavar="ROLLOUT", help="a ranked fork's id")
    p.add_argument(
        "--reruns", type=int, default=3, help="reruns of the verifiers for R_flake (default 3)"
    )
    p.add_argument(
        "--memory-k",
        type=int,
        default=3,
        help="memories of the rollout per held-out question (default 3; 0 skips the test)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    result = api.scorecard(
        args.workspace,
        args.rollout_id,
        args.config,
        overrides=overrides_from(args),
        reruns=args.reruns,
        memory_k=args.memory_k,
        progress=progress_from(args),
    )
    if args.json:
        out_json(result)
    else:
        for line in scorecard_lines(result):
            out(line)
    return 0


def scorecard_lines(result: api.ScorecardResult) -> list[str]:
    """One line per figure with its basis, then the warnings."""
    lines = [f"scorecard {result.rollout_id}:"]
    for f in result.figures:
        lines.append(f"  {f.name:<18} {_value(f.value, f.unit):>14}  {f.basis}")
    h = result.loop_health
    lines.append(
        f"  loop health: {h['questions']} questions, {100 * h['informative_share']:.1f}% "
        f"informative (0 < p-hat < 1; {h['all_pass']} all pass, {h['all_fail']} all fail), "
        f"mean P(informative) {h['mean_informative_chance']:.3f}, "
        f"{h['mean_distinct_tool_sequences']:.2f} distinct tool sequences per question"
    )
    lines += [f"  warning: {w}" for w in result.warnings]
    lines.append(f"  report: {result.report_path}")
    return lines


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "share":
        return f"{value:.4f}"
    if unit == "usd":
        return f"${value:.6f}"
    if unit == "pp":
        return f"{value:+.2f} pp"
    return f"{value:.1f} {unit}"
