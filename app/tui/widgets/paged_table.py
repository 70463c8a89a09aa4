"""A DataTable that shows one page of a long list and asks its screen for neighbouring pages.

Moving past the last row (down / PageDown), or `]`, asks for the next page; past the first
row (up / PageUp), or `[`, the previous one; ctrl+End / ctrl+Home jump to the last / first
page. Only the rows of one page are ever in the widget, so a million-row list costs no more
than a two-hundred-row one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from app.tui import format as fmt


class PagedTable(DataTable[Any]):
    BINDINGS = [
        Binding("right_square_bracket", "next_page", "Next page"),
        Binding("left_square_bracket", "prev_page", "Prev page"),
    ]

    class PageRequest(Message):
        """The user wants another page: `where` is next | prev | first | last."""

        def __init__(self, table: PagedTable, where: str) -> None:
            super().__init__()
            self.table = table
            self.where = where

        @property
        def control(self) -> PagedTable:
            return self.table

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", True)
        super().__init__(*args, **kwargs)
        self.has_prev = False
        self.has_next = False

    # -- filling --------------------------------------------------------------------------
    def set_columns(self, columns: Sequence[tuple[str, str, int | None]]) -> None:
        for label, key, width in columns:
            self.add_column(label, key=key, width=width)

    def show_rows(
        self,
        rows: Iterable[tuple[str, Sequence[Any]]],
        *,
        has_prev: bool,
        has_next: bool,
        cursor: str | int = "top",
        key: str | None = None,
    ) -> None:
        """Replace the page. `cursor`: top | bottom | a row index; `key` wins when present."""
        self.has_prev, self.has_next = has_prev, has_next
        self.clear()
        for row_key, cells in rows:
            self.add_row(*fmt.cells(list(cells)), key=row_key)
        if not self.row_count:
            return
        target = 0
        if key is not None and key in self.rows:
            target = self.get_row_index(key)
        elif cursor == "bottom":
            target = self.row_count - 1
        elif isinstance(cursor, int):
            target = max(0, min(cursor, self.row_count - 1))
        self.move_cursor(row=target, animate=False)

    def set_header(self, key: str, label: str | Text) -> None:
        column = self.columns.get(key)  # type: ignore[call-overload]
        if column is not None:
            column.label = Text(label) if isinstance(label, str) else label
            self.refresh()

    def current_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:  # noqa: BLE001 - cursor outside a just-cleared table
            return None
        return row_key.value

    # -- paging ---------------------------------------------------------------------------
    def _request(self, where: str) -> None:
        self.post_message(self.PageRequest(self, where))

    def action_cursor_down(self) -> None:
        if self.has_next and self.cursor_row >= self.row_count - 1:
            self._request("next")
        else:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.has_prev and self.cursor_row <= 0:
            self._request("prev")
        else:
            super().action_cursor_up()

    def action_page_down(self) -> None:
        if self.has_next and self.cursor_row >= self.row_count - 1:
            self._request("next")
        else:
            super().action_page_down()

    def action_page_up(self) -> None:
        if self.has_prev and self.cursor_row <= 0:
            self._request("prev")
        else:
            super().action_page_up()

    def action_scroll_bottom(self) -> None:
        if self.has_next:
            self._request("last")
        else:
            super().action_scroll_bottom()

    def action_scroll_top(self) -> None:
        if self.has_prev:
            self._request("first")
        else:
            super().action_scroll_top()

    def action_next_page(self) -> None:
        if self.has_next:
            self._request("next")

    def action_prev_page(self) -> None:
        if self.has_prev:
            self._request("prev")
