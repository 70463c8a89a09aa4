"""Concurrent readers soak: `report` and the TUI read while `train` writes
(docs/architecture.md#the-harness-log).

`train` runs as a real process (small config, 2 epochs). While it runs this test polls, all at
once: `python main.py report WS --json` as a subprocess about every second, the TUI's data
layer (`app.tui.data.WorkspaceData`) in a worker thread about every 0.2 s, and the Textual app
itself, headless (`App.run_test()`), switching screens with keys 1-4 and opening a step.

Duration: at least one whole training run; then further rounds (each on a fresh copy of the
initialised workspace) until `SKILL_TRAINER_SOAK_SECONDS` (default 12, which the suite's time
budget affords; set 600 for a long soak) have passed; a round still running at that deadline is
stopped, and readers keep polling it. When the readers have not yet seen training move (a busy
machine slows a reader's pass to a round's length), up to EXTRA_ROUNDS whole rounds follow.
Every failure counts: a non-zero or unparsable `report`, any exception in a data-layer read,
a TUI "query failed" notice, any "database is locked" / OperationalError anywhere (reader or
writer); and the readers must see progress (the step-report count grows).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

import pytest

from app.cli import main
from app.tui.data import PredictionFilter, QueryCancelled, StepFilter, WorkspaceData

ROOT = Path(__file__).resolve().parents[2]
SOAK_SECONDS = float(os.environ.get("SKILL_TRAINER_SOAK_SECONDS", "12"))
ROUND_TIMEOUT_S = 300.0
TRAIN = [
    "--set",
    "epochs=2",
    "--set",
    "early_stop_patience=3",
    "--set",
    'task_types=["ledger", "units"]',
    "--set",
    "concurrency=8",
    "--no-progress",
]
MIN_REPORTS, MIN_READS, MIN_PRESSES = 3, 10, 5
LOCKED = ("database is locked", "OperationalError", "Traceback")


class Soak:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.reports = 0
        self.reads = 0
        self.step_counts: list[int] = []
        self.report_steps: list[int] = []
        self.tui_presses = 0
        self.rounds: list[dict] = []

    def fail(self, what: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(what)


def _record_data_errors(monkeypatch: pytest.MonkeyPatch, soak: Soak) -> None:
    """Every public WorkspaceData read records its exceptions (TUI and poller alike)."""
    for name in (
        "fingerprint",
        "overview",
        "steps_page",
        "step_detail",
        "step_filter_options",
        "versions",
        "version_file",
        "version_diff",
        "run_kinds",
        "runs_page",
        "run",
        "predictions_page",
        "predictions_count",
        "prediction_task_types",
        "prediction",
        "question",
        "call_totals",
        "manifest",
        "checkpoint",
        "run_status",
    ):
        real = getattr(WorkspaceData, name)

        @functools.wraps(real)
        def wrapper(self, *args, _real=real, _name=name, **kwargs):
            try:
                return _real(self, *args, **kwargs)
            except QueryCancelled:
                raise
            except Exception as e:
                soak.fail(f"data.{_name}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
                raise

        monkeypatch.setattr(WorkspaceData, name, wrapper)


def _read_everything(ws: Path, soak: Soak) -> None:
    """One pass over what the TUI shows, on fresh read-only connections."""
    data = WorkspaceData(ws)
    try:
        data.fingerprint()
        data.overview()
        page = data.steps_page(StepFilter(), limit=50)
        soak.step_counts.append(page.total)
        if page.rows:
            data.step_detail(page.rows[0]["id"])
        data.step_filter_options()
        versions = data.versions("skills")
        if len(versions) > 1:
            first, last = versions[0].version, versions[-1].version
            data.version_diff("skills", first, last, "ledger.md")
        runs = data.runs_page(limit=20)
        for run in runs.rows[:2]:
            preds = data.predictions_page(run["run_id"], PredictionFilter(), limit=20)
            data.predictions_count(run["run_id"], PredictionFilter(correct=False))
            if preds.rows:
                data.prediction(preds.rows[0]["id"])
        data.call_totals()
        soak.reads += 1
    except Exception:  # already recorded by the wrapper
        pass


async def _data_poller(current: dict, stop: asyncio.Event, soak: Soak) -> None:
    while not stop.is_set():
        await asyncio.to_thread(_read_everything, current["ws"], soak)
        await asyncio.sleep(0.2)


async def _report_poller(current: dict, stop: asyncio.Event, soak: Soak) -> None:
    while not stop.is_set():
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "main.py",
            "report",
            str(current["ws"]),
            "--json",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        text = err.decode("utf-8", "replace")
        if proc.returncode != 0 or any(s in text for s in LOCKED):
            soak.fail(f"report rc={proc.returncode}: {text[-2000:]}")
        else:
            try:
                summary = json.loads(out)
                progress = summary.get("progress") or {}
                soak.report_steps.append(int(progress.get("global_step") or 0))
                soak.reports += 1
            except ValueError as e:
                soak.fail(f"report printed invalid JSON: {e}")
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


async def _tui_driver(
    current: dict, stop: asyncio.Event, soak: Soak, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.tui.app import make_app
    from app.tui.screens.base import BaseScreen

    real_failed = BaseScreen._failed

    def failed(self, error: Exception) -> None:
        soak.fail(f"tui query failed: {type(error).__name__}: {error}")
        real_failed(self, error)

    monkeypatch.setattr(BaseScreen, "_failed", failed)
    keys = ["2", "enter", "escape", "1", "3", "down", "4", "enter", "escape", "1"]
    while not stop.is_set():
        ws = current["ws"]
        app = make_app(ws, poll_interval=0.5, warm_up=False)
        async with app.run_test(size=(140, 45)) as pilot:
            i = 0
            while not stop.is_set() and current["ws"] == ws:
                await pilot.press(keys[i % len(keys)])
                soak.tui_presses += 1
                i += 1
                await pilot.pause(0.3)
        if app.return_code not in (None, 0):
            soak.fail(f"tui exited with {app.return_code}")


EXTRA_ROUNDS = 4


def _saw_progress(soak: Soak) -> bool:
    """The step-report count took three values under the data reader: it saw training move."""
    return len(set(soak.step_counts)) >= 3


async def _train_rounds(seed_ws: Path, base: Path, current: dict, soak: Soak) -> None:
    start = time.monotonic()
    deadline = start + SOAK_SECONDS
    n = 0
    # On a loaded machine a reader's pass can take as long as a round's steps, so it may see
    # only a round's start and end: then whole rounds go on (at most EXTRA_ROUNDS) until the
    # readers have seen training move
    while n == 0 or time.monotonic() < deadline or (not _saw_progress(soak) and n <= EXTRA_ROUNDS):
        ws = base / f"round{n}" / "ws"
        shutil.copytree(seed_ws, ws)
        current["ws"] = ws
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "main.py",
            "train",
            "-w",
            str(ws),
            *TRAIN,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        past = time.monotonic() >= deadline
        limit = ROUND_TIMEOUT_S if n == 0 or past else max(0.5, deadline - time.monotonic())
        stopped = False
        try:
            _, err = await asyncio.wait_for(proc.communicate(), timeout=limit)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):  # it may have just finished
                proc.terminate()
            _, err = await proc.communicate()
            stopped = proc.returncode != 0
        text = err.decode("utf-8", "replace")
        soak.rounds.append(
            {"ws": ws, "rc": proc.returncode, "stopped": stopped, "seconds": time.monotonic() - t0}
        )
        if any(s in text for s in LOCKED):
            soak.fail(f"train round {n}: {text[-2000:]}")
        if not stopped and proc.returncode != 0:
            soak.fail(f"train round {n} rc={proc.returncode}: {text[-2000:]}")
        await asyncio.sleep(1.0)  # readers see the finished state too
        n += 1


@pytest.mark.slow
async def test_readers_never_fail_while_train_writes(tmp_path, monkeypatch):
    seed_ws = tmp_path / "seed"
    assert main(["init", str(seed_ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    soak = Soak()
    _record_data_errors(monkeypatch, soak)
    current = {"ws": seed_ws}
    stop = asyncio.Event()
    trainer = asyncio.create_task(_train_rounds(seed_ws, tmp_path, current, soak))
    while current["ws"] == seed_ws:  # readers start once round 0 exists
        await asyncio.sleep(0.05)
    readers = [
        asyncio.create_task(_data_poller(current, stop, soak)),
        asyncio.create_task(_report_poller(current, stop, soak)),
        asyncio.create_task(_tui_driver(current, stop, soak, monkeypatch)),
    ]
    try:
        await asyncio.wait_for(trainer, timeout=SOAK_SECONDS + ROUND_TIMEOUT_S)
        # a loaded machine may starve a reader: let each reach its minimum on the last state
        top_up = time.monotonic() + 30
        while time.monotonic() < top_up and not (
            soak.reports >= MIN_REPORTS
            and soak.reads >= MIN_READS
            and soak.tui_presses >= MIN_PRESSES
        ):
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        results = await asyncio.gather(*readers, return_exceptions=True)
    print(
        f"soak: {len(soak.rounds)} round(s) "
        f"{[(r['rc'], round(r['seconds'], 1)) for r in soak.rounds]}, {soak.reports} reports, "
        f"{soak.reads} data passes, {soak.tui_presses} TUI keys, steps seen "
        f"{sorted(set(soak.step_counts))}"
    )
    crashed = [r for r in results if isinstance(r, BaseException)]
    assert crashed == [], crashed
    assert soak.failures == [], "\n".join(soak.failures)
    first = soak.rounds[0]
    assert first["rc"] == 0 and not first["stopped"], soak.rounds
    assert (first["ws"] / "analyses" / "final_test_eval.json").is_file()
    # the readers really ran, and saw training move
    assert soak.reports >= MIN_REPORTS, soak.reports
    assert soak.reads >= MIN_READS, soak.reads
    assert soak.tui_presses >= MIN_PRESSES, soak.tui_presses
    assert _saw_progress(soak), "step report count never grew under the reader"
    assert max(soak.report_steps) > min(soak.report_steps), soak.report_steps
