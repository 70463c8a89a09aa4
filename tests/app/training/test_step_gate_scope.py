"""What a step lets the gate see and which task types it lets evolve
(app/harness/training/step.py): a gate ladder never holds a family the evolver was shown in this
run, and a task type on probation proposes no edit until the epoch-end verdict."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.training import step as step_module
from app.harness.training.gate_ladder import GatePools
from app.harness.training.step import StepScope, evolve_phase, gate_spec
from app.harness.training.train_state import Best, Probation, TrainState
from app.harness.training.vocabulary import SkipAction
from app.harness.workspace.config import RunConfig
from core.evolution.diagnose import CaseItem, CasePack, DiagnosisResult
from core.evolution.evolve import EvolutionRecord, EvolutionStatus, TargetKind
from core.evolution.gate import BetState, GateState
from core.types import Question, QuestionUnit

TYPES = ("a", "b")


def _units() -> list[QuestionUnit]:
    """Per type 6 diagnosis families of one unit (d0..d5) and 3 validation ones (v0..v2)."""
    out = []
    for t in TYPES:
        for name in [f"d{i}" for i in range(6)] + [f"v{i}" for i in range(3)]:
            q = Question(question_id=f"{t}-{name}", task_type=t, question=name, answer="x")
            out.append(QuestionUnit(unit_id=q.unit_id, task_type=t, questions=(q,)))
    return out


def _scope(state: TrainState) -> StepScope:
    units = _units()
    validation = {u.unit_id for u in units if "-v" in u.unit_id}
    ctx: Any = SimpleNamespace(
        config=RunConfig(),
        gate_pools=GatePools.build(units, validation, set(), seed=3),
        task_types=TYPES,
    )
    prompts = AgentPrompts(
        system="s", tool_docs={}, skills={"a.md": "A", "b.md": "B"}, user_template="{question}"
    )
    return StepScope(ctx, state, epoch=2, step=1, prompts=prompts, budget=3)


def _state(**kwargs: Any) -> TrainState:
    best = Best(skills="skills/v1", prompts="prompts/v1", val_acc=0.5, run_id="r", epoch=0)
    return TrainState(
        train_id="train1",
        correctness={},
        best=best,
        baseline_val_acc=0.5,
        baseline_versions={},
        **kwargs,
    )


def _pack(task_type: str, unit_ids: list[str]) -> CasePack:
    items = tuple(CaseItem(u, u, "q", "x", "y") for u in unit_ids)
    return CasePack(task_type, items)


def _record(task_type: str) -> EvolutionRecord:
    return EvolutionRecord(
        status=EvolutionStatus.NO_CHANGE,
        target_kind=TargetKind.SKILL,
        target_file=f"{task_type}.md",
        original="A",
        evolved="A",
        task_type=task_type,
    )


def _ladder_units(scope: StepScope, pack: CasePack) -> set[str]:
    spec = gate_spec(scope, _record("a"), pack)
    return {u for _, ids in spec.ladder.families for u in ids}


def test_a_family_shown_in_an_earlier_step_never_reenters_a_ladder() -> None:
    # d0 was in an earlier step's case pack (shown with its answer); d1 is in this step's.
    scope = _scope(_state(shown_units=["a-d0"]))
    ladder = _ladder_units(scope, _pack("a", ["a-d1"]))
    assert "a-d1" not in ladder
    assert "a-d0" not in ladder
    assert ladder == {"a-d2", "a-d3", "a-d4", "a-d5", "a-v0", "a-v1", "a-v2"}


def test_unseen_families_all_stay_in_the_ladder() -> None:
    scope = _scope(_state())
    assert len(_ladder_units(scope, _pack("a", []))) == 9


class _Reports:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def method(self) -> Any:
        """A stand-in for StepScope.write_report that records (task type, action, summary)."""

        def write_report(scope: StepScope, task_type: str, action: str, summary: str, **_: Any):
            self.rows.append((task_type, action, summary))

        return write_report


def _run_evolve_phase(
    monkeypatch: pytest.MonkeyPatch, state: TrainState, packs: dict[str, CasePack]
) -> tuple[list[str], _Reports]:
    evolved: list[str] = []

    async def fake_evolve(scope: StepScope, task_type: str, pack: CasePack) -> EvolutionRecord:
        evolved.append(task_type)
        return _record(task_type)

    reports = _Reports()
    monkeypatch.setattr(step_module, "evolve_skill", fake_evolve)
    monkeypatch.setattr(step_module, "_log_evolution", lambda scope, record: None)
    monkeypatch.setattr(StepScope, "write_report", reports.method())
    scope = _scope(state)
    diagnosis = DiagnosisResult(diagnoses=(), skill_packs=packs)
    anyio.run(evolve_phase, scope, diagnosis)
    return evolved, reports


def test_evolving_records_the_case_pack_as_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(shown_units=["b-d5"])
    packs = {"a": _pack("a", ["a-d1", "a-d2"]), "b": _pack("b", ["b-d0"])}
    evolved, _ = _run_evolve_phase(monkeypatch, state, packs)
    assert evolved == ["a", "b"]
    assert state.shown_units == ["a-d1", "a-d2", "b-d0", "b-d5"]


def test_a_task_type_on_probation_proposes_no_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    probation = Probation(
        task_type="a",
        target_file="a.md",
        anchor_text="A0",
        accepted_version="v4",
        test=GateState(BetState(wins=3, losses=0), n=3, units=3, horizon=9, threshold=20.0),
        families=(),
        edits=(),
        epoch=2,
        step=0,
    )
    state = _state(probations={"a": probation})
    packs = {"a": _pack("a", ["a-d1"]), "b": _pack("b", ["b-d0"])}
    evolved, reports = _run_evolve_phase(monkeypatch, state, packs)
    assert evolved == ["b"]
    skipped = [r for r in reports.rows if r[0] == "a"]
    assert skipped == [
        (
            "a",
            SkipAction.SKIP_PROBATION,
            "on probation since e2 s0 (v4): no edit until its epoch-end verdict",
        )
    ]
    assert state.shown_units == ["b-d0"]  # a's pack was never put in front of the evolver
    assert [r[1] for r in reports.rows] == [SkipAction.SKIP_PROBATION, SkipAction.SKIP_NO_CHANGE]


def test_a_continued_test_never_observes_a_family_twice() -> None:
    from app.harness.training.train_state import Continuation

    test = GateState(BetState(wins=3, losses=1), n=4, units=4, horizon=9, threshold=20.0)
    carried = Continuation("a", "a.md", "A", "A2", (), test, ("a-d0", "a-d1"), 1, 0)
    scope = _scope(_state(shown_units=["a-d5"], continuations={"a": carried}))
    # this step's pack was not shown (the type proposed nothing): its families stay fresh
    spec = gate_spec(scope, _record("a"), _pack("a", ["a-d2"]))
    ladder = {u for _, ids in spec.ladder.families for u in ids}
    assert ladder == {"a-d2", "a-d3", "a-d4", "a-v0", "a-v1", "a-v2"}
    assert spec.resume == test and spec.whole_horizon == 0
