"""One writer per workspace, with real processes: the kernel lock refuses a second writer."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace.workspace import list_versions
from app.harness.workspace.writer_lock import LOCK_FILE, WorkspaceBusy, WriterLock, holder

ROOT = Path(__file__).resolve().parents[3]
# accept_all: every edit lands, so a run writes several versions (on sim-basic the gate
# confirms no one-rule edit)
ARGS = [
    "--set",
    "epochs=1",
    "--set",
    'task_types=["ledger", "units"]',
    "--set",
    'gate.strategy="accept_all"',
    "--no-progress",
]


def cli(*args: str, paused: Path | None = None) -> subprocess.Popen:
    """`main.py args` in a child; with `paused`, a training run holds at its first step's end
    (killpoints.py SKILL_TRAINER_PAUSE_AT) until the test creates the file `paused`: the run
    is live for as long as the test needs, however slow the machine."""
    env = dict(os.environ)
    if paused is not None:
        env["SKILL_TRAINER_PAUSE_AT"] = f"step_end:{paused}"
    return subprocess.Popen(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def held(release: Path) -> Path:
    return Path(f"{release}.paused")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def wait_for(predicate, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def train_rows(ws: Path) -> list[tuple]:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        return conn.execute("SELECT run_id, status FROM _runs WHERE kind = 'train'").fetchall()
    finally:
        conn.close()


def assert_refused(proc: subprocess.Popen, command: str) -> None:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "another process is writing" in lines[0]
    assert "pid " in lines[0] and f"`{command}`" in lines[0] and "started 20" in lines[0]


def test_two_train_processes_started_together_one_is_refused(ws, tmp_path):
    release = tmp_path / "release"
    a = cli("train", "-w", str(ws), *ARGS, paused=release)
    b = cli("train", "-w", str(ws), *ARGS, paused=release)
    # whichever took the lock holds at its first step until released: the other one ends first
    wait_for(lambda: a.poll() is not None or b.poll() is not None)
    loser, winner = (a, b) if a.poll() is not None else (b, a)
    assert_refused(loser, "train")
    wait_for(held(release).exists)  # the winner was live all along: it reaches its first step
    release.touch()
    _, err = winner.communicate(timeout=300)
    assert winner.returncode == 0, err
    assert train_rows(ws) == [("train1", "done")]


def test_fresh_against_a_live_run_is_refused_and_archives_nothing(ws, tmp_path):
    release = tmp_path / "release"
    live = cli("train", "-w", str(ws), *ARGS, paused=release)
    wait_for(held(release).exists)
    fresh = cli("train", "-w", str(ws), "--fresh", *ARGS)
    assert_refused(fresh, "train")
    release.touch()
    _, err = live.communicate(timeout=300)
    assert live.returncode == 0, err
    assert not list(ws.parent.glob("ws.archived-*")), "the live workspace was archived"
    assert train_rows(ws) == [("train1", "done")]


def test_resume_during_a_live_run_is_refused_and_duplicates_nothing(ws, tmp_path):
    release = tmp_path / "release"
    live = cli("train", "-w", str(ws), *ARGS, paused=release)
    wait_for(held(release).exists)
    resume = cli("train", "-w", str(ws), "--resume", *ARGS)
    assert_refused(resume, "train")
    release.touch()
    _, err = live.communicate(timeout=300)
    assert live.returncode == 0, err
    # the same run alone: same versions
    ref = tmp_path / "ref"
    assert main(["init", str(ref), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["train", "-w", str(ref), *ARGS]) == 0
    assert list_versions(ws, "skills") == list_versions(ref, "skills")


def test_fresh_after_the_run_ends_takes_the_lock_into_the_new_workspace(ws):
    assert main(["train", "-w", str(ws), *ARGS]) == 0
    assert main(["train", "-w", str(ws), "--fresh", *ARGS]) == 0
    archives = list(ws.parent.glob("ws.archived-*"))
    assert len(archives) == 1 and len(list_versions(archives[0], "skills")) > 1
    assert holder(ws) is None and holder(archives[0]) is None, "holder line outlived the run"


def test_sigkill_releases_the_lock(ws, tmp_path):
    release = tmp_path / "release"  # never created: the run is killed while held
    live = cli("train", "-w", str(ws), *ARGS, paused=release)
    wait_for(held(release).exists)
    live.send_signal(signal.SIGKILL)
    live.wait()
    assert main(["train", "-w", str(ws), "--resume", *ARGS]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "-w", "{ws}", "--no-progress"],
        ["train", "-w", "{ws}", "--fresh", "--no-progress"],
        ["infer", "-w", "{ws}", "--no-progress"],
        ["eval", "v1", "-w", "{ws}", "--no-progress"],
        ["diagnose", "baseline", "-w", "{ws}", "--no-progress"],
        ["promote", "v1", "-w", "{ws}", "--eval-run", "x", "--name", "y"],
    ],
)
def test_every_writing_command_is_refused_while_another_writer_holds_the_lock(ws, argv, capsys):
    with WriterLock(ws, "train --resume"):
        code = main([a.format(ws=ws) for a in argv])
    assert code == 2
    err = capsys.readouterr().err
    assert "another process is writing" in err and "`train --resume`" in err
    assert not list(ws.parent.glob("ws.archived-*"))


def test_readers_never_wait_for_the_lock(ws, capsys):
    with WriterLock(ws, "train"):
        assert main(["report", str(ws)]) == 0
    assert "workspace" in capsys.readouterr().out


def test_second_lock_in_one_process_is_refused_and_release_frees_it(ws):
    first = WriterLock(ws, "infer").acquire()
    with pytest.raises(WorkspaceBusy):
        WriterLock(ws, "eval").acquire()
    assert holder(ws)["command"] == "infer"
    first.release()
    assert (ws / LOCK_FILE).read_text() == ""
    with WriterLock(ws, "eval"):
        assert holder(ws)["command"] == "eval"


def test_a_refused_writer_waits_a_moment_for_a_new_holder_to_name_itself(ws):
    """The race behind 'holder still starting': the winner has the flock but has not yet
    written its holder line when the loser reads it."""
    fd = os.open(ws / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        line = json.dumps({"pid": 12345, "command": "train", "started_at": "now"}) + "\n"
        timer = threading.Timer(0.1, lambda: os.pwrite(fd, line.encode(), 0))
        timer.start()
        with pytest.raises(WorkspaceBusy, match="pid 12345, `train`"):
            WriterLock(ws, "train").acquire()
        timer.join()
    finally:
        os.close(fd)
