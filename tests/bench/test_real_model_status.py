"""The real-model benches print a status line a minute while `train` or `eval` runs (they pass
--no-progress, and `train` draws bars on a terminal only: a 22-minute training printed 6 lines
in a log). The line is read from the workspace, read-only, while the run writes it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_line_says_replies_run_and_steps(rm, tmp_path: Path) -> None:
    lines: list[str] = []
    with rm.watching(tmp_path, "train", every_s=0.1, say=lines.append):
        time.sleep(0.25)  # before init: nothing to read yet
        with sqlite3.connect(tmp_path / "response_cache.db") as cache:
            cache.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, response_json TEXT)")
            cache.executemany("INSERT INTO responses VALUES (?, '')", [(str(i),) for i in range(5)])
        with sqlite3.connect(tmp_path / "harness.db") as db:
            db.execute("CREATE TABLE _runs (run_id TEXT, seq INTEGER)")
            db.execute("CREATE TABLE step_reports (run_id TEXT)")
            db.executemany("INSERT INTO _runs VALUES (?, ?)", [("train1", 1), ("baseline", 2)])
        time.sleep(0.25)
        with sqlite3.connect(tmp_path / "response_cache.db") as cache:
            cache.execute("INSERT INTO responses VALUES ('5', '')")
        with sqlite3.connect(tmp_path / "harness.db") as db:
            db.execute("INSERT INTO _runs VALUES ('train1-e1-s0-rollout', 3)")
            db.execute("INSERT INTO step_reports VALUES ('train1-e1-s0')")
        time.sleep(0.3)
    assert lines and all(line.startswith("  train running 0:0") for line in lines), lines
    assert "0 model replies, log not readable yet (no harness.db)" in lines[0]
    assert any(
        "5 model replies" in line and "at baseline, 0 step report(s)" in line for line in lines
    )
    assert (
        "6 model replies (+" in lines[-1]
        and "at train1-e1-s0-rollout, 1 step report(s)" in lines[-1]
    )
    count = len(lines)
    time.sleep(0.3)
    assert len(lines) == count  # the block is over: no more lines


def test_it_reads_a_workspace_a_training_is_writing(rm, tmp_path: Path) -> None:
    """A real `train` (sim/oracle, a second or two) writes while the status is read."""
    ws = tmp_path / "ws"
    main = [sys.executable, str(ROOT / "main.py")]
    subprocess.run([*main, "init", str(ws), "--seed", "real-starter", "--questions", "real-easy"],
                   check=True, capture_output=True)  # fmt: skip
    sims = [f"--set={role}_model=sim/oracle" for role in ("agent", "judge", "evolver")]
    lines: list[str] = []
    with rm.watching(ws, "train", every_s=0.05, say=lines.append):
        done = subprocess.run([*main, "train", "-w", str(ws), *sims, "--no-progress"],
                              capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert lines and "not readable" not in lines[-1], lines
    status, replies = rm.run_status(ws)
    assert replies and f"{replies} model replies" in status and "at train1-final-test" in status
