"""CLI of `scorecard` (docs/scorecard.md): arguments in, a call of app/api.py, lines out."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli_support import out, out_json, overrides_from

if TYPE_CHECKING:
    from app import api


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


def holdout_lines(workspace: Path) -> list[str]:
    """The final test split into held-out task types (never trained) and trained ones, from
    `analyses/final_test_eval.json`; nothing when no type was held out."""
    path = Path(workspace) / "analyses" / "final_test_eval.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    held = report.get("holdout_task_types") if isinstance(report, dict) else None
    final, base = report.get("per_task_type"), report.get("baseline_per_task_type")
    if not held or not isinstance(final, dict) or not isinstance(base, dict):
        return []
    rest = sorted(t for t in final if t not in held)
    return [
        f"  held out (never trained): {_split(held, final, base)}",
        f"  not held out:             {_split(rest, final, base)}",
    ]


def _split(types: list[str], final: Mapping[str, Any], base: Mapping[str, float]) -> str:
    """Baseline -> final test accuracy over `types`, by unit count."""
    total = sum(int(final[t]["total"]) for t in types if t in final)
    if not total:
        return "no test units"
    after = sum(float(final[t]["accuracy"]) * int(final[t]["total"]) for t in types if t in final)
    before = sum(float(base.get(t, 0.0)) * int(final[t]["total"]) for t in types if t in final)
    gain = 100 * (after - before) / total
    return (
        f"{', '.join(types)}: {before / total:.3f} -> {after / total:.3f} ({gain:+.1f} pp, "
        f"{total} units)"
    )


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
