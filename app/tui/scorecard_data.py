"""The scorecard panel of the branches view: `analyses/scorecard_<rollout>.json` (written by
`scorecard`, app/harness/data/scorecard.py) as short printable lines; None when the rollout
has no scorecard yet or the file is not one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.harness.workspace.ids import RUN_ID_RE
from app.sanitize import visible

MAX_BYTES = 1_000_000  # a scorecard is a few kB; anything larger is not one of ours


def _value(value: Any, unit: str) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    if unit == "pp":
        return f"{value:+.2f} pp"
    if unit == "usd":
        return f"${value:.6f}"
    return f"{value:.4f}" if unit == "share" else f"{value:.1f} {unit}"


def scorecard_lines(root: Path, rollout_id: str) -> list[str] | None:
    if not RUN_ID_RE.fullmatch(rollout_id):
        return None
    path = Path(root) / "analyses" / f"scorecard_{rollout_id}.json"
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    figures = report.get("figures") if isinstance(report, dict) else None
    if not isinstance(figures, list):
        return None
    lines = ["scorecard"]
    for f in figures:
        if isinstance(f, dict):
            shown = _value(f.get("value"), str(f.get("unit", "")))
            lines.append(f"  {visible(f.get('name', '?'))}: {shown}  {visible(f.get('basis', ''))}")
    warnings = report.get("warnings")
    for w in warnings if isinstance(warnings, list) else []:
        lines.append(f"  warning: {visible(w)}")
    return lines
