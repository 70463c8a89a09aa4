"""The branches view (app/tui/screens/branches.py): Pilot test and SVG snapshot on a real
sim fork + rank."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from textual.widgets import DataTable, Static

from app.cli import main
from app.harness.data.fork import ForkSpec, run_fork
from app.harness.data.rank import rank_rollout
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from app.tui.app import make_app
from app.tui.screens.branches import BranchesScreen
from tests.tui.helpers import SIZE, screen_text, settle


@pytest.fixture(scope="module")
def fork_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("tui-fork") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    with Session(ws, load_config(None, {"sim_judge_noise": 0.1})) as s:
        plain = [q.question_id for q in s.benchmark.questions if not q.context][:6]
        with_context = next(q.question_id for q in s.benchmark.questions if q.context)
        CONTEXT.add(with_context)
        ids = sorted({*plain, with_context})
        assert len(ids) == 7
        spec = ForkSpec(tuple(ids), (0.2, 0.5, 0.8, 1.1), 4, "all")
        anyio.run(lambda: run_fork(s, spec, "fork-1"))
        anyio.run(lambda: rank_rollout(s, "fork-1"))
    return ws


CONTEXT: set[str] = set()


async def open_branches(pilot) -> None:
    await settle(pilot)
    pilot.app.push_screen(BranchesScreen("fork-1"))
    await settle(pilot)


async def test_runs_enter_on_a_fork_opens_its_branches(fork_ws: Path) -> None:
    app = make_app(fork_ws, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        keys = [row.key.value for row in table.ordered_rows]
        table.move_cursor(row=keys.index("fork-1"))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, BranchesScreen)
        questions = app.screen.query_one("#fork-questions", DataTable)
        branches = app.screen.query_one("#fork-branches", DataTable)
        assert questions.row_count == 7 and branches.row_count == 4
        text = screen_text(app)
        assert "fork fork-1 · done · 7 questions" in text
        ranks = [str(branches.get_row_at(i)[0]) for i in range(4)]
        assert ranks == ["1", "2", "3", "4"]
        detail = str(app.screen.query_one("#branch-detail", Static).render())
        assert "checker: pass" in detail or "checker: fail" in detail
        assert "judge" in detail and "trajectory" in detail and "scalar #0" in detail
        # moving down the branches shows another branch's detail
        branches.focus()
        await pilot.press("down")
        await settle(pilot)
        detail2 = str(app.screen.query_one("#branch-detail", Static).render())
        assert detail2 != detail and "branch b" in detail2
        # the context question's trajectory shows the tool output the model saw
        questions.focus()
        keys = [row.key.value for row in questions.ordered_rows]
        context_q = next(k for k in keys if "u0" in k and k in CONTEXT)
        questions.move_cursor(row=keys.index(context_q))
        await settle(pilot)
        detail3 = str(app.screen.query_one("#branch-detail", Static).render())
        assert "tool read_context" in detail3 and "Summary: " in detail3
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, BranchesScreen)


def test_branches_snapshot(snap_compare, fork_ws: Path) -> None:
    app = make_app(fork_ws, poll_interval=0, warm_up=False, start="runs")
    assert snap_compare(app, terminal_size=SIZE, run_before=open_branches)
