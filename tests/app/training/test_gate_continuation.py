"""A gate test that goes on in later steps (app/harness/training/continuation.py): when n_max
cuts a task type's ladder, the test's accept level is the one for the whole ladder, a segment
that ends W > L short of it goes on in a later step over families it never observed, and the
state it needs survives a checkpoint exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from app.harness.training.checkpoint import state_from_json, state_json
from app.harness.training.continuation import (
    first_segment_gate,
    goes_on,
    pools_evidence,
    resumed_gate,
)
from app.harness.training.gate_ladder import Ladder
from app.harness.training.train_state import Continuation, PooledTest
from core.evolution.edits import Edit, edit_set_key
from core.evolution.gate import (
    BetState,
    GateAction,
    GateDecision,
    GateParams,
    GateState,
    SequentialGate,
)
from tests.support.training import train_on_sim_basic

CONFIG = "epochs = 2\nbatch_size = 48\nedit_budget_start = 3\nconcurrency = 8\n[gate]\nn_max = 4\n"


def _state(n: int, horizon: int) -> GateState:
    """A mixture bet's state after n families, all won."""
    return GateState(BetState(wins=n, losses=0), n=n, units=n, horizon=horizon, threshold=20.0)


def _families(n: int, prefix: str = "f") -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((f"{prefix}{i}", (f"{prefix}{i}",)) for i in range(n))


def test_a_cut_ladder_is_tested_at_the_level_of_the_whole_ladder() -> None:
    # rounded evidence: the exact level for any family size, so the level depends on the
    # horizon (a continued test betting on d, the default, stays at Ville's level)
    params = GateParams(family_evidence="rounded")
    segment = Ladder(_families(10), ())
    gate = first_segment_gate(params, segment, horizon=30)
    assert gate.threshold == params.accept_level(30) > params.accept_level(10)
    assert gate.horizon == 30
    for i in range(10):  # W W L, ...: 7 W, 3 L, no decision within the segment
        gate.observe(f"f{i}", i % 3 == 2, i % 3 != 2)
    decision = gate.finish(exhausted=True)
    assert (decision.action, decision.stop_reason) == ("reject", "insufficient_evidence")
    assert goes_on(decision, gate.state(), observed_before=0)
    assert not goes_on(decision, gate.state(), observed_before=10)  # it found nothing fresh
    again = resumed_gate(params, gate.state())
    assert (again.W, again.L, again.n, again.threshold) == (7, 3, 10, gate.threshold)


def test_no_continuation_without_net_wins_or_past_the_horizon() -> None:
    params = GateParams()
    gate = first_segment_gate(params, Ladder(_families(4), ()), horizon=30)
    for i in range(4):  # W L W L
        gate.observe(f"f{i}", i % 2 == 1, i % 2 == 0)
    assert not goes_on(gate.finish(exhausted=True), gate.state(), observed_before=0)
    full = GateDecision(GateAction.REJECT, 7, 3, 10, 3.0, 0.2, "insufficient_evidence", 0.4, 0.2)
    assert goes_on(full, _state(n=10, horizon=30), observed_before=0)
    assert not goes_on(full, _state(n=10, horizon=10), observed_before=0)  # horizon used up
    assert not goes_on(full, None, observed_before=0)  # not a test that may go on


def test_continuations_survive_the_checkpoint_state() -> None:
    edit = Edit(op="add", section="Rules", content="- a rule")
    state = state_from_json(
        {
            "train_id": "train1",
            "correctness": {},
            "best": {"skills": "s", "prompts": "p", "val_acc": 0.5, "run_id": "r", "epoch": 0},
            "baseline_val_acc": 0.5,
            "baseline_versions": {},
        }
    )
    assert (state.shown_units, state.continuations, state.pooled) == ([], {}, {})  # older
    state.show(["u2", "u1"])
    state.continuations["t"] = Continuation(
        "t", "t.md", "A", "A2", (edit,), _state(n=4, horizon=30), ("u1", "u3"), 1, 2, 1
    )
    state.pooled["t"] = {edit_set_key([edit]): PooledTest(_state(n=12, horizon=40), ("u4",), 2)}
    again = state_from_json(json.loads(json.dumps(state_json(state))))
    assert again == state
    assert again.shown_units == ["u1", "u2"]


def _train(tmp_path: Path) -> Path:
    return train_on_sim_basic(tmp_path, CONFIG)


