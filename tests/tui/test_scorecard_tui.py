"""The scorecard panel of the branches view (app/tui/scorecard_data.py): hidden until the fork
has a scorecard, then its figures with their bases; a hostile report is shown printable."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from app import api
from app.cli import main
from app.tui.app import make_app
from app.tui.scorecard_data import scorecard_lines
from app.tui.screens.branches import BranchesScreen
from tests.tui.helpers import SIZE, settle


async def test_branches_show_the_scorecard_once_there_is_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    await api.fork_async(ws, branches=2, limit=6, rollout_id="f1")
    await api.rank_async(ws, "f1")
    app = make_app(ws, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(BranchesScreen("f1"))
        await settle(pilot)
        panel = app.screen.query_one("#fork-scorecard", Static)
        assert not panel.display
    result = await api.scorecard_async(ws, "f1", reruns=2, memory_k=0)
    app = make_app(ws, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(BranchesScreen("f1"))
        await settle(pilot)
        panel = app.screen.query_one("#fork-scorecard", Static)
        assert panel.display
        shown = str(panel.render())
        eta = result.figure("yield_eta")
        assert f"yield_eta: {eta.value:.4f}" in shown and eta.basis[:40] in shown
        assert "heldout_gain_pp: n/a  not measured" in shown


def test_a_hostile_scorecard_file_is_shown_printable(tmp_path: Path) -> None:
    (tmp_path / "analyses").mkdir()
    report = {
        "figures": [{"name": "x\x1b[2J", "value": "nan", "unit": "share", "basis": "b\x07"}],
        "warnings": ["w\x1b]0;title\x07"],
    }
    (tmp_path / "analyses" / "scorecard_f1.json").write_text(json.dumps(report))
    lines = scorecard_lines(tmp_path, "f1")
    assert lines is not None and not any("\x1b" in ln or "\x07" in ln for ln in lines)
    assert "n/a" in lines[1]
    assert scorecard_lines(tmp_path, "../f1") is None
    assert scorecard_lines(tmp_path, "none") is None
    (tmp_path / "analyses" / "scorecard_bad.json").write_text("[1, 2]")
    assert scorecard_lines(tmp_path, "bad") is None
