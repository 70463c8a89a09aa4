"""One step report: the gate's decision, its evidence in ladder order, and the proposed diff."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from app.tui import format as fmt
from app.tui.widgets.charts import EvidenceChart
from app.tui.widgets.diff_view import DiffView
from core.evolution.diagnose import NOWHERE_CATEGORIES


def step_summary(detail: dict[str, Any], *, full: bool = False) -> Group:
    row, rep = detail["row"], detail["report"]
    head = Text()
    head.append(f"e{row['epoch']} s{row['step']} {row['task_type']}  ", style="bold")
    head.append_text(fmt.action(row.get("action")))
    target = rep.get("target_file")
    if target:
        head.append(
            f"  {target}  {rep.get('base_version') or '?'} → "
            f"{rep.get('new_version') or '(no new version)'}"
        )
    cand, base = row.get("cand_acc"), row.get("base_acc")
    # The gate's own effect size is per family, (W − L)/n, not an accuracy difference: each
    # is labelled with what it is (core/evolution/gate.py, GateDecision.delta_hat).
    delta, shrunk = rep.get("delta_hat"), rep.get("delta_shrunk")
    diff = cand - base if isinstance(cand, int | float) and isinstance(base, int | float) else None
    facts = [
        f"cand {fmt.acc(cand)} − base {fmt.acc(base)} = "
        + (f"{diff:+.3f}" if diff is not None else fmt.DASH),
        (f"(W − L)/n {delta:+.3f} per family" if isinstance(delta, int | float) else "")
        + (f" (shrunk {shrunk:+.3f})" if full and isinstance(shrunk, int | float) else ""),
        f"W {fmt.num(row.get('w'))} L {fmt.num(row.get('l'))}",
        f"e-value {fmt.evalue(row.get('e_value'))}",
        f"e_harm {fmt.evalue(rep.get('e_harm'))}",
        f"units {fmt.num(row.get('n_used'))}",
        f"stop {row.get('stop_reason') or '–'}",
        f"budget {fmt.num(row.get('edit_budget'))}",
        f"gate {row.get('gate_run_id') or '–'}",
    ]
    t = Text("  ·  ".join(f for f in facts if f))  # wraps at word boundaries on narrow terminals
    parts: list[Any] = [head, t]
    if rep.get("summary"):
        parts.append(Text(str(rep["summary"]), style="italic"))  # Text: never markup
    triage = triage_text(rep.get("diagnosis"))
    if triage is not None:
        parts.append(triage)
    act = rep.get("activation")
    if isinstance(act, dict):  # skill_mode progressive/tool (app/harness/skills/activation.py)
        prec = act.get("precision")
        parts.append(
            Text(
                f"activation in this step's rollout: recall {fmt.acc(act.get('recall'))}  "
                f"precision {fmt.acc(prec) if isinstance(prec, int | float) else '–'}  "
                f"(n {fmt.num(act.get('n'))}, opened none {fmt.num(act.get('opened_none'))}, "
                f"opened another {fmt.num(act.get('opened_wrong'))}, skill "
                f"{act.get('skill') or '?'})"
            )
        )
    if full:
        edits = rep.get("edits") or []
        if edits:
            et = Table(title="edits", title_justify="left", expand=True, show_lines=False)
            for col in ("#", "op", "section", "text"):
                et.add_column(col)
            for i, e in enumerate(edits):
                et.add_row(
                    *fmt.cells(
                        [
                            str(i),
                            str(e.get("op", "")),
                            str(e.get("section", "")),
                            fmt.short(e.get("text") or e.get("content") or "", 80),
                        ]
                    )
                )
            parts.append(et)
        applied = rep.get("apply_report") or []
        if applied:
            at = Table(title="apply report", title_justify="left", expand=True)
            for col in ("#", "op", "section", "applied", "reason"):
                at.add_column(col)
            for a in applied:
                at.add_row(
                    *fmt.cells(
                        [
                            str(a.get("index", "")),
                            str(a.get("op", "")),
                            str(a.get("section", "")),
                            Text("yes", style="green")
                            if a.get("applied")
                            else Text("no", style="red"),
                            str(a.get("reason") or ""),
                        ]
                    )
                )
            parts.append(at)
        if rep.get("clip"):
            parts.append(Text(f"clip: {rep['clip']}", style="yellow"))
    return Group(*parts)


def triage_text(diagnosis: Any) -> Text | None:
    """`failures 7: skill_gap 4, missing_context 2, runtime_fault 1 · decided by judge 4,
    rule:context_unread 2, rule:stop_error 1` from a step report's `diagnosis`
    (core/evolution/diagnose.py FailureTally.to_dict); the categories no edit can fix in
    yellow. None for reports written before it was recorded."""
    if not isinstance(diagnosis, dict) or not isinstance(diagnosis.get("by_category"), dict):
        return None
    text = Text(f"failures {fmt.num(diagnosis.get('failures'))}: ")
    cats = list(diagnosis["by_category"].items())
    for i, (category, n) in enumerate(cats):
        style = "yellow" if category in NOWHERE_CATEGORIES else ""
        text.append(f"{category} {n}", style=style)
        text.append(", " if i < len(cats) - 1 else "")
    if not cats:
        text.append(fmt.DASH)
    who = diagnosis.get("decided_by")
    if isinstance(who, dict) and who:
        text.append("  ·  decided by " + ", ".join(f"{k} {v}" for k, v in who.items()))
    return text


class StepDetail(Horizontal):
    """Summary + evidence table + e-value chart on the left, the skill-file diff on the right."""

    def __init__(self, *, full: bool = False, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes="step-detail")
        self.full = full
        self.detail: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="evidence-pane"):
            with VerticalScroll(classes="summary-scroll"):
                yield Static("select a step", classes="step-summary")
            yield DataTable(classes="evidence-table", cursor_type="row", zebra_stripes=True)
            yield EvidenceChart(classes="evidence-chart")
        yield DiffView(classes="step-diff")

    def on_mount(self) -> None:
        table = self.query_one(".evidence-table", DataTable)
        for label, key in (
            ("#", "idx"),
            ("unit", "unit"),
            ("base", "base"),
            ("cand", "cand"),
            ("family", "outcome"),  # the family's outcome (what W and L count), not the unit's
            ("W", "w"),
            ("L", "l"),
            ("e_win", "e_win"),
            ("e_harm", "e_harm"),
        ):
            table.add_column(label, key=key)
        table.border_title = "Gate evidence, ladder order (family: whole family's W/L/tie)"
        self.query_one(DiffView).border_title = "Proposed diff"

    def show(self, detail: dict[str, Any] | None) -> None:
        self.detail = detail
        summary = self.query_one(".step-summary", Static)
        table = self.query_one(".evidence-table", DataTable)
        table.clear()
        if detail is None:
            summary.update("step report not found")
            self.query_one(EvidenceChart).display = False
            self.query_one(DiffView).show("")
            return
        summary.update(step_summary(detail, full=self.full))
        for r in detail["evidence"]:
            outcome = r.get("outcome") or ""
            style = fmt.OUTCOME_STYLES.get(outcome, "dim")
            table.add_row(
                *fmt.cells(
                    [
                        str(r["idx"]),
                        r.get("unit_id") or "",
                        str(r.get("base")),
                        str(r.get("cand")),
                        Text(outcome, style=style),
                        str(r.get("w")),
                        str(r.get("l")),
                        fmt.evalue(r.get("e_win")),
                        fmt.evalue(r.get("e_harm")),
                    ]
                ),
                key=str(r["idx"]),
            )
        n = len(detail["evidence"])
        table.border_subtitle = f"{n} units" if n else "no gate ran for this step"
        chart = self.query_one(EvidenceChart)
        chart.display = bool(detail["evidence"])
        threshold = (detail.get("report") or {}).get("threshold")
        chart.show(detail["evidence"], threshold if isinstance(threshold, int | float) else None)
        rep = detail["report"]
        target = rep.get("target_file") or "skill file"
        diff = self.query_one(DiffView)
        diff.border_title = f"Proposed diff: {target}"
        diff.show(rep.get("diff") or "", empty="(this step proposed no change)")
