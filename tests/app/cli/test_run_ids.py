"""`--run-id` never silently replaces another run's rows."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.cli import main

TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("runids") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["train", "-w", str(ws), *TRAIN]) == 0
    return ws


@pytest.fixture
def ws(trained, tmp_path) -> Path:
    shutil.copytree(trained, tmp_path / "ws")
    return tmp_path / "ws"


def rows(ws: Path, run_id: str) -> list[tuple]:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        return conn.execute(
            "SELECT question_id, prediction, skills_version FROM predictions "
            "WHERE run_id = ? ORDER BY question_id",
            (run_id,),
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("run_id", ["baseline", "train1", "train1-final-test", "train7"])
def test_training_run_ids_are_refused_even_with_overwrite(ws, run_id, capsys):
    before = rows(ws, run_id)
    for extra in ([], ["--overwrite-run"]):
        assert main(["infer", "-w", str(ws), "--run-id", run_id, "--no-progress", *extra]) == 2
        assert "belong to training" in capsys.readouterr().err
    assert rows(ws, run_id) == before


def test_an_existing_run_id_needs_the_recorded_overwrite_flag(ws, capsys):
    assert (
        main(
            ["infer", "-w", str(ws), "--run-id", "mine", "--no-progress", "--task-types", "ledger"]
        )
        == 0
    )
    first = rows(ws, "mine")
    assert main(["infer", "-w", str(ws), "--run-id", "mine", "--no-progress"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert rows(ws, "mine") == first
    assert (
        main(["infer", "-w", str(ws), "--run-id", "mine", "--no-progress", "--overwrite-run"]) == 0
    )
    assert len(rows(ws, "mine")) > len(first)
    conn = sqlite3.connect(ws / "harness.db")
    provenance = json.loads(
        conn.execute("SELECT provenance_json FROM _runs WHERE run_id = 'mine'").fetchone()[0]
    )
    conn.close()
    assert provenance["overwrote"]["run_id"] == "mine"
    assert provenance["overwrote"]["kind"] == "infer"


def test_generated_ids_step_over_ids_given_by_hand(ws):
    assert (
        main(
            [
                "infer",
                "-w",
                str(ws),
                "--run-id",
                "infer-1",
                "--no-progress",
                "--task-types",
                "ledger",
            ]
        )
        == 0
    )
    mine = rows(ws, "infer-1")
    assert main(["infer", "-w", str(ws), "--no-progress", "--task-types", "ledger"]) == 0
    assert rows(ws, "infer-1") == mine and rows(ws, "infer-2")


@pytest.mark.parametrize("run_id", ["\x1b]0;x\x07", "../x", "", "a b"])
def test_run_ids_that_are_not_names_are_refused(ws, run_id, capsys):
    assert main(["infer", "-w", str(ws), "--run-id", run_id, "--no-progress"]) == 2
    assert "--run-id" in capsys.readouterr().err
