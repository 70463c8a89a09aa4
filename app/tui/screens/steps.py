"""Steps: every step report (sortable, filterable); the selected one's evidence and diff."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Header, Select, Static

from app.harness.training.vocabulary import STEP_ACTIONS
from app.tui import format as fmt
from app.tui.data import STEP_SORTS, StepFilter, StepPage
from app.tui.screens.base import BaseScreen
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs
from app.tui.widgets.paged_table import PagedTable
from app.tui.widgets.step_detail import StepDetail

PAGE = 100
COLUMNS = (
    ("epoch", "epoch", 5),
    ("step", "step", 4),
    ("task type", "task_type", 12),
    ("action", "action", 18),
    ("cand", "cand_acc", 6),
    ("base", "base_acc", 6),
    ("W", "w", 4),
    ("L", "l", 4),
    ("e-value", "e_value", 9),
    ("units", "n_used", 5),
    ("stop", "stop_reason", 10),
    ("budget", "edit_budget", 6),
)
SORT_CYCLE = [key for _, key, _ in COLUMNS]


def step_cells(r: dict[str, Any]) -> list[Any]:
    return [
        str(r["epoch"]),
        str(r["step"]),
        r["task_type"] or "",
        fmt.action(r["action"]),
        fmt.acc(r["cand_acc"]),
        fmt.acc(r["base_acc"]),
        fmt.num(r["w"]),
        fmt.num(r["l"]),
        fmt.evalue(r["e_value"]),
        fmt.num(r["n_used"]),
        r["stop_reason"] or fmt.DASH,
        fmt.num(r["edit_budget"]),
    ]


class StepsScreen(BaseScreen):
    WATCH = frozenset({"steps"})
    BINDINGS = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("r", "reverse_sort", "Reverse"),
    ]

    def __init__(self) -> None:
        super().__init__(id="steps")
        self.filter = StepFilter()
        self.sort = "epoch"
        self.descending = True
        self.page = StepPage([], 0, 0)

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("steps")
        with Horizontal(classes="filters"):
            yield Select([], prompt="task type: all", id="task-filter", classes="filter")
            yield Select(
                [(a, a) for a in STEP_ACTIONS],
                prompt="action: all",
                id="action-filter",
                classes="filter",
            )
            yield Static("", markup=False, id="steps-info", classes="info")
        yield PagedTable(id="steps-table", classes="main")
        yield StepDetail(id="step-detail")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(PagedTable)
        table.set_columns(COLUMNS)
        self._label_sort()
        table.focus()
        super().on_mount()

    # -- data -----------------------------------------------------------------------------
    def reload(self, live: bool = False) -> None:
        self.fetch(self.data.step_filter_options, self._set_options, group="step-options")
        self._load(self.page.offset if live else 0, keep=live)

    def _load(self, offset: int, *, cursor: str | int = "top", keep: bool = False) -> None:
        table = self.query_one(PagedTable)
        key = table.current_key() if keep else None
        row = table.cursor_row if keep else cursor
        flt, sort, desc = self.filter, self.sort, self.descending

        def query() -> StepPage:
            return self.data.steps_page(flt, sort=sort, descending=desc, offset=offset, limit=PAGE)

        self.fetch(query, lambda page: self._show(page, row, key), group="steps")

    def _show(self, page: StepPage, cursor: str | int, key: str | None) -> None:
        self.page = page
        table = self.query_one(PagedTable)
        table.show_rows(
            ((str(r["id"]), step_cells(r)) for r in page.rows),
            has_prev=page.has_prev,
            has_next=page.has_next,
            cursor=cursor,
            key=key,
        )
        if page.total:
            info = f"rows {page.offset + 1:,}–{page.offset + len(page.rows):,} of {page.total:,}"
        else:
            info = "no step reports" + (
                " match the filters" if self.filter != StepFilter() else " yet"
            )
            self.query_one(StepDetail).show(None)
        self.query_one("#steps-info", Static).update(info)

    def _set_options(self, options: tuple[list[str], list[str]]) -> None:
        types, actions = options
        for select, values in (
            (self.query_one("#task-filter", Select), types),
            (self.query_one("#action-filter", Select), sorted(set(STEP_ACTIONS) | set(actions))),
        ):
            current = select.value
            known = list(values)
            if getattr(select, "_known", None) == known:
                continue
            select._known = known  # type: ignore[attr-defined]
            with select.prevent(Select.Changed):
                select.set_options([(v, v) for v in known])
                if current in known:
                    select.value = current

    # -- events ---------------------------------------------------------------------------
    def on_select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        if event.select.id == "task-filter":
            self.filter = StepFilter(task_type=value, action=self.filter.action)
        elif event.select.id == "action-filter":
            self.filter = StepFilter(task_type=self.filter.task_type, action=value)
        else:
            return
        self._load(0)

    def on_paged_table_page_request(self, event: PagedTable.PageRequest) -> None:
        offset = {
            "next": self.page.offset + PAGE,
            "prev": max(0, self.page.offset - PAGE),
            "first": 0,
            "last": max(0, (self.page.total - 1) // PAGE * PAGE),
        }[event.where]
        self._load(offset, cursor="top" if event.where in ("next", "first") else "bottom")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "steps-table" or event.row_key.value is None:
            return
        step_id = int(event.row_key.value)
        self.fetch(
            lambda: self.data.step_detail(step_id),
            self.query_one(StepDetail).show,
            group="step-detail",
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "steps-table" and event.row_key.value is not None:
            self.app.push_screen(StepScreen(int(event.row_key.value)))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        if event.data_table.id != "steps-table":
            return
        key = str(event.column_key.value)
        if key in STEP_SORTS:
            self.sort_by(key, not self.descending if key == self.sort else None)

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort the table by a column (SQL ORDER BY); default direction: numbers high first."""
        if key not in STEP_SORTS:
            raise ValueError(f"cannot sort steps by {key!r}")
        self.sort = key
        self.descending = (
            key not in ("task_type", "action", "stop_reason") if descending is None else descending
        )
        self._label_sort()
        self._load(0)

    # -- actions --------------------------------------------------------------------------
    def action_cycle_sort(self) -> None:
        i = SORT_CYCLE.index(self.sort) if self.sort in SORT_CYCLE else -1
        self.sort = SORT_CYCLE[(i + 1) % len(SORT_CYCLE)]
        self._label_sort()
        self._load(0)

    def action_reverse_sort(self) -> None:
        self.descending = not self.descending
        self._label_sort()
        self._load(0)

    def action_open_step(self) -> None:
        key = self.query_one(PagedTable).current_key()
        if key is not None:
            self.app.push_screen(StepScreen(int(key)))

    def _label_sort(self) -> None:
        table = self.query_one(PagedTable)
        for label, key, _ in COLUMNS:
            if key == self.sort:
                table.set_header(
                    key, Text(f"{label} {'▼' if self.descending else '▲'}", style="bold")
                )
            else:
                table.set_header(key, label)


class StepScreen(BaseScreen):
    """One step report in full: decision, edits, apply report, evidence, diff."""

    def __init__(self, step_id: int) -> None:
        super().__init__(id=f"step-{step_id}")
        self.step_id = step_id

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("steps")
        yield StepDetail(full=True, id="step-full")
        yield KeyBar()

    def reload(self, live: bool = False) -> None:
        self.fetch(
            lambda: self.data.step_detail(self.step_id),
            self.query_one(StepDetail).show,
            group="step",
        )
