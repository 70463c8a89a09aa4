"""The TUI driven headless with Pilot: screens, selection, filters, paging, live refresh."""

from __future__ import annotations

import os
import socket

import pytest
from textual.widgets import DataTable, Input, Select, Static

from app.errors import UserError
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.harness_log import HarnessLog
from app.tui import app as tui_app
from app.tui.app import make_app
from app.tui.screens import runs as runs_screen
from app.tui.screens.help import HelpScreen
from app.tui.screens.overview import OverviewScreen
from app.tui.screens.runs import PredictionsScreen, RunsScreen
from app.tui.screens.steps import StepScreen, StepsScreen
from app.tui.screens.trajectory import TrajectoryScreen
from app.tui.screens.versions import VersionsScreen
from app.tui.widgets.diff_view import DiffView
from app.tui.widgets.paged_table import PagedTable
from app.tui.widgets.step_detail import StepDetail
from tests.support.log_rows import insert_rows
from tests.tui.helpers import SIZE, screen_text, settle


def _row_index(table: DataTable, column: str, value: str) -> int:
    for i in range(table.row_count):
        cell = table.get_row_at(i)[list(table.columns).index(column)]
        if str(cell) == value:
            return i
    raise AssertionError(f"no row with {column}={value}")


async def test_overview_shows_versions_progress_status_and_sim_notice(demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        text = screen_text(app)
        assert "current   skills/v4  prompts/v2" in text
        assert "best      skills/v3  prompts/v2" in text
        assert "epoch 2 (in_epoch, step 1 done)  3/6 steps" in text
        assert "status stopped" in text
        assert "SIMULATED MODEL" in text
        assert app.screen.query_one("#sim-banner").display
        assert "1 rolled back" in text and "2 skipped" in text
        calls = app.screen.query_one("#calls-table", DataTable)
        assert calls.row_count == 4  # agent, diagnoser, evolver + total
        assert app.screen.query_one("#epochs-table", DataTable).row_count == 2


async def test_steps_table_detail_filters_and_sort(demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="steps")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, StepsScreen)
        table = screen.query_one(PagedTable)
        assert table.row_count == len(demo_ws.step_files)
        table.move_cursor(row=_row_index(table, "action", "accept"))
        await settle(pilot)
        detail = screen.query_one(StepDetail)
        assert detail.detail["row"]["action"] == "accept"
        text = screen_text(app)
        assert "e-value 24.7" in text
        diff = screen.query_one(".step-diff", DiffView).diff
        for line in demo_ws.added_lines:
            assert "+" + line in diff
            assert "+" + line in text
        evidence = screen.query_one(".evidence-table", DataTable)
        assert evidence.row_count == 14
        assert [str(evidence.get_row_at(i)[0]) for i in range(3)] == ["0", "1", "2"]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
        full = screen_text(app)
        assert "apply report" in full and "edits" in full
        await pilot.press("escape")
        assert app.screen is screen
        # filters (focus with /, Esc back to the table) and sort
        await pilot.press("slash")
        assert app.focused is screen.query_one("#task-filter", Select)
        screen.query_one("#action-filter", Select).value = "accept"
        await settle(pilot)
        assert table.row_count == 1
        screen.query_one("#task-filter", Select).value = "units"
        await settle(pilot)
        assert table.row_count == 0
        assert "no step reports match" in str(screen.query_one("#steps-info", Static).render())
        screen.query_one("#action-filter", Select).clear()
        await settle(pilot)
        assert table.row_count == 1 and str(table.get_row_at(0)[3]) == "reject"
        screen.query_one("#task-filter", Select).clear()
        await pilot.press("escape")  # leave the filter
        assert app.focused is table
        await settle(pilot)
        assert str(table.get_row_at(0)[0]) == "2"  # newest first
        await pilot.press("r")
        await settle(pilot)
        assert str(table.get_row_at(0)[0]) == "1"
        assert table.row_count == len(demo_ws.step_files)


