"""Cell and text formatting shared by the screens (pure functions, no Textual)."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.text import Text

from app.harness.training.vocabulary import SkipAction
from app.harness.workspace.harness_log import RunStatus
from app.tui.data import ShownStatus, colour_diff_lines
from core.evolution.gate import FamilyOutcome, GateAction

ACTION_STYLES: dict[str, str] = {
    GateAction.ACCEPT: "bold green",
    GateAction.ACCEPT_PROVISIONAL: "yellow",
    GateAction.REJECT: "red",
    SkipAction.EVOLVE_FAILED: "bold red",
    SkipAction.CONTAMINATION: "bold magenta",
    SkipAction.SKIP_REPEAT: "magenta",
    SkipAction.SKIP_COOLDOWN: "dim cyan",
    SkipAction.SKIP_PROBATION: "dim yellow",
    SkipAction.SKIP_NO_CHANGE: "dim",
    SkipAction.SKIP_NO_FAILURES: "dim",
    SkipAction.SKIP_NO_SKILL_GAPS: "dim",
}
STATUS_STYLES: dict[str, str] = {
    ShownStatus.RUNNING: "bold green",
    ShownStatus.STOPPED: "bold yellow",
    ShownStatus.FINISHED: "bold cyan",
    ShownStatus.FAILED: "bold red",
    ShownStatus.NOT_STARTED: "dim",
    ShownStatus.UNKNOWN: "yellow",
}
RUN_STATUS_STYLES: dict[str, str] = {RunStatus.RUNNING: "green", RunStatus.FAILED: "red"}
OUTCOME_STYLES: dict[str, str] = {FamilyOutcome.W: "green", FamilyOutcome.L: "red"}
DASH = "–"


def acc(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else DASH


def num(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def evalue(value: Any) -> str:
    """E-values span many orders of magnitude: compact, still readable."""
    if not isinstance(value, int | float):
        return DASH
    if value == 0 or (1e-3 <= abs(value) < 1e5):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:.2e}"


def log10(value: Any) -> float:
    if not isinstance(value, int | float) or value <= 0:
        return 0.0
    return math.log10(value)


def cost(value: Any) -> str:
    return f"${value:,.4f}" if isinstance(value, int | float) else DASH


def action(name: str | None) -> Text:
    return Text(name or DASH, style=ACTION_STYLES.get(name or "", ""))


def status(state: str) -> Text:
    return Text(state, style=STATUS_STYLES.get(state, ""))


def correct(value: Any) -> Text:
    if value is None:
        return Text(DASH)
    return Text("✓ right", style="green") if value else Text("✗ wrong", style="red")


def short(text: Any, width: int = 40) -> str:
    s = "" if text is None else str(text).replace("\n", " ⏎ ")
    return s if len(s) <= width else s[: width - 1] + "…"


def pretty_args(arguments: Any) -> str:
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def diff_text(diff: str, *, empty: str = "(no diff)") -> Text:
    if not diff.strip():
        return Text(empty, style="dim italic")
    text = Text()
    for line, style in colour_diff_lines(diff):
        text.append(line + "\n", style=style)
    return text


def cells(values: list[Any]) -> list[Any]:
    """DataTable cells: plain strings become Text, so user data is never read as markup
    (a question like "[ledger] ..." stays as written) and no markup parser runs per cell."""
    return [Text(v, end="", no_wrap=True) if isinstance(v, str) else v for v in values]
