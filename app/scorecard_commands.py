"""CLI of `scorecard` (docs/scorecard.md): arguments in, a call of app/api.py, lines out."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.cli_support import out, out_json, overrides_from

if TYPE_CHECKING:
    from app import api


def scorecard_lines(result: api.ScorecardResult) -> list[str]:
    """One line per figure with its basis, then the warnings."""
    lines = [f"scorecard {result.rollout_id}:"]
    for f in result.figures:
        lines.append(f"  {f.name:<20} {_value(f.value, f.unit):>12}  {f.basis}")
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


def cmd_scorecard(args: argparse.Namespace) -> int:
    from app import api

    result = api.scorecard(
        args.workspace,
        args.rollout_id,
        args.config,
        overrides=overrides_from(args),
        reruns=args.reruns,
        memory_k=args.memory_k,
        progress=False if args.no_progress else None,
    )
    if args.json:
        out_json(result)
    else:
        for line in scorecard_lines(result):
            out(line)
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"scorecard": cmd_scorecard}
