"""`train --resume` leaves a trace in the run's history (the log's `resumes` table, migration
5) that `report` and the TUI show; a log from before the table still opens."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace.harness_log import SCHEMA_VERSION, HarnessLog
from app.tui.data import WorkspaceData
from app.tui.screens.runs import run_cells

ROOT = Path(__file__).resolve().parents[3]
TRAIN = ["--no-progress", "--set", "epochs=1", "--set", 'task_types=["ledger"]']


def train(ws: Path, *extra: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SKILL_TRAINER_KILL_AT"}
    if kill_at:
        env["SKILL_TRAINER_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, "main.py", "train", "-w", str(ws), *TRAIN, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> Path:
    """A run SIGKILLed in its slow update (after its steps) and resumed to the end."""
    ws = tmp_path_factory.mktemp("resumed") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert train(ws, kill_at="slow:1").returncode == -9
    checkpoint = json.loads((ws / "checkpoint.json").read_text())["progress"]
    (ws / "killed_at.json").write_text(json.dumps(checkpoint))
    done = train(ws, "--resume")
    assert done.returncode == 0, done.stderr
    return ws


def test_the_resume_is_recorded_with_its_checkpoint(resumed: Path) -> None:
    killed_at = json.loads((resumed / "killed_at.json").read_text())
    with HarnessLog(resumed / "harness.db", readonly=True) as log:
        (resume,) = log.resumes()
        status = log.run(resume.run_id).status
    assert (resume.run_id, status) == (killed_at["train_id"], "done")
    assert (resume.epoch, resume.phase) == (1, "in_epoch")
    assert resume.step_completed == killed_at["step_completed"] >= 0
    assert resume.checkpoint_at == killed_at["at"] and resume.at >= killed_at["at"]


def test_report_shows_the_resume(resumed: Path, capsys) -> None:
    assert main(["report", "-w", str(resumed)]) == 0
    out = capsys.readouterr().out
    assert "resumed    train1: once" in out
    assert "train1  " in out and "(epoch 1, in_epoch, step " in out
    assert main(["report", "-w", str(resumed), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    train_row = next(r for r in data["runs"] if r["run_id"] == "train1")
    assert [r["phase"] for r in train_row["resumes"]] == ["in_epoch"]
    assert len(data["resumes"]) == 1


def test_the_tui_shows_the_resume(resumed: Path) -> None:
    data = WorkspaceData(resumed)
    status = data.run_status()
    assert status.state == "finished" and "resumed once, last " in status.detail
    assert "(epoch 1, in_epoch, step " in status.detail
    row = next(r for r in data.runs_page(kind="train").rows if r["run_id"] == "train1")
    assert row["resumes"] == 1
    assert str(run_cells(row)[3]) == "done resumed 1×"


def test_a_log_from_before_the_resumes_table_still_opens(resumed: Path, tmp_path, capsys) -> None:
    old = tmp_path / "old"
    subprocess.run(["cp", "-r", str(resumed), str(old)], check=True)
    with sqlite3.connect(old / "harness.db") as conn:  # back to schema 5
        conn.execute("DROP TABLE resumes")
        conn.execute("DELETE FROM _migrations WHERE version = 6")
    assert main(["report", "-w", str(old)]) == 0  # read-only: no migration, no resume
    assert "resumed" not in capsys.readouterr().out
    assert "resumed" not in WorkspaceData(old).run_status().detail
    with HarnessLog(old / "harness.db") as log:  # a writer migrates it
        assert log.schema_version() == SCHEMA_VERSION and log.resumes() == []
