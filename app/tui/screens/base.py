"""Shared behaviour of the TUI screens: data access in worker threads, live refresh, keys."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Input, Select
from textual.worker import Worker, get_current_worker

from app.sanitize import markup_safe
from app.tui.data import QueryCancelled, WorkspaceData


class ScreenHost(Protocol):
    """What the screens need from the TUI's app (app/tui/app.py implements it).

    Declared here, below the app, so screens depend on this interface and never on the module
    that composes them.
    """

    data: WorkspaceData | None

    def generations_of(self, kinds: frozenset[str]) -> dict[str, int]:
        """How often each change kind has been seen, to tell whether a screen is stale."""
        ...

    def first_paint_done(self) -> None:
        """A screen showed its first data (the app then warms up the others)."""
        ...

    def open_workspace(self, path: Path) -> None: ...


class BaseScreen(Screen[None]):
    """A screen that loads its data off the UI thread and reloads when the log changes.

    Subclasses set `WATCH` (the change kinds they show: steps, predictions, runs, epochs,
    calls, checkpoint, manifest, versions, status) and implement `reload(live)`.
    """

    WATCH: frozenset[str] = frozenset()
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter"),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._seen: dict[str, int] | None = None

    @property
    def tui(self) -> ScreenHost:
        return cast(ScreenHost, self.app)

    @property
    def data(self) -> WorkspaceData:
        data = self.tui.data
        assert data is not None, "no workspace open"
        return data

    # -- life cycle -----------------------------------------------------------------------
    def on_mount(self) -> None:
        self._seen = self.tui.generations_of(self.WATCH)
        self.reload(live=False)

    def on_screen_resume(self) -> None:
        if self._seen is None:
            return  # not mounted yet: on_mount loads
        now = self.tui.generations_of(self.WATCH)
        if now != self._seen:
            self._seen = now
            self.reload(live=True)

    def data_changed(self, kinds: set[str]) -> None:
        """Called by the app (on the UI thread) for the active screen when the log changed."""
        if self._seen is None or not (kinds & self.WATCH):
            return
        self._seen = self.tui.generations_of(self.WATCH)
        self.reload(live=True)

    def reload(self, live: bool = False) -> None:
        """(Re)load everything the screen shows; `live` keeps the user's place."""

    # -- workers --------------------------------------------------------------------------
    def fetch(
        self,
        query: Callable[..., Any],
        apply: Callable[[Any], None],
        *,
        group: str,
        cancellable: bool = False,
    ) -> Worker[Any]:
        """Run `query()` in a thread; `apply(result)` on the UI thread unless superseded.

        `cancellable` passes `cancelled=` (a callable) to the query so a long SQL statement
        is interrupted when a newer request in the same group replaces it.
        """

        def work() -> None:
            worker = get_current_worker()
            try:
                result = query(cancelled=lambda: worker.is_cancelled) if cancellable else query()
            except QueryCancelled:
                return
            except Exception as e:  # noqa: BLE001 - shown to the user, never a crash
                if not worker.is_cancelled:
                    self._call_ui(self._failed, e)
                return
            if not worker.is_cancelled:
                self._call_ui(self._deliver, worker, apply, result)

        return self.run_worker(
            work, thread=True, exclusive=True, group=group, exit_on_error=False, name=group
        )

    def _call_ui(self, fn: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.app.call_from_thread(fn, *args)

    def _deliver(self, worker: Worker[Any], apply: Callable[[Any], None], result: Any) -> None:
        if worker.is_cancelled or not self.is_attached:
            return
        apply(result)
        self.tui.first_paint_done()

    def _failed(self, error: Exception) -> None:
        self.notify(
            markup_safe(f"{type(error).__name__}: {error}"),
            title="query failed",
            severity="error",
            timeout=8,
        )

    # -- keys -----------------------------------------------------------------------------
    def filter_widgets(self) -> list[Widget]:
        return [w for w in self.query(".filter") if w.display]

    def main_table(self) -> DataTable[Any] | None:
        tables = [t for t in self.query(DataTable) if t.has_class("main")]
        return tables[0] if tables else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing here (no filters; nothing to go back to)."""
        if action == "focus_filter":
            return bool(self.filter_widgets())
        if action == "back":
            return len(self.app.screen_stack) > 1 or isinstance(self.focused, Input | Select)
        return True

    def action_focus_filter(self) -> None:
        widgets = self.filter_widgets()
        if widgets:
            widgets[0].focus()

    def action_back(self) -> None:
        focused = self.focused
        if isinstance(focused, Input | Select) or (
            focused is not None and focused.has_class("filter")
        ):
            table = self.main_table()
            if table is not None:
                table.focus()
                return
        if len(self.app.screen_stack) > 1 and self.app.screen is self:
            self.app.pop_screen()
