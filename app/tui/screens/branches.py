"""Branches of a best-of-N fork (app/harness/data/fork.py): its questions; the selected
question's branches with verdicts, judge score, rank and reward; the selected branch's verdict
reasons, judge reasoning and trajectory. Opened from Runs (Enter on a fork run). Queries:
app/tui/branches_data.py, each in a worker thread; layout: app/tui/styles/branches.tcss."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Header, Static

from app.tui import branches_data as q
from app.tui import format as fmt
from app.tui.scorecard_data import scorecard_lines
from app.tui.screens.base import BaseScreen
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs

T = TypeVar("T")

QUESTION_COLUMNS = (
    ("question", "question_id", 16),
    ("type", "task_type", 9),
    ("n", "branches", 3),
    ("right", "correct", 5),
    ("top", "top", 5),
)
BRANCH_COLUMNS = (
    ("rank", "rank", 4),
    ("branch", "branch", 6),
    ("temp", "temp", 5),
    ("answer", "answer", 14),
    ("verdict", "verdict", 7),
    ("judge", "judge", 5),
    ("bt", "bt", 5),
    ("reward", "reward", 6),
    ("verifiers", "verifiers", 24),
)


def question_cells(r: dict[str, Any]) -> list[Any]:
    top = r["top_ok"]
    return [
        r["question_id"],
        r["task_type"] or "",
        str(r["branches"]),
        str(r["correct"] or 0),
        fmt.DASH if top is None else fmt.correct(bool(top)),
    ]


def branch_cells(r: dict[str, Any]) -> list[Any]:
    def num(x: Any, f: str) -> str:
        return format(x, f) if isinstance(x, int | float) else fmt.DASH

    return [
        num(r["rank"], "d"),
        f"b{r['branch_index']}",
        num(r["temperature"], ".2f"),
        fmt.short(r["prediction"], 14),
        fmt.correct(bool(r["correct"])),
        num(r["judge"], ".1f"),
        num(r["bt"], ".2f"),
        num(r["reward"], ".3f"),
        fmt.short(r["verdicts"], 24),
    ]


def detail_text(b: dict[str, Any] | None) -> Text:
    text = Text()
    if b is None:
        return Text("select a branch")
    text.append(
        f"{b['question_id']} · branch b{b['branch_index']} · temperature "
        f"{b['temperature']:.2f} · stop {b['stop_reason']}\n",
        style="bold",
    )
    text.append("verdicts\n", style="bold underline")
    for v in b["verdict_rows"] or [
        {"verifier": "(not ranked yet)", "status": "", "reason": "", "cost_usd": 0.0}
    ]:
        text.append(f"  {v['verifier']}: {v['status']}  {v['reason']}\n")
    text.append("judge\n", style="bold underline")
    for j in b["reasoning"]:
        if j["kind"] == "scalar":
            what = f"score {j['score']:.0f}" if j["score"] is not None else "score –"
        else:
            what = (
                f"b{j['branch_a']} vs b{j['branch_b']} (b{j['branch_a'] if j['shown_first'] == 'a' else j['branch_b']} "
                f"shown first): {j['preferred']}"
            )
        capped = " [capped]" if j["capped"] else ""
        text.append(f"  {j['kind']} #{j['sample']}: {what}{capped}  {j['reasoning'] or ''}\n")
    text.append("trajectory\n", style="bold underline")
    for s in b["steps"]:
        kind = s.get("type")
        if kind == "model":
            calls = ", ".join(c.get("name", "?") for c in s.get("tool_calls") or [])
            body = (s.get("text") or "").strip() or f"(calls {calls})"
            text.append(f"  model: {body}\n")
        elif kind == "tool":
            args = json.dumps(s.get("arguments"), ensure_ascii=False)[:80]
            text.append(f"  tool {s.get('name')}({args}) -> {s.get('status')}\n")
            for line in str(s.get("output") or "").splitlines()[:8]:
                text.append(f"    {line}\n", style="dim")
        elif kind == "verdict":
            text.append(
                f"  verdict: {s.get('prediction')!r} {'right' if s.get('correct') else 'wrong'}\n"
            )
        else:
            text.append(f"  {kind}: {str(s.get('error') or s.get('text') or '')[:200]}\n")
    return text


class BranchesScreen(BaseScreen):
    WATCH = frozenset({"runs", "predictions"})

    def __init__(self, rollout_id: str) -> None:
        super().__init__(id="branches")
        self.rollout_id = rollout_id
        self.question_id: str | None = None
        self.branch_id: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("runs")
        yield Static(f"fork {self.rollout_id}", markup=False, id="branches-title", classes="title")
        # `scorecard`'s figures for this fork, when it has been scored (hidden otherwise)
        yield Static("", markup=False, id="fork-scorecard")
        with Horizontal(id="branches-top"):
            yield DataTable(
                id="fork-questions", classes="main", cursor_type="row", zebra_stripes=True
            )
            yield DataTable(id="fork-branches", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="branch-detail-box"):
            yield Static("", id="branch-detail", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        for table_id, columns in (
            ("#fork-questions", QUESTION_COLUMNS),
            ("#fork-branches", BRANCH_COLUMNS),
        ):
            table = self.query_one(table_id, DataTable)
            for label, key, width in columns:
                table.add_column(label, key=key, width=width)
        self.query_one("#fork-questions", DataTable).focus()
        super().on_mount()

    def _read(self, fn: Callable[..., T], *args: object) -> Callable[[], T]:
        def query() -> T:
            with self.data.reader() as log:
                return fn(log, *args)

        return query

    def reload(self, live: bool = False) -> None:
        self.fetch(self._read(q.fork_runs), self._set_title, group="fork-title")
        root = self.data.root
        self.fetch(
            lambda: scorecard_lines(root, self.rollout_id), self._show_scorecard, group="scorecard"
        )
        self.fetch(
            self._read(q.fork_questions, self.rollout_id),
            self._show_questions,
            group="fork-questions",
        )

    def _set_title(self, runs: list[dict[str, Any]]) -> None:
        run = next((r for r in runs if r["run_id"] == self.rollout_id), None)
        if run is None:
            return
        try:
            s = json.loads(run["summary_json"] or "{}")
        except ValueError:
            s = {}
        self.query_one("#branches-title", Static).update(
            f"fork {self.rollout_id} · {run['status']} · {s.get('questions', 0)} questions · "
            f"pass@1 {fmt.acc(s.get('pass_at_1'))} · pass@N {fmt.acc(s.get('pass_at_n'))}"
        )

    def _show_scorecard(self, lines: list[str] | None) -> None:
        panel = self.query_one("#fork-scorecard", Static)
        panel.update("\n".join(lines or []))
        panel.display = bool(lines)

    def _show_questions(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#fork-questions", DataTable)
        table.clear()
        for r in rows:
            table.add_row(*fmt.cells(question_cells(r)), key=r["question_id"])
        if rows:
            target = next(
                (i for i, r in enumerate(rows) if r["question_id"] == self.question_id), 0
            )
            table.move_cursor(row=target, animate=False)
            self._select_question(rows[target]["question_id"])

    def _select_question(self, question_id: str) -> None:
        self.question_id = question_id
        self.fetch(
            self._read(q.question_branches, self.rollout_id, question_id),
            self._show_branches,
            group="fork-branches",
        )

    def _show_branches(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#fork-branches", DataTable)
        table.clear()
        for r in rows:
            table.add_row(*fmt.cells(branch_cells(r)), key=str(r["id"]))
        if rows:
            table.move_cursor(row=0, animate=False)
            self._select_branch(rows[0]["id"])

    def _select_branch(self, branch_id: int) -> None:
        self.branch_id = branch_id
        self.fetch(self._read(q.branch_detail, branch_id), self._show_detail, group="fork-detail")

    def _show_detail(self, detail: dict[str, Any] | None) -> None:
        self.query_one("#branch-detail", Static).update(detail_text(detail))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value if event.row_key is not None else None
        if not key:
            return
        if event.data_table.id == "fork-questions" and key != self.question_id:
            self._select_question(key)
        elif event.data_table.id == "fork-branches" and int(key) != self.branch_id:
            self._select_branch(int(key))