async def test_versions_diff_any_two(demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="versions")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, VersionsScreen)
        table = screen.query_one("#versions-table", DataTable)
        assert table.row_count == 4
        view = screen.query_one(DiffView)
        assert "+- Prefer the shortest route by hop count." in view.diff  # v3 -> v4 default
        table.move_cursor(row=table.get_row_index("v2"))
        await pilot.press("enter")  # v2 against its parent v1
        await settle(pilot)
        assert all("+" + line in view.diff for line in demo_ws.added_lines)
        screen.query_one("#diff-a", Select).value = "v1"
        screen.query_one("#diff-b", Select).value = "v4"
        screen.query_one("#diff-file", Select).value = "units.md"
        await settle(pilot)
        assert "+- Convert to the unit asked for before rounding." in view.diff
        assert "ledger.md" not in view.diff
        await pilot.press("k")
        await settle(pilot)
        assert table.row_count == 2
        assert "+Always end with a line `ANSWER: <value>`." in view.diff


async def test_runs_predictions_trajectory(demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one(PagedTable)
        assert table.row_count == 6
        table.move_cursor(row=table.get_row_index(demo_ws.rollout_run))
        await pilot.press("enter")
        await settle(pilot)
        preds = app.screen
        assert isinstance(preds, PredictionsScreen)
        ptable = preds.query_one(PagedTable)
        assert ptable.row_count == len(demo_ws.predictions)
        assert "rows 1–24 of 24" in screen_text(app)
        preds.query_one("#correct-filter", Select).value = "wrong"
        await settle(pilot)
        wrong = [p for p in demo_ws.predictions if not p["correct"]]
        assert ptable.row_count == len(wrong)
        preds.query_one("#stop-filter", Select).value = "error"
        await settle(pilot)
        assert ptable.row_count == 1
        preds.query_one("#stop-filter", Select).clear()
        preds.query_one("#correct-filter", Select).clear()
        search = preds.query_one("#search", Input)
        search.value = demo_ws.predictions[2]["question_id"]
        await search.action_submit()
        await settle(pilot)
        assert ptable.row_count == 1
        search.value = ""
        await search.action_submit()
        await settle(pilot)
        # a 3-turn trajectory: model+tool, model+tool, final model, verdict
        target = next(
            p
            for p in demo_ws.predictions
            if p["question_id"] == demo_ws.predictions[2]["question_id"]
        )
        ptable.move_cursor(row=ptable.get_row_index(str(_pred_id(app, target))))
        await pilot.press("enter")
        await settle(pilot)
        traj = app.screen
        assert isinstance(traj, TrajectoryScreen)
        steps = traj.prediction["steps"]
        events = traj.query(".event")
        assert len(events) == len(steps) + 1  # + the question as asked
        text = screen_text(app)
        assert "question (as asked)" in text
        assert text.count("model · turn") == 3 and text.count("tool result · turn") == 2
        assert "→ tool call read_context" in text
        assert "checker's verdict" in text
        await pilot.press("escape")
        assert app.screen is preds
        # model text that looks like markup is shown as written, in the table and the turns
        odd = next(p for p in demo_ws.predictions if p["prediction"].startswith("[bold]"))
        assert "[bold]999[/bold]" in screen_text(app)
        app.push_screen(TrajectoryScreen(_pred_id(app, odd)))
        await settle(pilot)
        assert "ANSWER: [bold]999[/bold] [oops" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("escape")
        assert app.screen is runs


def _pred_id(app, pred: dict) -> int:
    with HarnessLog(app.data.db_path, readonly=True) as log:
        return log.query(
            "SELECT id FROM predictions WHERE run_id = ? AND question_id = ?",
            (pred["run_id"], pred["question_id"]),
        )[0]["id"]


async def test_predictions_page_keys(demo_ws, monkeypatch):
    monkeypatch.setattr(runs_screen, "PAGE", 10)
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(PredictionsScreen(demo_ws.rollout_run))
        await settle(pilot)
        table = app.screen.query_one(PagedTable)
        first = str(table.get_row_at(0)[0])
        assert table.row_count == 10 and table.has_next
        await pilot.press("ctrl+end")
        await settle(pilot)
        assert table.row_count == 10 and not table.has_next
        assert table.cursor_row == 9
        last_ids = sorted(p["question_id"] for p in demo_ws.predictions)[-10:]
        assert [str(table.get_row_at(i)[0]) for i in range(10)] == last_ids
        assert "rows 15–24 of 24" in screen_text(app)
        await pilot.press("ctrl+home")
        await settle(pilot)
        assert str(table.get_row_at(0)[0]) == first
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert table.row_count == 10 and table.has_prev


@pytest.mark.slow
async def test_warm_up_then_live_refresh_of_new_rows_and_running_status(fresh_ws):
    from app.tui.app import MODES

    app = make_app(fresh_ws.root, poll_interval=0)  # poll by hand: deterministic
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(100):  # the other screens are built off-screen after the first paint
            if all(m in app._screen_stacks for m in MODES):
                break
            await pilot.pause(0.05)
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        steps_screen = app._screen_stacks["steps"][0]
        n = steps_screen.query_one(PagedTable).row_count
        assert n == len(fresh_ws.step_files)
        app._poll()
        await settle(pilot)
        write_json_atomic(
            fresh_ws.root / "train.lock",
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started_at": "2025-01-02T03:04:05+00:00",
            },
        )
        app._poll()
        await settle(pilot)
        assert "status running" in screen_text(app)
        new_row = {
            "run_id": "train-20250102-0304",
            "epoch": 3,
            "step": 1,
            "task_type": "dates",
            "action": "reject",
            "cand_acc": 0.1,
            "base_acc": 0.2,
            "w": 0,
            "l": 3,
            "e_value": 0.01,
            "n_used": 6,
            "stop_reason": "harm",
            "edit_budget": 1,
            "gate_run_id": None,
            "report_json": None,
        }
        with HarnessLog(fresh_ws.root / "harness.db") as log:
            insert_rows(log, "step_reports", [new_row])
        app._poll()
        await settle(pilot)
        await pilot.press("2")  # the warmed screen is stale: it reloads when shown
        await settle(pilot)
        assert app.screen is steps_screen
        table = app.screen.query_one(PagedTable)
        assert table.row_count == n + 1
        assert str(table.get_row_at(0)[0]) == "3"
        with HarnessLog(fresh_ws.root / "harness.db") as log:  # and while it is shown
            insert_rows(log, "step_reports", [{**new_row, "step": 2}])
        app._poll()
        await settle(pilot)
        assert table.row_count == n + 2


