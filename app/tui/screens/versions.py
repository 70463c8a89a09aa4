"""Versions: the skills and prompts version chains, and a diff of any two versions."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Header, Select, Static

from app.sanitize import markup_safe
from app.tui import format as fmt
from app.tui.data import VersionInfo
from app.tui.screens.base import BaseScreen
from app.tui.widgets.diff_view import DiffView
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs

ALL_FILES = "__all_changed__"


class VersionsScreen(BaseScreen):
    WATCH = frozenset({"versions", "manifest"})
    BINDINGS = [
        Binding("k", "toggle_kind", "Skills/Prompts"),
        Binding("a", "mark('a')", "Diff from"),
        Binding("b", "mark('b')", "Diff to"),
    ]

    def __init__(self) -> None:
        super().__init__(id="versions")
        self.kind = "skills"
        self.versions: dict[str, list[VersionInfo]] = {"skills": [], "prompts": []}
        self.manifest: dict[str, Any] = {}
        self.side_a: str | None = None
        self.side_b: str | None = None
        self.file: str = ALL_FILES

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("versions")
        with Horizontal(classes="filters"):
            yield Select(
                [("skills", "skills"), ("prompts", "prompts")],
                value="skills",
                allow_blank=False,
                id="kind-select",
                classes="filter",
            )
            yield Static("", markup=False, id="versions-info", classes="info")
        yield DataTable(id="versions-table", classes="main", cursor_type="row", zebra_stripes=True)
        with Horizontal(classes="filters", id="diff-bar"):
            yield Static("diff", classes="label")
            yield Select([], prompt="from", id="diff-a", classes="filter")
            yield Static("→", classes="label")
            yield Select([], prompt="to", id="diff-b", classes="filter")
            yield Select([], prompt="file", id="diff-file", classes="filter")
        yield DiffView(id="version-diff")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#versions-table", DataTable)
        for label, key in (
            ("version", "version"),
            ("", "marks"),
            ("source", "source"),
            ("parent", "parent"),
            ("description", "description"),
            ("at", "at"),
            ("files", "files"),
            ("sha256", "sha"),
        ):
            table.add_column(label, key=key)
        self.query_one(DiffView).border_title = "Diff"
        table.focus()
        super().on_mount()

    # -- data -----------------------------------------------------------------------------
    def reload(self, live: bool = False) -> None:
        def query() -> tuple[dict[str, list[VersionInfo]], dict[str, Any]]:
            return ({k: self.data.versions(k) for k in ("skills", "prompts")}, self.data.manifest())

        self.fetch(query, lambda res: self._show(*res, live=live), group="versions")

    def _show(
        self, versions: dict[str, list[VersionInfo]], manifest: dict[str, Any], *, live: bool
    ) -> None:
        self.versions, self.manifest = versions, manifest
        self._fill_table(keep=live)
        if not live or self.side_a is None:
            self._default_pair()
        self._sync_selects()
        self._diff()

    def _fill_table(self, keep: bool = False) -> None:
        table = self.query_one("#versions-table", DataTable)
        key = None
        if keep and table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate)[0].value
        table.clear()
        current = (self.manifest.get("current") or {}).get(self.kind, "").split("/")[-1]
        best = ((self.manifest.get("best") or {}).get(self.kind) or "").split("/")[-1]
        for v in reversed(self.versions[self.kind]):
            marks = Text()
            if v.version == current:
                marks.append("● current ", style="bold green")
            if v.version == best:
                marks.append("★ best", style="bold yellow")
            table.add_row(
                *fmt.cells(
                    [
                        Text(v.version, style="bold"),
                        marks,
                        v.source,
                        v.parent or "–",
                        fmt.short(v.description, 60),
                        v.at,
                        str(len(v.files)),
                        v.sha256[:10],
                    ]
                ),
                key=v.version,
            )
        n = len(self.versions[self.kind])
        self.query_one("#versions-info", Static).update(
            f"{n} {self.kind} version{'' if n == 1 else 's'} · Enter: diff against parent · "
            "a/b: pick the two sides"
        )
        if key is not None and key in table.rows:
            table.move_cursor(row=table.get_row_index(key))

    def _default_pair(self) -> None:
        names = [v.version for v in self.versions[self.kind]]
        if not names:
            self.side_a = self.side_b = None
            return
        self.side_b = names[-1]
        parent = next((v.parent for v in self.versions[self.kind] if v.version == names[-1]), None)
        self.side_a = parent if parent in names else names[max(0, len(names) - 2)]
        self.file = ALL_FILES

    def _files(self) -> list[str]:
        by_name = {v.version: v for v in self.versions[self.kind]}
        files: set[str] = set()
        for side in (self.side_a, self.side_b):
            if side in by_name:
                files.update(by_name[side].files)
        return sorted(files)

    def _sync_selects(self) -> None:
        names = [v.version for v in reversed(self.versions[self.kind])]
        options = [(n, n) for n in names]
        for sel_id, value in (("#diff-a", self.side_a), ("#diff-b", self.side_b)):
            select = self.query_one(sel_id, Select)
            with select.prevent(Select.Changed):
                select.set_options(options)
                if value in names:
                    select.value = value
        select = self.query_one("#diff-file", Select)
        files = self._files()
        with select.prevent(Select.Changed):
            select.set_options([("all changed files", ALL_FILES), *((f, f) for f in files)])
            select.value = self.file if self.file in files else ALL_FILES

    def _diff(self) -> None:
        view = self.query_one(DiffView)
        a, b, kind, file = self.side_a, self.side_b, self.kind, self.file
        if not a or not b:
            view.border_title = "Diff"
            view.show("", empty="pick two versions")
            return
        files = [file] if file != ALL_FILES else self._files()

        def query() -> str:
            return "".join(self.data.version_diff(kind, a, b, f) for f in files)

        def show(diff: str) -> None:
            view.border_title = markup_safe(
                f"{kind}: {a} → {b}" + ("" if file == ALL_FILES else f" · {file}")
            )
            view.show(diff, empty=f"no differences between {a} and {b}")

        self.fetch(query, show, group="version-diff")

    # -- events ---------------------------------------------------------------------------
    def on_select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        sel = event.select.id
        if sel == "kind-select" and value and value != self.kind:
            self.kind = value
            self._fill_table()
            self._default_pair()
            self._sync_selects()
        elif sel == "diff-a":
            self.side_a = value
        elif sel == "diff-b":
            self.side_b = value
        elif sel == "diff-file":
            self.file = value or ALL_FILES
        else:
            return
        self._diff()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        version = event.row_key.value
        info = next((v for v in self.versions[self.kind] if v.version == version), None)
        if info is None:
            return
        names = [v.version for v in self.versions[self.kind]]
        self.side_b = info.version
        self.side_a = info.parent if info.parent in names else None
        if self.side_a is None:
            self.notify(
                markup_safe(f"{info.version} has no parent version ({info.source})"),
                severity="warning",
            )
            self.side_a = info.version
        self._sync_selects()
        self._diff()

    # -- actions --------------------------------------------------------------------------
    def action_toggle_kind(self) -> None:
        self.query_one("#kind-select", Select).value = (
            "prompts" if self.kind == "skills" else "skills"
        )

    def action_mark(self, side: str) -> None:
        table = self.query_one("#versions-table", DataTable)
        if not table.row_count:
            return
        version = table.coordinate_to_cell_key(table.cursor_coordinate)[0].value
        if side == "a":
            self.side_a = version
        else:
            self.side_b = version
        self._sync_selects()
        self._diff()
