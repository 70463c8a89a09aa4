"""A run killed after its last epoch (around and during the final test) resumes to exactly the
checkpoint, log summary and workspace an uninterrupted run ends with; and a finished run says
which epoch it stopped after and why (app/harness/training/run_progress.py)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.harness.training.run_progress import progress_view
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
# The demo's config on sim-basic with room for more epochs: there the gate confirms no one-rule
# edit, so the run stops early after epoch 2 (no new best after the baseline, patience 2) with
# epochs_since_best = 2; this file is about how a run ends, not how much it learns.
TRAIN = [
    *("--config", str(ROOT / "app" / "demo.toml"), "--no-progress"),
    *("--set", "epochs=6"),
]


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
def fresh_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("fresh") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture(scope="module")
def reference(tmp_path_factory, fresh_ws: Path) -> Path:
    ws = tmp_path_factory.mktemp("ref") / "ws"
    shutil.copytree(fresh_ws, ws)
    proc = train(ws)
    assert proc.returncode == 0, proc.stderr
    return ws


def checkpoint_fields(ws: Path) -> dict[str, Any]:
    """checkpoint.json flattened to one entry per leaf, without what must differ: the wall
    clock (`at`) and the spend (a killed process's paid calls are charged to the run:
    docs/architecture.md#models, the spend ledger)."""
    data = json.loads((ws / "checkpoint.json").read_text(encoding="utf-8"))
    fields: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(value, list) and value:
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif path.rsplit(".", 1)[-1] not in ("at", "spent_usd"):
            fields[path] = value

    walk(data, "")
    return fields


def train_summary(ws: Path) -> tuple[str, dict[str, Any]]:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        status, summary = conn.execute(
            "SELECT status, summary_json FROM _runs WHERE kind = 'train'"
        ).fetchone()
    finally:
        conn.close()
    return status, json.loads(summary)


@pytest.mark.slow
def test_an_early_stop_says_the_last_epoch_run_and_why(reference: Path) -> None:
    progress = json.loads((reference / "checkpoint.json").read_text())["progress"]
    last = progress["epoch"]
    assert (progress["phase"], progress["end"]) == ("finished", "early_stop") and 2 <= last < 6
    assert (progress["epochs_planned"], progress["epochs_since_best"]) == (6, 2)
    text = progress_view(progress).text
    assert text.startswith(f"finished after epoch {last} of 6: early stop, no new best validation")
    assert "for 2 epochs" in text and "epoch 6" not in text
    assert train_summary(reference)[1]["reason"] == text.split(" (")[0]


@pytest.mark.slow
def test_report_shows_the_early_stop(reference: Path, capsys) -> None:
    assert main(["report", "-w", str(reference)]) == 0
    out = capsys.readouterr().out
    last = json.loads((reference / "checkpoint.json").read_text())["progress"]["epoch"]
    assert f"finished after epoch {last} of 6: early stop" in out
    assert "finished after epoch 6" not in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "kill_at, then_at",
    [
        ("slow:2", None),  # in the slow update of the epoch that stops early
        ("finish:1", None),  # best restored as current, before the final test
        ("finish:1", "rollout:1"),  # ... then again at the final test's first answer
        ("finish:1", "rollout:60"),  # ... and half-way through it
        ("finish:2", None),  # final_test_eval.json written, before the finished checkpoint
    ],
)
def test_a_kill_around_the_final_test_resumes_to_the_reference_checkpoint(
    kill_at: str, then_at: str | None, reference: Path, fresh_ws: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(fresh_ws, ws)
    assert train(ws, kill_at=kill_at).returncode == -9, f"{kill_at} was never reached"
    if then_at:  # the resumed process's first answers are the final test's
        assert train(ws, "--resume", kill_at=then_at).returncode == -9, then_at
    resumed = train(ws, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    want, got = checkpoint_fields(reference), checkpoint_fields(ws)
    differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert differ == [], [(k, want.get(k), got.get(k)) for k in differ[:5]]
    assert train_summary(ws) == train_summary(reference)
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []
