"""Typed run state: a checkpoint written before the state was typed (and before [gate] was a
config section), or before its case packs, gate pools, curve and gate tests were, still loads,
re-serialises byte for byte the same, and resumes as configured."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.harness.training.checkpoint import (
    CheckpointStateError,
    checkpoint_problem,
    state_from_json,
    state_json,
)
from app.harness.training.continuation import resumed_gate
from app.harness.training.gate_ladder import GatePools
from app.harness.training.train_state import Best, CurvePoint, Probation, ResumePlan
from app.harness.workspace.config import (
    RunConfig,
    fingerprint,
    fingerprint_changes,
    recorded_config,
)
from core.evolution.diagnose import CasePack
from core.evolution.edits import Edit, RejectedEdit
from core.evolution.gate import GateParams, GateState

# checkpoint.json of an in-epoch run with two task types on probation, written by the code
# before this change (dict state, `gate_*` config keys); big maps trimmed to a few entries.
OLD_CHECKPOINT = Path(__file__).parents[1] / "data" / "checkpoint_before_typed_state.json"


@pytest.fixture
def old() -> dict:
    return json.loads(OLD_CHECKPOINT.read_text(encoding="utf-8"))


def test_an_old_checkpoint_state_loads_typed(old: dict) -> None:
    assert checkpoint_problem(old) is None
    state = state_from_json(old["state"])
    assert state.best == Best(
        skills="skills/v1",
        prompts="prompts/v1",
        val_acc=old["state"]["best"]["val_acc"],
        run_id="baseline",
        epoch=0,
    )
    assert state.best.versions == ("v1", "v1")
    probation = state.probations["dates"]
    assert isinstance(probation, Probation) and probation.accepted_version == "v2"
    family_id, unit_ids = probation.families[0]
    assert family_id == "dates-fam09" and unit_ids == ("dates-u027", "dates-u028", "dates-u029")
    assert all(isinstance(e, Edit) for e in probation.edits) and probation.edits[0].op == "add"
    rejected = state.rejected_edits(next(iter(state.rejected)))
    assert rejected and all(isinstance(r, RejectedEdit) for r in rejected)


# Added since that checkpoint was written: an old state loads them empty.
ADDED_SINCE = {
    "shown_units": [],
    "continuations": {},
    "baseline_scores": {},
    "pooled": {},
    "tests_started": 0,  # the run-level counts (core/evolution/run_level.py)
    "final_accepts": 0,
    "gated": {},
    "shown_failures": {},
}


def test_an_old_checkpoint_state_is_written_back_unchanged(old: dict) -> None:
    state = state_from_json(old["state"])
    assert json.loads(json.dumps(state_json(state))) == {**old["state"], **ADDED_SINCE}


# checkpoint.json state written by the code whose state was dicts (case packs, gate pools,
# curve, gate test states): an in-epoch checkpoint of a sim-basic run with n_max = 20 (case
# packs, a curve point, continued and pooled tests betting on d), with a probation and a
# continued fixed-bet test (e_win, e_harm kept) taken from two more runs; lists trimmed.
DICT_STATE_CHECKPOINT = Path(__file__).parents[1] / "data" / "checkpoint_from_main_dict_state.json"


@pytest.fixture
def dict_state() -> dict:
    return json.loads(DICT_STATE_CHECKPOINT.read_text(encoding="utf-8"))


def test_a_dict_state_checkpoint_loads_as_typed_values(dict_state: dict) -> None:
    assert checkpoint_problem(dict_state) is None
    state = state_from_json(dict_state["state"])
    assert all(isinstance(p, CasePack) for p in (*state.system_packs, *state.tool_packs))
    assert state.system_packs[0].target == "system" and state.system_packs[0].failures
    assert {p.tool_name for p in state.tool_packs} == {"read_context"}
    assert isinstance(state.gate_pools, GatePools) and state.gate_pools.seed == 1
    assert state.gate_pools.task_types == tuple(
        sorted(dict_state["state"]["gate_pools"]["families"])
    )
    (point,) = state.curve
    assert point == CurvePoint(1, point.val_acc, point.test_acc, point.counts)
    assert point.counts["accepted"] == 7 and "val_acc" not in point.counts
    tests = [
        *(p.test for p in state.probations.values()),
        *(c.test for c in state.continuations.values()),
        *(t.test for by_key in state.pooled.values() for t in by_key.values()),
    ]
    assert tests and all(isinstance(t, GateState) for t in tests)
    mixture, fixed = state.continuations["routing"].test, state.continuations["dates"].test
    assert mixture.evidence.log_win is not None and mixture.evidence.e_win is None
    assert fixed.evidence.e_win is not None and fixed.evidence.log_win is None


def test_a_dict_state_checkpoint_is_written_back_unchanged(dict_state: dict) -> None:
    state = state_from_json(dict_state["state"])
    assert json.loads(json.dumps(state_json(state))) == {
        **dict_state["state"],
        "gated": {},
        "tests_started": 0,
        "final_accepts": 0,
        "shown_failures": {},
    }


def test_its_gate_tests_go_on_where_they_stopped(dict_state: dict) -> None:
    """A test resumed from the checkpoint has the counts, level and wealth it was saved with."""
    state = state_from_json(dict_state["state"])
    saved = dict_state["state"]["continuations"]
    for task_type, strategy in (("routing", "mixture"), ("dates", "fixed")):
        test = state.continuations[task_type].test
        gate = resumed_gate(GateParams(lambda_strategy=strategy), test)
        bet = saved[task_type]["test"]["evidence"]
        assert (gate.n, gate.threshold, gate.bet_W, gate.bet_L) == (
            saved[task_type]["test"]["n"],
            saved[task_type]["test"]["threshold"],
            bet["wins"],
            bet["losses"],
        )
        assert gate.state() == test


def test_a_curve_point_is_flat_in_reports_and_in_the_checkpoint() -> None:
    point = CurvePoint(2, 0.5, None, {"accepted": 1, "rejected": 3})
    assert point.flat() == {
        "epoch": 2,
        "val_acc": 0.5,
        "test_acc": None,
        "accepted": 1,
        "rejected": 3,
    }


def test_an_old_checkpoint_config_resumes_with_its_gate_settings(old: dict) -> None:
    saved = old["config_fingerprint"]
    assert saved["decision"]["gate_e_provisional"] == 1.2  # the pre-section spelling
    config = recorded_config(saved, "checkpoint.json")
    assert config.gate.e_provisional == 1.2 and config.gate.curtail is False
    benchmark_hash = saved["structural"]["benchmark_hash"]
    assert fingerprint_changes(saved, fingerprint(config, benchmark_hash)) == ([], [])
    default = fingerprint(RunConfig(), benchmark_hash)
    _, decision = fingerprint_changes(saved, default)
    assert "gate.e_provisional: 1.2 -> 5.0" in decision


@pytest.mark.parametrize(
    "path, value, key",
    [
        (("best", "val_acc"), "high", "state.best.val_acc"),
        (("best", "epoch"), True, "state.best.epoch"),
        (("probations", "dates", "families"), [[1, ["u"]]], "state.probations.dates.families"),
        (("probations", "dates", "edits"), [{"op": "add"}], "state.probations.dates.edits.section"),
        (("rejected",), {"dates": [{"op": 1}]}, "state.rejected.dates.task_type"),
        (("system_packs",), [{"target": "system"}], "state.system_packs.failures"),
        (("gate_pools", "seed"), "1", "state.gate_pools.seed"),
        (("probations", "dates", "test", "n"), 8.5, "state.probations.dates.test.n"),
        (
            ("curve",),
            [{"epoch": 1, "val_acc": 0.5, "test_acc": None, "kept": "2"}],
            "state.curve.counts.kept",
        ),
    ],
)
def test_a_wrong_nested_state_value_is_named(old: dict, path, value, key) -> None:
    state = copy.deepcopy(old["state"])
    target = state
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(CheckpointStateError, match=rf"key '{key}'"):
        state_from_json(state)


def test_a_missing_state_key_is_named(old: dict) -> None:
    del old["state"]["best"]
    assert checkpoint_problem(old) == "key 'state.best' missing"


def test_resume_plans() -> None:
    progress = {"epoch": 2, "phase": "in_epoch", "step_completed": 1}
    plan = ResumePlan.after(progress, [["u1"], ["u2"], ["u3"]])
    assert (plan.first_epoch, plan.batches_of(2), plan.first_step_of(2)) == (
        2,
        [["u1"], ["u2"], ["u3"]],
        2,
    )
    assert (plan.batches_of(3), plan.first_step_of(3)) == (None, 0)
    plan = ResumePlan.after({"epoch": 2, "phase": "epoch_done", "step_completed": 5}, None)
    assert (plan.first_epoch, plan.batches_of(3), plan.first_step_of(3)) == (3, None, 0)
    assert ResumePlan() == ResumePlan(first_epoch=1)  # a fresh run


def test_a_run_killed_after_its_finished_checkpoint_is_marked_done_on_resume(tmp_path) -> None:
    """The "finished" checkpoint is written before the run is marked done in the log; a kill
    in between used to leave the run "running" for good (the crash fuzz test found it)."""
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    args = ["train", "-w", str(ws), "--no-progress", "--set", "epochs=1"]
    assert main([*args, "--set", 'task_types=["ledger"]']) == 0
    conn = sqlite3.connect(ws / "harness.db")
    with conn:
        done = conn.execute("SELECT summary_json FROM _runs WHERE kind = 'train'").fetchone()[0]
        conn.execute(
            "UPDATE _runs SET status = 'running', summary_json = NULL WHERE kind = 'train'"
        )
    assert main(["train", "-w", str(ws), "--no-progress", "--resume"]) == 0
    row = conn.execute("SELECT status, summary_json FROM _runs WHERE kind = 'train'").fetchone()
    conn.close()
    assert row == ("done", done)
