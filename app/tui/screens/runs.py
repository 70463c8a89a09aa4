"""Runs -> predictions: the runs in the log, newest first; one run's predictions, filtered."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Header, Input, Select, Static

from app.tui import format as fmt
from app.tui.data import KeysetPage, PredictionFilter
from app.tui.screens.base import BaseScreen
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs
from app.tui.widgets.paged_table import PagedTable
from core.types import StopReason

PAGE = 100
RUN_COLUMNS = (
    ("seq", "seq", 5),
    ("run", "run_id", 30),
    ("kind", "kind", 12),
    ("status", "status", 18),  # "stopped resumed 2×"
    ("skills", "skills", 6),
    ("prompts", "prompts", 7),
    ("predictions", "n", 11),
    ("accuracy", "acc", 8),
    ("started", "started", 25),
    ("finished", "finished", 25),
)
PRED_COLUMNS = (
    ("question", "question_id", 16),
    ("task type", "task_type", 10),
    ("verdict", "correct", 7),
    ("stop", "stop_reason", 9),
    ("prediction", "prediction", 18),
    ("answer", "answer", 18),
    ("tokens in/out", "tokens", 13),
    ("cost", "cost", 9),
    ("latency", "latency", 7),
    ("id", "id", 8),
)


# Runs with no reference answer to score: a serve run's requests, an ingest run's traces
# (its `correct` marks failed or low-scored traces for `diagnose`, not an accuracy).
UNSCORED_KINDS = frozenset({"serve", "ingest"})


def run_cells(r: dict[str, Any]) -> list[Any]:
    n, n_ok = r["n_predictions"], r["n_correct"]
    accuracy = r["accuracy"] if r["accuracy"] is not None else (n_ok / n if n else None)
    if r["kind"] in UNSCORED_KINDS:
        accuracy = None  # shown as a dash, never as 0.000
    kind = Text(r["kind"] or "")
    if r["simulated"]:
        kind.append(" sim", style="dim yellow")
    status = r["status"] or ""
    shown = Text(status, style=fmt.RUN_STATUS_STYLES.get(status, ""))
    if r.get("resumes"):  # `train --resume` went on from a checkpoint (report lists them)
        shown.append(f" resumed {r['resumes']}×", style="yellow")
    return [
        str(r["seq"]),
        r["run_id"],
        kind,
        shown,
        r["skills_version"] or fmt.DASH,
        r["prompts_version"] or fmt.DASH,
        fmt.num(n),
        fmt.acc(accuracy),
        r["started_at"] or fmt.DASH,
        r["finished_at"] or fmt.DASH,
    ]


def prediction_cells(r: dict[str, Any]) -> list[Any]:
    return [
        r["question_id"],
        r["task_type"] or "",
        fmt.correct(r["correct"]),
        Text(
            r["stop_reason"] or "", style="" if r["stop_reason"] == StopReason.FINAL else "yellow"
        ),
        fmt.short(r["prediction"], 18),
        fmt.short(r["answer"], 18),
        f"{fmt.num(r['tokens_in'])}/{fmt.num(r['tokens_out'])}",
        fmt.cost(r["cost_usd"]),
        f"{r['latency_s']:.2f}s" if isinstance(r["latency_s"], int | float) else fmt.DASH,
        str(r["id"]),
    ]


class RunsScreen(BaseScreen):
    WATCH = frozenset({"runs", "predictions"})

    def __init__(self) -> None:
        super().__init__(id="runs")
        self.kind: str | None = None
        self.page = KeysetPage([], False, False)

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("runs")
        with Horizontal(classes="filters"):
            yield Select([], prompt="kind: all", id="kind-filter", classes="filter")
            yield Static("", markup=False, id="runs-info", classes="info")
        yield PagedTable(id="runs-table", classes="main")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(PagedTable)
        table.set_columns(RUN_COLUMNS)
        table.focus()
        super().on_mount()

    def reload(self, live: bool = False) -> None:
        self.fetch(self.data.run_kinds, self._set_kinds, group="run-kinds")
        if live and self.page.has_prev:
            return  # deep in the list: new runs land on the first page; keep the user's place
        self._load("first", keep=live)

    def _load(self, where: str, *, keep: bool = False) -> None:
        table = self.query_one(PagedTable)
        key = table.current_key() if keep else None
        row = table.cursor_row if keep else ("bottom" if where in ("prev", "last") else "top")
        kind, page = self.kind, self.page
        args: dict[str, Any] = {"kind": kind, "limit": PAGE}
        if where == "next":
            args["before"] = page.last
        elif where == "prev":
            args["after"] = page.first
        elif where == "last":
            args["last"] = True
        self.fetch(
            lambda: self.data.runs_page(**args), lambda p: self._show(p, row, key), group="runs"
        )

    def _show(self, page: KeysetPage, cursor: str | int, key: str | None) -> None:
        self.page = page
        table = self.query_one(PagedTable)
        table.show_rows(
            ((r["run_id"], run_cells(r)) for r in page.rows),
            has_prev=page.has_prev,
            has_next=page.has_next,
            cursor=cursor,
            key=key,
        )
        if page.rows:
            info = (
                f"runs seq {page.first}…{page.last}"
                f"{' · more newer ([)' if page.has_prev else ''}"
                f"{' · more older (])' if page.has_next else ''} · Enter: predictions"
            )
        else:
            info = "no runs yet"
        self.query_one("#runs-info", Static).update(info)

    def _set_kinds(self, kinds: list[str]) -> None:
        select = self.query_one("#kind-filter", Select)
        if getattr(select, "_known", None) == kinds:
            return
        select._known = kinds  # type: ignore[attr-defined]
        with select.prevent(Select.Changed):
            select.set_options([(k, k) for k in kinds])
            if self.kind in kinds:
                select.value = self.kind

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "kind-filter":
            self.kind = None if event.value is Select.NULL else str(event.value)
            self._load("first")

    def on_paged_table_page_request(self, event: PagedTable.PageRequest) -> None:
        self._load(event.where)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "runs-table" and event.row_key.value:
            run = next((r for r in self.page.rows if r["run_id"] == event.row_key.value), None)
            # a fork opens its branches (app/tui/screens/branches.py)
            if run is not None and run["kind"] == "fork":
                from app.tui.screens.branches import BranchesScreen

                self.app.push_screen(BranchesScreen(event.row_key.value))
                return
            self.app.push_screen(PredictionsScreen(event.row_key.value))


class PredictionsScreen(BaseScreen):
    WATCH = frozenset({"predictions"})

    def __init__(self, run_id: str) -> None:
        super().__init__(id="predictions")
        self.run_id = run_id
        self.filter = PredictionFilter()
        self.page = KeysetPage([], False, False)
        self.total: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("runs")
        yield Static(f"run {self.run_id}", markup=False, id="run-title", classes="title")
        with Horizontal(classes="filters"):
            yield Select(
                [("right", "right"), ("wrong", "wrong")],
                prompt="verdict: all",
                id="correct-filter",
                classes="filter",
            )
            yield Select([], prompt="task type: all", id="task-filter", classes="filter")
            yield Select(
                [(s, s) for s in StopReason],
                prompt="stop: all",
                id="stop-filter",
                classes="filter",
            )
            yield Input(placeholder="search text, Enter", id="search", classes="filter")
        yield PagedTable(id="predictions-table", classes="main")
        yield Static("", markup=False, id="predictions-info", classes="info")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(PagedTable)
        table.set_columns(PRED_COLUMNS)
        table.focus()
        self.fetch(
            lambda: (self.data.run(self.run_id), self.data.prediction_task_types(self.run_id)),
            self._set_header,
            group="pred-header",
        )
        super().on_mount()

    def _set_header(self, result: tuple[dict[str, Any] | None, list[str]]) -> None:
        run, types = result
        if run:
            self.query_one("#run-title", Static).update(
                f"run {run['run_id']} · {run['kind']} · {run['status']} · skills "
                f"{run['skills_version'] or '–'} prompts {run['prompts_version'] or '–'} · "
                f"started {run['started_at'] or '–'}"
            )
        select = self.query_one("#task-filter", Select)
        with select.prevent(Select.Changed):
            select.set_options([(t, t) for t in types])

    # -- data -----------------------------------------------------------------------------
    def reload(self, live: bool = False) -> None:
        if live and self.page.has_next:
            self._count()  # new rows only change the count unless we show the tail
            return
        self._load("first" if not live else "same", keep=live)

    def _load(self, where: str, *, keep: bool = False) -> None:
        table = self.query_one(PagedTable)
        key = table.current_key() if keep else None
        row = table.cursor_row if keep else ("bottom" if where in ("prev", "last") else "top")
        flt, page, run_id = self.filter, self.page, self.run_id
        args: dict[str, Any] = {"limit": PAGE}
        if where == "next":
            args["after"] = page.last
        elif where == "prev":
            args["before"] = page.first
        elif where == "last":
            args["last"] = True
        elif where == "same" and page.first is not None and page.has_prev:
            args["start"] = page.first  # re-read the page the user is on

        def query(cancelled: Any) -> KeysetPage:
            return self.data.predictions_page(run_id, flt, cancelled=cancelled, **args)

        self.query_one("#predictions-info", Static).update("loading…")
        self.fetch(query, lambda p: self._show(p, row, key), group="predictions", cancellable=True)

    def _show(self, page: KeysetPage, cursor: str | int, key: str | None) -> None:
        self.page = page
        table = self.query_one(PagedTable)
        table.show_rows(
            ((str(r["id"]), prediction_cells(r)) for r in page.rows),
            has_prev=page.has_prev,
            has_next=page.has_next,
            cursor=cursor,
            key=key,
        )
        self._info()
        self._count()

    def _count(self) -> None:
        flt, first = self.filter, self.page.first

        def query(cancelled: Any) -> tuple[int, int | None]:
            return self.data.predictions_count(
                self.run_id, flt, first_key=first, cancelled=cancelled
            )

        self.fetch(query, self._set_count, group="predictions-count", cancellable=True)

    def _set_count(self, result: tuple[int, int | None]) -> None:
        self.total, position = result
        self._info(position)

    def _info(self, position: int | None = None) -> None:
        page, n = self.page, len(self.page.rows)
        if not n:
            text = "no predictions" + ("" if self.filter.is_empty else " match the filters")
        elif position is not None:
            text = f"rows {position + 1:,}–{position + n:,} of {self.total:,}"
        else:
            total = f" of {self.total:,} matching" if self.total is not None else ""
            text = f"{n} rows ({page.first} … {page.last}){total}"
        nav = []
        if page.has_prev:
            nav.append("[ / PageUp: previous page")
        if page.has_next:
            nav.append("] / PageDown: next page")
        self.query_one("#predictions-info", Static).update(
            " · ".join([text, *nav, "Enter: trajectory"])
        )

    # -- events ---------------------------------------------------------------------------
    def on_select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        f = self.filter
        sel = event.select.id
        if sel == "correct-filter":
            self.filter = PredictionFilter(
                None if value is None else value == "right", f.task_type, f.stop_reason, f.search
            )
        elif sel == "task-filter":
            self.filter = PredictionFilter(f.correct, value, f.stop_reason, f.search)
        elif sel == "stop-filter":
            self.filter = PredictionFilter(f.correct, f.task_type, value, f.search)
        else:
            return
        self.total = None
        self._load("first")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        f = self.filter
        self.filter = PredictionFilter(f.correct, f.task_type, f.stop_reason, event.value.strip())
        self.total = None
        self._load("first")
        self.query_one(PagedTable).focus()

    def on_paged_table_page_request(self, event: PagedTable.PageRequest) -> None:
        self._load(event.where)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "predictions-table" or event.row_key.value is None:
            return
        from app.tui.screens.trajectory import TrajectoryScreen

        ids = [int(r["id"]) for r in self.page.rows]
        self.app.push_screen(TrajectoryScreen(int(event.row_key.value), neighbours=ids))
