"""`diagnosis_judge` (core/evolution/triage.py, app/harness/training/step.py `judge_answered`),
through the CLI on sim/oracle with a judge that calls every failure a runtime fault, as
Qwen2.5-Coder-1.5B did on real-conventions (overruled on 61 of 61): "auto" stops asking it
once its first verdicts were all overruled, "unanswered" never asks it about an answered run,
and both end in the very workspace "all" ends in, with fewer judge calls. With a judge whose
verdicts stand, "auto" asks it about every failure, as "all" does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.providers.sim import oracle
from core.evolution.triage import JUDGE_AUTO_AFTER, RULE_ANSWERED, RULE_ANSWERED_NOT_A_FAULT
from tests.app.training.test_learning_failures import ORACLE, SCHEDULE, _store
from tests.support.snapshot import diff_states, workspace_state
from tests.support.training import run_patched_cli

ROOT = Path(__file__).resolve().parents[3]
SETS = [
    *("--set", "sim_oracle_rules=2", "--set", "sim_oracle_accuracy=0.3"),
    *("--set", "epochs=3", "--set", "batch_size=16"),
]


def fault(self, prompt: str) -> str:  # noqa: ANN001 - the provider
    return json.dumps({"category": "runtime_fault", "target": "skill", "rationale": "it broke"})


def _train(tmp_path: Path, mode: str) -> Path:
    store = _store(tmp_path)
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--store", str(store), "--seed", "rc", "--questions", "rc"]
    assert main(init) == 0
    judge = ["--set", f'diagnosis_judge="{mode}"']
    assert main(["train", "-w", str(ws), *ORACLE, *SCHEDULE, *SETS, *judge]) == 0
    return ws


def _counts(ws: Path) -> tuple[int, dict[str, int], list[tuple[str, int]]]:
    """(judge calls, diagnoses by decider, each step's diagnoses in order: (decider, n))."""
    with sqlite3.connect(ws / "harness.db") as conn:
        calls = conn.execute("SELECT COUNT(*) FROM llm_calls WHERE role = 'judge'").fetchone()[0]
        by = dict(conn.execute("SELECT decided_by, COUNT(*) FROM diagnoses GROUP BY 1"))
        steps = conn.execute(
            "SELECT decided_by, COUNT(*) FROM diagnoses GROUP BY run_id, decided_by ORDER BY id"
        ).fetchall()
    return calls, by, steps


def _state(ws: Path) -> dict:
    """The workspace's final state less who decided each step's failures (step reports'
    `diagnosis.decided_by`), the one thing that differs."""
    state = workspace_state(ws)
    for key, report in state.items():
        if key.startswith("reports/steps/") and report.get("diagnosis"):
            report["diagnosis"].pop("decided_by")
    return state


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    patch = pytest.MonkeyPatch()
    patch.setattr(oracle.OracleProvider, "_diagnosis", fault)
    try:
        return {m: _train(tmp_path_factory.mktemp(m), m) for m in ("all", "auto", "unanswered")}
    finally:
        patch.undo()


def test_a_judge_that_is_always_overruled_is_not_asked_again(runs: dict[str, Path]) -> None:
    calls_all, by_all, _ = _counts(runs["all"])
    calls_auto, by_auto, steps = _counts(runs["auto"])
    calls_none, by_none, _ = _counts(runs["unanswered"])
    assert set(by_all) == {RULE_ANSWERED_NOT_A_FAULT}
    total = by_all[RULE_ANSWERED_NOT_A_FAULT]
    assert calls_all > 0 and calls_none == 0 and by_none == {RULE_ANSWERED: total}
    # auto: the judge until JUDGE_AUTO_AFTER of its verdicts were all overruled, then the rule
    assert by_auto[RULE_ANSWERED_NOT_A_FAULT] >= JUDGE_AUTO_AFTER
    assert by_auto[RULE_ANSWERED] > 0
    assert sum(by_auto.values()) == total
    assert 0 < calls_auto < calls_all
    asked = [who for who, _ in steps]
    assert asked.index(RULE_ANSWERED) > asked.index(RULE_ANSWERED_NOT_A_FAULT)
    assert RULE_ANSWERED_NOT_A_FAULT not in asked[asked.index(RULE_ANSWERED) :]


def test_skipping_an_always_overruled_judge_changes_nothing_else(runs: dict[str, Path]) -> None:
    """The verdicts are the ones the overruled judge's became (same category, target and note),
    so the packs, the edits, the gates and the final test are the same."""
    reference = _state(runs["all"])
    for mode in ("auto", "unanswered"):
        assert diff_states(reference, _state(runs[mode])) == [], mode


def test_auto_keeps_a_judge_whose_verdicts_stand(tmp_path: Path) -> None:
    ws = _train(tmp_path, "auto")  # the oracle's own judge: its verdicts stand
    _, by, _ = _counts(ws)
    assert by and RULE_ANSWERED not in by


PATCH = (
    "from app.providers.sim import oracle; "
    "from tests.app.training.test_judge_skip import fault; "
    "oracle.OracleProvider._diagnosis = fault"
)


def _train_child(ws: Path, *extra: str, kill_at: str | None = None) -> int:
    argv = ["train", "-w", str(ws), *ORACLE, *SCHEDULE, *SETS, *extra]
    return run_patched_cli(PATCH, argv, kill_at)


def _init(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    store = _store(tmp_path)
    init = ["init", str(ws), "--store", str(store), "--seed", "rc", "--questions", "rc"]
    assert main(init) == 0
    return ws


def test_auto_decides_alike_after_a_kill(tmp_path: Path) -> None:
    """Killed at the end of its first step (its diagnoses logged, its checkpoint not written):
    the resumed run redoes that step with the judge, as the uninterrupted run did, and skips it
    from the same step on (the history is the log's, cleared with the step it redoes)."""
    reference = _init(tmp_path / "ref")
    assert _train_child(reference) == 0
    ws = _init(tmp_path / "killed")
    assert _train_child(ws, kill_at="step_end:1") == -9
    assert _train_child(ws, "--resume") == 0
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []
    assert _counts(ws)[1:] == _counts(reference)[1:]
    assert RULE_ANSWERED in _counts(ws)[1]
