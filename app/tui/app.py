"""The skill-trainer TUI (docs/architecture.md#commands-and-the-tui): `python main.py tui
[WORKSPACE]`.

Four screens as app modes (keys 1-4): Overview, Steps, Versions, Runs (-> predictions ->
trajectory). It only reads: every query runs in a worker thread on its own short-lived
read-only connection, and a poll every `poll_interval` seconds (MAX(id) of the log tables,
file mtimes, the lock's pid) tells the visible screen to reload when `train` wrote something.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.timer import Timer
from textual.worker import get_current_worker

from app.errors import UserError
from app.paths import command_prefix, on_disk
from app.sanitize import visible
from app.tui.data import WorkspaceData, is_workspace
from app.tui.screens.base import BaseScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.overview import OverviewScreen
from app.tui.screens.picker import PickerScreen
from app.tui.screens.runs import RunsScreen
from app.tui.screens.steps import StepsScreen
from app.tui.screens.versions import VersionsScreen

STYLES = files("app.tui") / "styles"
MODES = ("overview", "steps", "versions", "runs")
WARM_UP_DELAY_S = 0.5


class SkillTrainerApp(App[int]):
    TITLE = "skill-trainer"
    CSS_PATH = [on_disk(STYLES / name) for name in ("app.tcss", "screens.tcss", "branches.tcss")]
    MODES = {
        "overview": OverviewScreen,
        "steps": StepsScreen,
        "versions": VersionsScreen,
        "runs": RunsScreen,
    }
    BINDINGS = [
        Binding("1", "show('overview')", "Overview"),
        Binding("2", "show('steps')", "Steps"),
        Binding("3", "show('versions')", "Versions"),
        Binding("4", "show('runs')", "Runs"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+r", "reload", "Reload", show=False),
    ]

    def __init__(
        self,
        workspace: Path | None = None,
        workspaces_dir: Path | None = None,
        *,
        poll_interval: float = 2.0,
        start: str = "overview",
        warm_up: bool = True,
    ) -> None:
        super().__init__()
        if start not in MODES:
            raise ValueError(f"unknown screen {start!r} (known: {', '.join(MODES)})")
        self.start = start
        self.warm_up = warm_up
        self.workspace = Path(workspace) if workspace is not None else None
        self.workspaces_dir = Path(workspaces_dir) if workspaces_dir is not None else None
        self.poll_interval = poll_interval
        self.data: WorkspaceData | None = None
        self.generations: Counter[str] = Counter()
        self._fingerprint: dict[str, Any] | None = None
        self._poll_timer: Timer | None = None
        self._warming = False

    # -- start ----------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._pin_console_size()

    def _pin_console_size(self) -> None:
        """Give rich's console the terminal size we already know. Otherwise every cell
        measurement (DataTable sizes each cell of each new row) asks the OS for the terminal
        size, three syscalls a cell: the biggest cost of showing a page of rows."""
        size = self.size
        self.console.size = (size.width, size.height)

    def on_mount(self) -> None:
        self._pin_console_size()
        if self.workspace is not None:
            self.open_workspace(self.workspace)
        else:
            self.push_screen(PickerScreen(self.workspaces_dir or Path("workspaces")))

    def open_workspace(self, path: Path) -> None:
        self.workspace = Path(path)
        self.data = WorkspaceData(self.workspace)
        self.sub_title = visible(self.workspace.name)
        self.switch_mode(self.start)
        if self.poll_interval > 0 and self._poll_timer is None:
            self._poll_timer = self.set_interval(self.poll_interval, self._poll)
            self._poll()  # baseline fingerprint

    def first_paint_done(self) -> None:
        """A screen showed its first data: now warm up the others (once)."""
        if self.warm_up and not self._warming:
            self._warming = True
            self.set_timer(WARM_UP_DELAY_S, self._warm_next)

    def _warm_next(self) -> None:
        """Build the other screens off-screen, one at a time, once the first is up: on a
        small machine composing a screen costs about a second, so the first press of 1-4
        then only switches. (Uses Textual's mode initialiser; skipped if it is missing.)"""
        init_mode = getattr(self, "_init_mode", None)
        stacks = getattr(self, "_screen_stacks", None)
        if init_mode is None or stacks is None:
            return
        for mode in MODES:
            if mode not in stacks:
                init_mode(mode)
                self.set_timer(WARM_UP_DELAY_S, self._warm_next)
                return

    # -- live refresh ---------------------------------------------------------------------
    def generations_of(self, kinds: frozenset[str]) -> dict[str, int]:
        return {k: self.generations[k] for k in kinds}

    def _poll(self) -> None:
        if self.data is None:
            return
        data = self.data

        def work() -> None:
            fp = data.fingerprint()
            if get_current_worker().is_cancelled:
                return
            with contextlib.suppress(RuntimeError):  # the app is shutting down
                self.call_from_thread(self._compare, fp)

        self.run_worker(work, thread=True, exclusive=True, group="poll", exit_on_error=False)

    def _compare(self, fp: dict[str, Any]) -> None:
        previous, self._fingerprint = self._fingerprint, fp
        if previous is None:
            return
        changed = {k for k in fp.keys() | previous.keys() if fp.get(k) != previous.get(k)}
        if changed:
            self.notify_changed(changed)

    def notify_changed(self, kinds: set[str]) -> None:
        for k in kinds:
            self.generations[k] += 1
        screen = self.screen
        if isinstance(screen, BaseScreen):
            screen.data_changed(kinds)

    # -- actions --------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action in ("show", "reload") and self.data is None)

    def action_show(self, mode: str) -> None:
        if mode in MODES and self.data is not None and self.current_mode != mode:
            self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_reload(self) -> None:
        if isinstance(self.screen, BaseScreen):
            self.screen.reload(live=True)


def make_app(
    workspace: Path | None = None, workspaces_dir: Path | None = None, **kwargs: Any
) -> SkillTrainerApp:
    return SkillTrainerApp(workspace=workspace, workspaces_dir=workspaces_dir, **kwargs)


def resolve_workspace(workspace: Path | None, workspaces_dir: Path) -> Path | None:
    """A path, or a bare name under `workspaces_dir`; a clear error when it is neither."""
    if workspace is None:
        return None
    path = Path(workspace)
    if is_workspace(path):
        return path
    named = Path(workspaces_dir) / str(workspace)
    if not path.is_absolute() and is_workspace(named):
        return named
    raise UserError(
        f"{workspace}: not a workspace (no manifest.json); "
        f"run `{command_prefix()} tui` to pick one from {workspaces_dir}"
    )


def run_tui(workspace: Path | None, workspaces_dir: Path) -> int:
    path = resolve_workspace(workspace, workspaces_dir)
    if path is not None:
        WorkspaceData(path).manifest()  # a corrupt manifest fails here, as one line
    app = make_app(path, workspaces_dir)
    app.run()
    return app.return_code or 0
