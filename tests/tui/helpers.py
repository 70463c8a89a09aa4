"""Small helpers for driving the TUI under Pilot."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.worker import WorkerState

SIZE = (140, 45)
BUSY = (WorkerState.PENDING, WorkerState.RUNNING)


async def settle(pilot: Pilot, rounds: int = 10) -> None:
    """Let queued messages run and every data worker (and what its result starts) finish."""
    app = pilot.app
    await pilot.pause()
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.state in BUSY for w in app.workers):
            return


def screen_text(app) -> str:
    """What the terminal shows now, as plain text (one line a row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)
