"""Ingested traces in the TUI: their run in Runs, each trace a trajectory the trajectory screen
shows (model turns, tool calls, tool results with their status)."""

from __future__ import annotations

from pathlib import Path

from app import api
from app.cli import main
from app.harness.workspace.harness_log import HarnessLog
from app.tui.app import make_app
from app.tui.screens.trajectory import TrajectoryScreen
from tests.tui.helpers import SIZE, screen_text, settle

DATA = Path(__file__).parents[1] / "app" / "data" / "traces"


async def test_an_ingested_trace_opens_as_a_trajectory(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    result = api.ingest(ws, DATA / "openinference_otlp.jsonl")
    with HarnessLog(ws / "harness.db", readonly=True) as log:
        (row,) = log.query("SELECT id FROM predictions WHERE run_id = ?", (result.run_id,))
    app = make_app(ws, poll_interval=0, warm_up=False, start="runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert result.run_id in screen_text(app)
        app.push_screen(TrajectoryScreen(row["id"]))
        await settle(pilot)
        assert isinstance(app.screen, TrajectoryScreen)
        text = screen_text(app)
        assert "→ tool call get_weather" in text
        assert "upstream timeout" in text and "[error]" in text
        assert "I could not get the weather." in text