@pytest.mark.slow
async def test_help_mouse_and_quit(demo_ws):
    app = make_app(demo_ws.root, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.click("#nav #versions")  # the mouse works too
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0
    assert not app.is_running


async def test_picker_lists_workspaces_and_opens_one(tmp_path):
    from tests.tui.conftest import make_workspace

    folder = tmp_path / "workspaces"
    make_workspace(folder, "alpha")
    (folder / "junk").mkdir()
    app = make_app(None, folder, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#picker-table", DataTable)
        assert table.row_count == 1
        await pilot.press("2")  # no workspace yet: the screen keys do nothing
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.data.root == folder / "alpha"


def test_run_tui_refuses_a_non_workspace(tmp_path):
    with pytest.raises(UserError, match="not a workspace"):
        tui_app.run_tui(tmp_path / "nowhere", tmp_path)


def test_resolve_workspace_by_name(tmp_path, demo_ws):
    folder = demo_ws.root.parent
    assert tui_app.resolve_workspace(demo_ws.root.name, folder) == folder / demo_ws.root.name
    assert tui_app.resolve_workspace(None, folder) is None


@pytest.mark.slow
async def test_fresh_workspace_without_any_training(tmp_path):
    from app.harness.workspace.store import benchmark_dir, load_seed, seed_dir
    from app.harness.workspace.workspace import init_workspace
    from app.paths import builtin_store

    root = tmp_path / "empty"
    init_workspace(
        root,
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )
    app = make_app(root, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "status not started" in text and "no checkpoint yet" in text
        assert "SIMULATED MODEL" not in text
        for key, expected in (
            ("2", "no step reports yet"),
            ("3", "1 skills version "),
            ("4", "no runs yet"),
        ):
            await pilot.press(key)
            await settle(pilot)
            assert expected in screen_text(app)
