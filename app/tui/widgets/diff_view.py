"""A scrollable, coloured unified diff (green additions, red removals, cyan hunks)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.tui.format import diff_text


class DiffView(VerticalScroll):
    def __init__(self, *, id: str | None = None, classes: str = "") -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.diff = ""
        self._body = Static("", markup=False)

    def compose(self) -> ComposeResult:
        yield self._body

    def show(self, diff: str, *, empty: str = "(no diff)") -> None:
        self.diff = diff
        self._body.update(diff_text(diff, empty=empty))
        self.scroll_home(animate=False)
