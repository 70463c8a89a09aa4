"""`[gate] run_control = "fdr"`: each gate test of a run starts at its LOND level
(core/evolution/run_level.py), numbered in the order the tests start and raised by the edits
finally accepted before it; continued tests keep the level they started with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.training.train_state import Best, TrainState, new_test_params
from app.harness.workspace.config import GateConfig, load_config
from core.evolution.gate import GateParams
from core.evolution.run_level import lond_level
from tests.app.training.test_train import resume_differences, run_cli

ROOT = Path(__file__).resolve().parents[3]


def fresh_state() -> TrainState:
    return TrainState("t", {}, Best("skills/v1", "prompts/v1", 0.0, "t", 0), 0.0, {})


def test_per_test_control_leaves_the_level_and_numbers_the_test() -> None:
    state, gate = fresh_state(), GateConfig()
    assert new_test_params(gate, state) is gate
    assert state.tests_started == 1


def test_fdr_lowers_each_level_to_lond() -> None:
    state, gate = fresh_state(), GateConfig(run_control="fdr", run_tests=50)
    assert new_test_params(gate, state).e_confirm == pytest.approx(51 / 0.05)
    state.final_accepts = 3
    second = new_test_params(gate, state)
    assert second.alpha == pytest.approx(lond_level(0.05, 2, 3, 50))
    assert second.alpha == pytest.approx(0.05 * 50 / (51 * 52) * 4)
    assert (second.e_rollback, second.n_max) == (gate.e_rollback, gate.n_max)


def test_fdr_needs_every_test_valid() -> None:
    for key, value in (("gate.strategy", "mcnemar"), ("gate.prompt_rule", "net_win")):
        with pytest.raises(UserError, match=f"key '{key}' must be \"eprocess\" when run_control"):
            load_config(None, {"gate.run_control": "fdr", key: value})
    assert load_config(None, {"gate.run_control": "fdr"}).gate.run_tests == 50


FDR_CONFIG = (
    (ROOT / "app" / "demo.toml")
    .read_text()
    .replace("epochs = 4", "epochs = 2")
    .replace("[gate]\n", '[gate]\nrun_control = "fdr"\n')
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One sim-basic training under `run_control = "fdr"` (its config beside the workspace)."""
    ws = tmp_path_factory.mktemp("fdr") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    (ws.parent / "fdr.toml").write_text(FDR_CONFIG)
    proc = run_cli("train", "-w", str(ws), "--config", str(ws.parent / "fdr.toml"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def test_a_run_under_fdr_starts_each_test_at_its_lond_level(trained: Path) -> None:
    with sqlite3.connect(trained / "harness.db") as conn:
        rows = conn.execute("SELECT report_json FROM step_reports ORDER BY epoch, step, task_type")
        tested = [r for (t,) in rows if (r := json.loads(t))["threshold"] is not None]
    state = json.loads((trained / "checkpoint.json").read_text())["state"]
    assert tested and state["tests_started"] >= len({r["run_id"] for r in tested}) > 0
    first = tested[0]  # the run's first test: level α·γ_1 with no accepts before it
    lond = GateParams(e_confirm=1 / lond_level(0.05, 1, 0, 50))
    levels = {lond.accept_level(first["horizon"], s) for s in (True, False)}
    assert first["threshold"] in levels
    for report in tested:  # every level is stricter than the per-test one for its horizon
        assert report["threshold"] > GateParams().accept_level(report["horizon"], True)


@pytest.mark.slow
def test_a_killed_fdr_run_resumes_to_the_same_end(trained: Path, tmp_path: Path) -> None:
    """The run-level counts are checkpointed: a killed and resumed run ends equal."""
    assert resume_differences(trained, trained.parent / "fdr.toml", tmp_path / "ws") == []
