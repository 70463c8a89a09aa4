"""The step detail labels say what they mean: a gate-evidence row's outcome is labelled as its
family's (a unit both got wrong sits in a W family); the header's accuracy difference is
cand − base, and the gate's per-family effect (W − L)/n is named as such."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from app.tui.widgets.step_detail import StepDetail, step_summary

# One W family of two units: the candidate fixed u1, and both got u2 wrong.
EVIDENCE = [
    {"idx": 0, "unit_id": "u1", "base": 0, "cand": 1, "outcome": "W", "w": 1, "l": 0},
    {"idx": 1, "unit_id": "u2", "base": 0, "cand": 0, "outcome": "W", "w": 1, "l": 0},
    {"idx": 2, "unit_id": "u3", "base": 1, "cand": 0, "outcome": "L", "w": 1, "l": 1},
]
DETAIL = {
    "row": {
        "epoch": 1,
        "step": 0,
        "task_type": "ledger",
        "action": "reject",
        "cand_acc": 0.5,
        "base_acc": 0.625,
        "w": 1,
        "l": 1,
    },
    "report": {"delta_hat": 0.25, "delta_shrunk": 0.05},
    "evidence": [{**e, "e_win": 1.0, "e_harm": 1.0} for e in EVIDENCE],
}


def test_the_header_says_cand_minus_base_and_names_the_family_effect() -> None:
    text = "".join(str(part) for part in step_summary(DETAIL).renderables)
    assert "cand 0.500 − base 0.625 = -0.125" in text
    assert "(W − L)/n +0.250 per family" in text and "Δ" not in text


async def test_a_unit_both_got_wrong_is_not_shown_as_a_win() -> None:
    class Host(App):
        def compose(self) -> ComposeResult:
            yield StepDetail()

    app = Host()
    async with app.run_test(size=(160, 40)):
        detail = app.query_one(StepDetail)
        detail.show(DETAIL)
        table = detail.query_one(".evidence-table", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        rows = [
            dict(zip(labels, map(str, table.get_row_at(i)), strict=True))
            for i in range(table.row_count)
        ]
        title = str(table.border_title)
    assert "outcome" not in labels and "family" in title
    assert [(r["base"], r["cand"], r["family"]) for r in rows] == [
        ("0", "1", "W"),
        ("0", "0", "W"),
        ("1", "0", "L"),
    ]


def test_the_step_detail_counts_failures_by_category_and_decider() -> None:
    from tests.tui.conftest import ACCEPTED_DIAGNOSIS

    detail = {**DETAIL, "report": {**DETAIL["report"], "diagnosis": ACCEPTED_DIAGNOSIS}}
    parts = step_summary(detail).renderables
    line = next(p for p in parts if str(p).startswith("failures "))
    assert str(line) == (
        "failures 7: skill_gap 4, missing_context 2, runtime_fault 1  ·  decided by judge 4, "
        "rule:context_unread 2, rule:stop_error 1"
    )
    yellow = {str(line)[s.start : s.end] for s in line.spans if s.style == "yellow"}
    assert yellow == {"missing_context 2", "runtime_fault 1"}  # what no edit can fix
    assert not any(str(p).startswith("failures ") for p in step_summary(DETAIL).renderables)
