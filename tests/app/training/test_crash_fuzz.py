"""Crash fuzzing: SIGKILL `train` at seeded random instants, resume, compare with a reference."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
# 14 kills fit the suite's 10 minutes; SKILL_TRAINER_FUZZ_KILLS=200 fuzzes longer
KILLS = int(os.environ.get("SKILL_TRAINER_FUZZ_KILLS", "14"))
ARGS = [
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


def train(ws: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "main.py", "train", "-w", str(ws), *ARGS, *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def fuzz_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    seed_ws = base / "seed"
    assert main(["init", str(seed_ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    ref = base / "ref"
    shutil.copytree(seed_ws, ref)
    started = time.perf_counter()
    proc = train(ref)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return seed_ws, workspace_state(ref), time.perf_counter() - started


@pytest.mark.slow
def test_sigkill_at_random_instants_then_resume_matches_reference(fuzz_base, tmp_path):
    seed_ws, reference, duration = fuzz_base
    rng = random.Random(20261129)
    outcomes = []
    for i in range(KILLS):
        ws = tmp_path / f"ws{i}"
        shutil.copytree(seed_ws, ws)
        # within the first half of the reference's time: the reference is timed once, under
        # whatever else the suite's four workers run then, and a run on a quieter moment can
        # take half as long (at 0.95 of it, 5 of 14 runs ended before their kill)
        delay = rng.uniform(0.3, duration * 0.5)
        proc = train(ws)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        killed = proc.returncode == -9
        resumed = train(ws, "--resume") if (ws / "checkpoint.json").exists() else train(ws)
        _, err = resumed.communicate(timeout=600)
        assert resumed.returncode == 0, f"kill {i} at {delay:.2f}s: {err}"
        problems = diff_states(reference, workspace_state(ws))
        assert problems == [], f"kill {i} at {delay:.2f}s: {problems[:5]}"
        assert_clean(ws)
        outcomes.append(killed)
    assert sum(outcomes) >= KILLS * 0.6, "most runs should really have been killed mid-way"


def assert_clean(ws: Path) -> None:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        dupes = conn.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM predictions GROUP BY run_id, "
            "question_id HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        assert dupes == 0
    finally:
        conn.close()
    staging = ws / ".staging"
    assert not staging.exists() or not any(staging.iterdir())
    leftovers = [p for p in ws.rglob("*.tmp")] + [p for p in ws.glob(".*.init-*")]
    assert leftovers == []
