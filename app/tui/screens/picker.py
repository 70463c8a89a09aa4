"""`tui` without a workspace: pick one of the workspaces under `workspaces/`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static
from textual.worker import get_current_worker

from app.paths import command_prefix
from app.sanitize import markup_safe
from app.tui import format as fmt
from app.tui.data import list_workspaces
from app.tui.screens.base import ScreenHost
from app.tui.widgets.key_bar import KeyBar


class PickerScreen(Screen[None]):
    def __init__(self, folder: Path) -> None:
        super().__init__(id="picker")
        self.folder = Path(folder)
        self.found: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            f"workspaces in {self.folder}", markup=False, id="picker-title", classes="title"
        )
        yield DataTable(id="picker-table", classes="main", cursor_type="row", zebra_stripes=True)
        yield Static("", markup=False, id="picker-info", classes="info")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (
            ("workspace", "name"),
            ("status", "status"),
            ("progress", "progress"),
            ("current", "current"),
            ("best val", "best"),
            ("seed", "seed"),
            ("modified", "modified"),
        ):
            table.add_column(label, key=key)
        table.focus()

        def work() -> None:
            found = list_workspaces(self.folder)
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(self._show, found)

        self.run_worker(work, thread=True, exit_on_error=False)

    def _show(self, found: list[dict[str, Any]]) -> None:
        self.found = found
        table = self.query_one(DataTable)
        table.clear()
        for w in found:
            if w.get("error"):
                table.add_row(
                    *fmt.cells(
                        [
                            w["name"],
                            Text("broken", style="red"),
                            "",
                            "",
                            "",
                            "",
                            fmt.short(w["error"], 50),
                        ]
                    ),
                    key=str(w["path"]),
                )
                continue
            modified = (
                datetime.fromtimestamp(w["modified"] / 1e9, UTC).isoformat(timespec="seconds")
                if w["modified"]
                else "–"
            )
            table.add_row(
                *fmt.cells(
                    [
                        Text(w["name"], style="bold"),
                        fmt.status(w["status"]),
                        w["progress"],
                        f"{w['skills']} {w['prompts']}",
                        fmt.acc(w["best_val"]),
                        w["seed"],
                        modified,
                    ]
                ),
                key=str(w["path"]),
            )
        program = command_prefix()
        self.query_one("#picker-info", Static).update(
            f"{len(found)} workspaces · Enter: open · q: quit"
            if found
            else f"no workspaces in {self.folder}: create one with `{program} demo` or "
            f"`{program} init`, or pass a path: `{program} tui PATH`"
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        path = event.row_key.value
        entry = next((w for w in self.found if str(w["path"]) == path), None)
        if entry is None or entry.get("error"):
            self.notify(
                markup_safe(f"cannot open {path}: {entry and entry.get('error')}"), severity="error"
            )
            return
        cast(ScreenHost, self.app).open_workspace(Path(str(path)))
