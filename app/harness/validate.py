"""Gate validation: several task types' candidates checked at once under one limit (§6.3 C).

Each spec walks its ladder in fixed-size chunks and folds results into its sequential gate
strictly in ladder order, so the outcome does not depend on which model call finished first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from app.errors import RunFailed
from app.harness import killpoints
from app.harness.agent_prompts import AgentPrompts
from app.harness.gate_ladder import BaselineCache
from app.harness.inference import AgentSettings, answer_question, prediction_row
from app.harness.log import HarnessLog
from app.harness.question_units import unit_correctness_view
from app.harness.telemetry import current_run_id
from core.evolution.gate import GateDecision, GateParams, SequentialGate
from core.types import Question, QuestionUnit

GATE_CHUNK = 8  # fixed, so the set of evaluated units never depends on concurrency


@dataclass(frozen=True)
class GateSpec:
    task_type: str
    target_file: str
    candidate: AgentPrompts
    ladder: tuple[str, ...]  # unit ids in ladder order, already truncated to n_max
    gate_run_id: str


@dataclass(frozen=True)
class ValidationOutcome:
    task_type: str
    decision: GateDecision
    gate_run_id: str
    candidate_correctness: dict[str, bool]  # unit_id -> correct, units used
    baseline_correctness: dict[str, bool]
    quadrants: dict[str, list[str]] = field(default_factory=dict)
    error_share: float = 0.0
    candidate_questions: dict[str, bool] = field(default_factory=dict)  # question_id -> correct

    @property
    def cand_acc(self) -> float | None:
        used = self.candidate_correctness
        return sum(used.values()) / len(used) if used else None

    @property
    def base_acc(self) -> float | None:
        used = self.baseline_correctness
        return sum(used.values()) / len(used) if used else None


class Validator:
    """Runs baseline (once, cached) and candidate units for a step's gate specs."""

    def __init__(self, *, provider, base_prompts: AgentPrompts, units: Mapping[str, QuestionUnit],
                 log: HarnessLog, settings: AgentSettings, params: GateParams,
                 baseline_cache: BaselineCache, guard_err: float) -> None:
        self.provider = provider
        self.base_prompts = base_prompts
        self.units = units
        self.log = log
        self.settings = settings
        self.params = params
        self.cache = baseline_cache
        self.guard_err = guard_err
        self.limiter = anyio.CapacityLimiter(settings.concurrency)

    async def _answer(self, questions: Sequence[Question], prompts: AgentPrompts,
                      run_id: str) -> dict[str, Any]:
        token = current_run_id.set(run_id)
        out: dict[str, Any] = {}

        async def one(q: Question) -> None:
            async with self.limiter:
                out[q.question_id] = await answer_question(self.provider, prompts, q,
                                                           self.settings)

        try:
            async with anyio.create_task_group() as tg:
                for q in questions:
                    tg.start_soon(one, q)
        finally:
            current_run_id.reset(token)
        ordered = [out[q.question_id] for q in questions if q.question_id in out]
        self.log.upsert_predictions([prediction_row(p, run_id) for p in ordered])
        return out

    async def ensure_baseline(self, unit_ids: Sequence[str], run_id: str) -> None:
        sv, pv = self.base_prompts.skills_version, self.base_prompts.prompts_version
        missing = [u for u in dict.fromkeys(unit_ids) if self.cache.get(sv, pv, u) is None]
        if not missing:
            return
        questions = [q for u in missing for q in self.units[u].questions]
        preds = await self._answer(questions, self.base_prompts, run_id)
        view = unit_correctness_view([self.units[u] for u in missing],
                                     {k: p.correct for k, p in preds.items()})
        self.cache.put_many(sv, pv, view)

    async def gate_one(self, spec: GateSpec) -> ValidationOutcome:
        sv, pv = self.base_prompts.skills_version, self.base_prompts.prompts_version
        gate = SequentialGate(self.params)
        cand_view: dict[str, bool] = {}
        base_view: dict[str, bool] = {}
        by_question: dict[str, bool] = {}
        errors = total = 0
        for start in range(0, len(spec.ladder), GATE_CHUNK):
            chunk = spec.ladder[start:start + GATE_CHUNK]
            questions = [q for u in chunk for q in self.units[u].questions]
            preds = await self._answer(questions, spec.candidate, spec.gate_run_id)
            killpoints.reached("gate")
            errors += sum(p.stop_reason == "error" for p in preds.values())
            total += len(preds)
            chunk_view = unit_correctness_view([self.units[u] for u in chunk],
                                               {k: p.correct for k, p in preds.items()})
            for unit_id in chunk:
                base = bool(self.cache.get(sv, pv, unit_id))
                cand = chunk_view[unit_id]
                cand_view[unit_id], base_view[unit_id] = cand, base
                for q in self.units[unit_id].questions:
                    by_question[q.question_id] = preds[q.question_id].correct
                gate.observe(unit_id, base, cand)
                if gate.done:
                    break
            if total and errors / total > self.guard_err:
                raise RunFailed(f"gate {spec.gate_run_id}: {errors}/{total} candidate answers "
                                f"failed with provider errors (> {self.guard_err:.0%}); aborting "
                                "the step. The checkpoint is intact: rerun with --resume.")
            if gate.done:
                break
        decision = gate.finish(exhausted=not gate.done)
        return ValidationOutcome(
            task_type=spec.task_type, decision=decision, gate_run_id=spec.gate_run_id,
            candidate_correctness=cand_view, baseline_correctness=base_view,
            quadrants=quadrants(base_view, cand_view),
            error_share=errors / total if total else 0.0, candidate_questions=by_question)

    async def validate(self, specs: Sequence[GateSpec],
                       baseline_run_id: str) -> dict[str, ValidationOutcome]:
        await self.ensure_baseline([u for s in specs for u in s.ladder], baseline_run_id)
        outcomes: dict[str, ValidationOutcome] = {}

        async def run(spec: GateSpec) -> None:
            outcomes[spec.task_type] = await self.gate_one(spec)

        async with anyio.create_task_group() as tg:
            for spec in specs:
                tg.start_soon(run, spec)
        return dict(sorted(outcomes.items()))


def quadrants(base: Mapping[str, bool], cand: Mapping[str, bool]) -> dict[str, list[str]]:
    """Units by (baseline, candidate): both_right, both_wrong, win (W), loss (L)."""
    names = {(True, True): "both_right", (False, False): "both_wrong", (False, True): "win",
             (True, False): "loss"}
    out: dict[str, list[str]] = {n: [] for n in names.values()}
    for unit_id in base:
        if unit_id in cand:
            out[names[(base[unit_id], cand[unit_id])]].append(unit_id)
    return out


def with_skill(prompts: AgentPrompts, target_file: str, text: str) -> AgentPrompts:
    """The same prompts with one skill file replaced: the candidate the gate evaluates."""
    return replace(prompts, skills={**prompts.skills, target_file: text},
                   skills_version=f"{prompts.skills_version}+cand")
