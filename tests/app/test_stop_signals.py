"""SIGTERM and Ctrl-C stop a real `train` cleanly: run marked stopped with its reason, lock
released, and the `--resume` hint only when there is a checkpoint to resume from."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import build_parser, main, stopped_message
from app.harness.writer_lock import holder
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]
SLOW = ["--set", "sim_latency_ms=10"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def start(ws: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "main.py", "train", "-w", str(ws), *ARGS, *SLOW],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def train_status(ws: Path) -> tuple:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        return conn.execute(
            "SELECT status, summary_json FROM _runs WHERE run_id = 'train1'"
        ).fetchone()
    finally:
        conn.close()


@pytest.mark.parametrize("sig, reason", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_stop_signal_mid_run_marks_the_run_stopped_and_resume_finishes(ws, tmp_path, sig, reason):
    proc = start(ws)
    deadline = time.monotonic() + 60
    while not list((ws / "reports" / "steps").glob("*.json")):  # inside epoch 1
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"stopped by {reason}") and "--resume" in last, err
    status, summary = train_status(ws)
    assert (status, json.loads(summary)) == (
        "stopped",
        {"stop_reason": reason, "reason": f"stopped by {reason}"},
    )
    assert not (ws / "train.lock").exists(), "train.lock left behind"
    assert holder(ws) is None, "writer lock not released"
    assert main(["train", "-w", str(ws), "--resume", *ARGS]) == 0
    ref = tmp_path / "ref"
    assert main(["init", str(ref), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["train", "-w", str(ref), *ARGS]) == 0
    assert diff_states(workspace_state(ref), workspace_state(ws)) == []


def test_ctrl_c_at_the_start_hints_resume_only_when_a_checkpoint_exists(ws):
    for delay in (0.0, 0.05, 0.15):
        proc = start(ws)
        deadline = time.monotonic() + 60
        while holder(ws) is None:  # the writer is inside `train`
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        has_checkpoint = (ws / "checkpoint.json").is_file()
        assert ("--resume" in err) == has_checkpoint, err
        if not has_checkpoint:
            assert "nothing to resume" in err
            return
        (ws / "checkpoint.json").unlink()  # again, earlier relative to the first checkpoint
    pytest.skip("the first checkpoint was always written before the signal landed")


def test_the_message_without_a_checkpoint_offers_no_resume(ws):
    args = build_parser().parse_args(["train", "-w", str(ws)])
    message = stopped_message(args, "Ctrl-C")
    assert "--resume" not in message and "nothing to resume" in message
