"""What a step reports about its diagnoses (app/harness/training/step.py, core/evolution/diagnose.py):
failures none of which is a skill gap are `skip_no_skill_gaps` with counts per category, not
`skip_no_failures`; self-contradictory diagnoses are counted and warned about once a batch.

The judge is the simulated one with its diagnosis swapped for a test double, as a real judge
that classes failures differently would reply; nothing else of the simulated world changes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.harness.training.vocabulary import SkipAction
from app.providers.sim import evolver as sim_evolver
from tests.support.training import train_on_sim_basic

SMALL = "epochs = 1\nbatch_size = 48\nedit_budget_start = 3\nconcurrency = 8\n"


def _train(tmp_path: Path) -> Path:
    return train_on_sim_basic(tmp_path, SMALL)


def _reports(ws: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((ws / "reports" / "steps").glob("*.json"))]


def _rollout_failures(ws: Path, epoch: int, step: int, task_type: str) -> int:
    with sqlite3.connect(ws / "harness.db") as conn:
        ((n,),) = conn.execute(
            "SELECT COUNT(*) FROM predictions WHERE run_id = ? AND task_type = ? AND correct = 0",
            (f"train1-e{epoch}-s{step}-rollout", task_type),
        )
    return n


def test_failures_none_a_skill_gap_are_not_reported_as_no_failures(tmp_path, monkeypatch):
    # missing_context: a runtime_fault on an answered run would be overruled as a skill gap
    # (core/evolution/triage.py overrule_judge)
    def missing_context_judge(world, prompt, shares) -> str:
        return json.dumps({"category": "missing_context", "target": "skill", "rationale": "?"})

    monkeypatch.setattr(sim_evolver, "diagnose", missing_context_judge)
    ws = _train(tmp_path)
    reports = _reports(ws)
    with_failures = 0
    for r in reports:
        n = _rollout_failures(ws, r["epoch"], r["step"], r["task_type"])
        assert r["diagnosis"]["failures"] == n
        if n:
            with_failures += 1
            assert r["action"] == SkipAction.SKIP_NO_SKILL_GAPS
            assert r["summary"] == f"{n} failure{'s' if n > 1 else ''}, none a skill gap " + (
                f"(missing_context {n})"
            )
            assert r["diagnosis"] == {
                "failures": n,
                "by_category": {"missing_context": n},
                "contradictory": 0,
                "decided_by": {"judge": n},  # the judge's verdict: no rule fires here
            }
        else:
            assert r["action"] == SkipAction.SKIP_NO_FAILURES
            assert r["summary"] == "no failures in this batch"
    assert with_failures > 0
    with sqlite3.connect(ws / "harness.db") as conn:
        stored = {a for (a,) in conn.execute("SELECT action FROM step_reports")}
    assert SkipAction.SKIP_NO_SKILL_GAPS in stored


def test_contradictory_diagnoses_are_counted_and_warned_once_per_batch(tmp_path, monkeypatch):
    real = sim_evolver.diagnose

    def odd_judge(world, prompt, shares) -> str:
        reply = json.loads(real(world, prompt, shares))
        if reply["category"] == "skill_gap":  # the contradiction a real judge produced
            reply["target"] = "system"
        elif reply["category"] == "interface":
            reply["target"] = "skill"
        return json.dumps(reply)

    monkeypatch.setattr(sim_evolver, "diagnose", odd_judge)
    ws = _train(tmp_path)
    with sqlite3.connect(ws / "harness.db") as conn:
        rows = conn.execute(
            "SELECT run_id, task_type, category, target FROM diagnoses WHERE degraded = 0"
        ).fetchall()
    expected: dict[tuple[str, str], int] = {}
    for run_id, task_type, category, target in rows:
        odd = (category, target) in (("skill_gap", "system"), ("interface", "skill"))
        key = (run_id.removesuffix("diag"), task_type)
        expected[key] = expected.get(key, 0) + odd
    assert sum(expected.values()) > 0
    for r in _reports(ws):
        key = (f"train1-e{r['epoch']}-s{r['step']}-", r["task_type"])
        n = expected.get(key, 0)
        assert r["diagnosis"]["contradictory"] == n, key
        assert ("contradictory diagnos" in r["summary"]) == (n > 0), r["summary"]
    warned = [
        line
        for line in (ws / "logs" / "skill-trainer.log").read_text().splitlines()
        if "contradict themselves" in line
    ]
    steps_with_odd = {run for (run, _), n in expected.items() if n}
    assert len(warned) == len(steps_with_odd)  # one line a batch, not one a diagnosis
    assert all(
        "skill_gap with target system" in w or "interface with target skill" in w for w in warned
    )


@pytest.mark.parametrize(
    ("category", "target", "why"),
    [
        ("skill_gap", "system", "skill_gap with target system"),
        ("skill_gap", "tool:read_context", "skill_gap with target tool:read_context"),
        ("interface", "skill", "interface with target skill"),
        ("skill_gap", "skill", None),
        ("interface", "system", None),
        ("runtime_fault", "system", None),
        ("missing_context", "skill", None),
    ],
)
def test_which_diagnoses_contradict_themselves(category, target, why) -> None:
    from core.evolution.diagnose import Diagnosis

    assert Diagnosis("q", "q", "t", category, target, "r").contradiction == why
    assert Diagnosis("q", "q", "t", category, target, "r", degraded=True).contradiction is None


def test_tally_describes_counts_most_first() -> None:
    from core.evolution.diagnose import Diagnosis, FailureTally

    def d(category: str, target: str = "skill") -> Diagnosis:
        return Diagnosis("q", "q", "t", category, target, "r")

    mixed = FailureTally.of([d("interface", "system"), d("runtime_fault"), d("runtime_fault")])
    assert mixed.describe() == "3 failures, none a skill gap (runtime_fault 2, interface 1)"
    one = FailureTally.of([d("skill_gap", "system")])
    assert one.describe() == "1 failure, 1 skill gap (skill_gap 1)"
    assert one.contradiction_note() == "; 1 contradictory diagnosis"
    two = FailureTally.of([d("interface"), d("skill_gap", "tool:x"), d("skill_gap")])
    assert two.contradiction_note() == "; 2 contradictory diagnoses" and not mixed.contradictory
    assert FailureTally.of([]).describe() == "no failures in this batch"