def test_a_promising_test_goes_on_over_fresh_families(tmp_path: Path) -> None:
    ws = _train(tmp_path)
    with sqlite3.connect(ws / "harness.db") as conn:
        reports = [json.loads(r) for (r,) in conn.execute("SELECT report_json FROM step_reports")]
        units = {}
        for run_id, unit in conn.execute("SELECT run_id, unit_id FROM gate_evidence"):
            units.setdefault(run_id, set()).add(unit)
    first = [r for r in reports if "goes on in a later step" in r["summary"]]
    assert first, "no segment went on"
    continued = [r for r in reports if "continued from" in r["summary"]]
    assert continued
    params = GateParams(n_max=4)
    for r in continued:
        origin = r["summary"].split("continued from ")[1].split(";")[0]  # "e1 s0"
        epoch, step = (int(x[1:]) for x in origin.split())
        chain = [
            p
            for p in reports
            if p["task_type"] == r["task_type"]
            and p.get("gate_run_id")
            and (p["epoch"], p["step"]) >= (epoch, step)
            and (p["epoch"], p["step"]) < (r["epoch"], r["step"])
        ]
        assert chain[0]["epoch"] == epoch and chain[0]["step"] == step
        assert r["threshold"] == chain[0]["threshold"] == params.accept_level(chain[0]["horizon"])
        earlier = set().union(*(units.get(p["gate_run_id"], set()) for p in chain))
        assert not earlier & units.get(r["gate_run_id"], set())  # never a family twice


def test_only_a_test_stopped_for_want_of_a_signal_is_kept_for_a_reproposal() -> None:
    params = GateParams(curtail=False)
    gate = SequentialGate(params, horizon=60)
    for i in range(20):  # ties: the no-signal stop at 20 of 60
        gate.observe(f"u{i}", True, True)
    quiet = gate.finish()
    assert quiet.ended_by == "no_signal" and pools_evidence(quiet, gate.state())
    assert not pools_evidence(quiet, None)  # not an eprocess test
    losing = SequentialGate(params, horizon=60)
    for i in range(20):  # more losses than wins: its edits are blacklisted
        losing.observe(f"u{i}", i < 2, i >= 19)
    assert not pools_evidence(losing.finish(), losing.state())
    harm = SequentialGate(params, horizon=60)
    while harm.decision is None:
        harm.observe(f"u{harm.n}", True, False)
    assert not pools_evidence(harm.finish(), harm.state())  # harm shown: final
    whole = SequentialGate(GateParams(futility_share=0.0, curtail=False), horizon=5)
    for i in range(5):
        whole.observe(f"u{i}", True, True)
    assert not pools_evidence(whole.finish(), whole.state())  # its horizon is used up


def test_a_reproposed_edit_set_goes_on_over_units_it_never_observed(tmp_path: Path) -> None:
    """Trained on sim-basic for 4 epochs: an edit set rejected for want of a signal is kept,
    and when the evolver proposes it again its test goes on at its first level, over units
    none of its earlier segments observed. (Without the final look: a test that takes it
    runs its whole ladder, so only tests of near-duplicate families or scores stop for want
    of a signal, and sim-basic's units are independent.)"""
    config = CONFIG.replace("epochs = 2", "epochs = 4").split("[gate]")[0]
    ws = train_on_sim_basic(tmp_path, config + "[gate]\nfinal_look = false\n")
    with sqlite3.connect(ws / "harness.db") as conn:
        reports = [json.loads(r) for (r,) in conn.execute("SELECT report_json FROM step_reports")]
        units: dict[str, set[str]] = {}
        for run_id, unit in conn.execute("SELECT run_id, unit_id FROM gate_evidence"):
            units.setdefault(run_id, set()).add(unit)
        epochs = [json.loads(r) for (r,) in conn.execute("SELECT report_json FROM epoch_reports")]
    tested = [r for r in reports if r.get("gate_run_id")]
    kept = sum("kept: its test goes on" in r["summary"] for r in tested)
    assert kept and sum(e["counts"].get("pooled", 0) for e in epochs) == kept
    resumed = [r for r in tested if "went on from" in r["summary"]]
    assert resumed, "no edit set was proposed again"

    def key(report: dict) -> str:
        return edit_set_key([Edit.from_dict(e) for e in report["edits"]])

    for r in resumed:
        earlier = [
            p
            for p in tested
            if p["task_type"] == r["task_type"]
            and key(p) == key(r)
            and (p["epoch"], p["step"]) < (r["epoch"], r["step"])
        ]
        assert earlier and all("kept: its test goes on" in p["summary"] for p in earlier[-1:])
        # the segment it went on from (an earlier test of the same set may have ended for good)
        assert r["threshold"] == earlier[-1]["threshold"]
        seen = set().union(*(units[p["gate_run_id"]] for p in earlier))
        assert not seen & units[r["gate_run_id"]]  # never a unit twice
