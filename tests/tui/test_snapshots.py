"""SVG snapshots of the main screens (pytest-textual-snapshot).

Deterministic: fixed terminal size, fixed timestamps in the fixture workspace, no clock in the
header, no polling, no focused text input (no cursor blink). Update after an intended change
with `pytest tests/tui/test_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from app.tui.app import make_app
from app.tui.screens.trajectory import TrajectoryScreen
from app.tui.widgets.paged_table import PagedTable
from tests.tui.helpers import SIZE, settle


async def settle_overview(pilot) -> None:
    """The cost table fills from its own worker; under CPU load its rows (and the column widths
    they imply) can land after the rest of the screen, so wait for them explicitly."""
    from textual.widgets import DataTable

    await settle(pilot)
    table = pilot.app.screen.query_one("#calls-table", DataTable)
    for _ in range(100):
        if table.row_count:
            break
        await pilot.pause(0.05)
    assert table.row_count, "the cost table never filled"
    await settle(pilot)
    await pilot.pause(0.1)


def test_overview_snapshot(snap_compare, demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle_overview)


def test_steps_snapshot_with_accepted_step_selected(snap_compare, demo_ws):
    async def select_accepted(pilot):
        await settle(pilot)
        table = pilot.app.screen.query_one(PagedTable)
        actions = [str(table.get_row_at(i)[3]) for i in range(table.row_count)]
        table.move_cursor(row=actions.index("accept"))
        await settle(pilot)

    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="steps")
    assert snap_compare(app, terminal_size=SIZE, run_before=select_accepted)


def test_trajectory_snapshot(snap_compare, demo_ws):
    async def open_trajectory(pilot):
        await settle(pilot)
        pilot.app.push_screen(TrajectoryScreen(3, neighbours=list(range(1, 25))))
        await settle(pilot)

    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="runs")
    assert snap_compare(app, terminal_size=SIZE, run_before=open_trajectory)
