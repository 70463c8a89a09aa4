"""`max_calls`: training stops at a paid-call budget, closes its epoch, tests the best version,
and a run killed on the way resumes to the same end (app/harness/training/call_budget.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.harness.training.call_budget import first_step_calls, is_measurement, training_calls
from app.harness.training.run_progress import progress_view
from app.providers.errors import CallBudgetSpent
from app.providers.litellm_provider import CostBudget
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
# the first step's two gate tests and line checks finish within it: an accept becomes best
CAP = 300
ARGS = [
    "--set",
    "epochs=1",
    "--set",
    'task_types=["ledger", "units"]',
    "--set",
    "concurrency=4",
    "--no-progress",
]


@pytest.mark.parametrize(
    ("run_id", "measured"),
    [
        ("baseline", True),
        ("train1-final-test", True),
        ("train1-e2-slow-holdout-v3-v1", True),
        ("train1-e2-slow-val", False),
        ("train1-e1-s0-gate-ledger", False),
        ("train1-e1-close-val", False),
        ("train2-final-test", False),  # another run's test is not this run's measurement
        ("train1-e1-slow-holdout", False),
        ("", False),
    ],
)
def test_only_the_test_pool_measurements_are_free(run_id, measured):
    assert is_measurement(run_id, "train1") is measured


def test_training_calls_of_a_ledger():
    paid = {"baseline": 600, "train1-e1-s0-diag": 30, "train1-final-test": 25, "x": 2}
    assert training_calls(paid, "train1") == 32


def test_the_first_step_calls_of_a_ledger():
    paid = {
        "baseline": 600,
        "train1-e1-s0-diag": 30,
        "train1-e1-s0-gate-units-further": 7,
        "train1-e1-s1-diag": 5,
        "train1-e1-s10-diag": 4,
        "train1-e2-s0-diag": 3,
        "train11-e1-s0-diag": 2,
    }
    assert first_step_calls(paid, "train1") == 37


def test_the_call_cap_counts_only_what_counts_and_stops_at_the_cap():
    budget = CostBudget(None)
    counting = [True]
    budget.charge(0.1)  # before arming: nothing is counted
    budget.arm_calls(3, already=1, counts=lambda: counting[0])
    budget.charge(0.0)
    counting[0] = False
    budget.charge(0.0)  # a measurement: free
    budget.check()  # and never stopped
    counting[0] = True
    budget.check()
    budget.charge(0.0)
    assert budget.training_calls == 3
    with pytest.raises(CallBudgetSpent, match="max_calls of 3"):
        budget.check()
    counting[0] = False
    budget.check()  # the final test still runs
    budget.charge(0.5, calls=0)  # carried money is no call
    assert budget.training_calls == 3 and budget.spent_usd == pytest.approx(0.6)
    budget.arm_calls(None)
    budget.check()


def spend_by_run(ws: Path) -> dict[str, int]:
    conn = sqlite3.connect(ws / "response_cache.db")
    try:
        return dict(conn.execute("SELECT run_id, COUNT(*) FROM spend GROUP BY run_id"))
    finally:
        conn.close()


def init(ws: Path) -> None:
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0


def test_a_spent_budget_closes_the_epoch_and_tests_the_best(tmp_path):
    ws = tmp_path / "ws"
    init(ws)
    assert main(["train", "-w", str(ws), *ARGS, "--set", f"max_calls={CAP}"]) == 0
    progress = json.loads((ws / "checkpoint.json").read_text())["progress"]
    assert progress["end"] == "max_calls" and progress["phase"] == "finished"
    paid = spend_by_run(ws)
    closing = sum(n for r, n in paid.items() if "-close-" in r)
    learning = training_calls(paid, "train1") - closing
    # calls in flight when the cap was reached finish: at most concurrency - 1 over
    assert CAP <= learning <= CAP + 3, paid
    # one validation run of the cut epoch, at most; the line checks of the first step's accepts
    # answered their ladders' validation families already (response cache)
    assert closing <= 60, paid
    assert paid["train1-final-test"] > 0  # the test is a measurement: it ran past the cap
    # the step the cap cut short (step 1) left no rows, only its paid calls in the ledger
    with sqlite3.connect(ws / "harness.db") as conn:
        cut = conn.execute("SELECT COUNT(*) FROM _runs WHERE run_id LIKE 'train1-e1-s1-%'")
        assert cut.fetchone()[0] == 0
    assert any(r.startswith("train1-e1-s1-") for r in paid), paid
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert final["best"]["run_id"] == "train1-e1-close-val"  # the gate's accept became best
    assert final["test_accuracy"] > final["baseline_test_accuracy"]
    # the uncapped run spends more: the cap changed what ran
    ref = tmp_path / "ref"
    init(ref)
    assert main(["train", "-w", str(ref), *ARGS]) == 0
    assert training_calls(spend_by_run(ref), "train1") > learning + closing


def test_a_budget_spent_before_the_first_step_closed_says_so(tmp_path, capfd):
    ws = tmp_path / "ws"
    init(ws)
    assert main(["train", "-w", str(ws), *ARGS, "--set", "max_calls=40"]) == 0
    progress = json.loads((ws / "checkpoint.json").read_text())["progress"]
    assert progress["end"] == "max_calls" and progress["global_step"] == 0
    assert "before the first step closed, so nothing was learned" in progress_view(progress).text
    assert "max_calls = 40 was spent before the first step closed" in capfd.readouterr().err
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] == final["baseline_test_accuracy"]


def run_cli(ws: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", "train", "-w", str(ws), *ARGS, "--set", f"max_calls={CAP}"]
        + list(extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.mark.parametrize("kill_at", ["gate:2", "slow:1", "finish:1"])
def test_a_budget_run_killed_on_the_way_resumes_to_the_same_end(tmp_path, kill_at):
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    init(ref)
    init(ws)
    assert run_cli(ref).returncode == 0
    killed = run_cli(ws, env={"SKILL_TRAINER_KILL_AT": kill_at})
    assert killed.returncode == -9, f"kill point {kill_at} was never reached: {killed.stderr}"
    resumed = run_cli(ws, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert diff_states(workspace_state(ref), workspace_state(ws)) == []
    learning = training_calls(spend_by_run(ws), "train1")
    assert learning == training_calls(spend_by_run(ref), "train1")
