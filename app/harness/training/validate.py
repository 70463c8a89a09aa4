"""Gate validation: several task types' candidates checked at once under one limit.

Each spec's acceptance rule (config `[gate] strategy`; the rules are pure, in
core/evolution/acceptance.py) asks for its ladder's families in chunks of about GATE_CHUNK
units; the Validator keeps only the I/O: it answers the questions of each chunk (the baseline
lazily, for units the cache lacks), pairs the outcomes, hands them to the rule in ladder order
(so the outcome does not depend on which model call finished first), tallies what the rule
used and records the rule's decision in `gate_evidence`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from app.errors import RunFailed
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import (
    AgentSettings,
    prediction_row,
    rollout_question,
    serving_agent,
)
from app.harness.rollouts.question_units import (
    is_scored,
    unit_correctness_view,
    unit_outcome_view,
)
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.training.continuation import SegmentRule, first_segment_gate, resumed_gate
from app.harness.training.gate_ladder import BaselineCache, Family, Ladder
from app.harness.workspace import killpoints
from app.harness.workspace.harness_log import HarnessLog
from core.concurrency import fan_out
from core.evolution.acceptance import AcceptanceRule, EProcessRule, RuleSetup, make_rule
from core.evolution.gate import AcceptanceStrategy, GateDecision, GateParams, GateState, Pair
from core.protocols import LLMProvider
from core.types import Prediction, Question, QuestionUnit, StopReason

BaseLookup = Callable[[str], bool]


def _scores(preds: Mapping[str, Prediction]) -> dict[str, float]:
    """question_id -> score, for answers with a verdict."""
    return {k: p.score for k, p in preds.items() if p.score is not None}


@dataclass(frozen=True)
class GateSpec:
    task_type: str
    target_file: str
    candidate: AgentPrompts
    ladder: Ladder  # families in ladder order, already truncated to n_max
    gate_run_id: str
    strategy: AcceptanceStrategy = AcceptanceStrategy.EPROCESS
    minibatch_k: int = 3
    # An eprocess test that may go on in later steps (app/harness/training/continuation.py):
    # the families of its whole ladder when n_max cut it (0: the ladder is the whole test), or
    # the state of the test this segment continues.
    whole_horizon: int = 0
    resume: GateState | None = None
    # the task type's checker gives scores (question_units.is_scored): the gate compares them
    scored: bool = False
    # this test's own parameters when they differ from the run's (a run-level level:
    # train_state.py `new_test_params`); None: the Validator's
    params: GateParams | None = None
    # `[gate] draws_for = "changed"`: the ladder's draws, drawn only where an earlier draw of
    # the question changed its answer (core/evolution/acceptance.py `RuleSetup.redraws`)
    redraws: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    # the eprocess test's coin for its final look (core/evolution/acceptance.py `draw_coin`)
    coin: float | None = None

    @property
    def unit_ids(self) -> tuple[str, ...]:
        return tuple(u for _, ids in self.ladder.families for u in ids)

    def rule(self, params: GateParams) -> AcceptanceRule:
        """The acceptance rule of this gate run."""
        setup = self.rule_setup(params)
        if self.strategy == AcceptanceStrategy.EPROCESS:
            if self.resume is not None:
                return SegmentRule(setup, resumed_gate(params, self.resume))
            if self.whole_horizon > len(self.ladder.families):
                gate = first_segment_gate(params, self.ladder, self.whole_horizon)
                return SegmentRule(setup, gate)
        return make_rule(self.strategy, setup)

    def rule_setup(self, params: GateParams) -> RuleSetup:
        """What the acceptance rule is given; the gate run id seeds any random pick."""
        return RuleSetup(
            stage1=self.ladder.stage1,
            stage2=self.ladder.stage2,
            params=params,
            seed=self.gate_run_id,
            minibatch_k=self.minibatch_k,
            scored=self.scored,
            redraws=self.redraws,
            coin=self.coin,
        )


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
    stage2: tuple[Family, ...] = ()  # families a provisional accept leaves to its probation
    test_state: GateState | None = None  # an eprocess test's state (continuation.py)
    imputed_units: int = 0  # no verdict on a side: counted as the candidate's worst case
    observed_units: tuple[str, ...] = ()  # every unit the rule used, imputed ones included
    skipped_draws: int = 0  # gate draws not asked for (no earlier answer changed): ties

    @property
    def cand_acc(self) -> float | None:
        used = self.candidate_correctness
        return sum(used.values()) / len(used) if used else None

    @property
    def base_acc(self) -> float | None:
        used = self.baseline_correctness
        return sum(used.values()) / len(used) if used else None


class _Tally:
    """What one gate run saw: per-unit outcomes, per-question answers, provider errors."""

    def __init__(self) -> None:
        self.cand: dict[str, bool] = {}
        self.base: dict[str, bool] = {}
        self.by_question: dict[str, bool] = {}
        self.answers: dict[str, bool] = {}
        self.unit_correct: dict[str, bool] = {}  # candidate pass/fail of every unit evaluated
        self.errors = self.total = self.imputed = 0
        self.observed: list[str] = []

    @property
    def error_share(self) -> float:
        return self.errors / self.total if self.total else 0.0

    def record(
        self, pairs: Sequence[Pair], units: Mapping[str, QuestionUnit], base_correct: BaseLookup
    ) -> None:
        """Keep what the rule actually used (units evaluated but not observed are left out;
        units without a verdict are counted, and the gate took them as the candidate's worst
        case, core/evolution/gate.py `unit_difference`). cand/base are pass/fail."""
        for unit_id, base, cand in pairs:
            self.observed.append(unit_id)
            if base is None or cand is None:
                self.imputed += 1
                continue
            self.cand[unit_id] = self.unit_correct[unit_id]
            self.base[unit_id] = base_correct(unit_id)
            for q in units[unit_id].questions:
                self.by_question[q.question_id] = self.answers[q.question_id]


class Validator:
    """Runs baseline (lazily, cached) and candidate units for a step's gate specs."""

    def __init__(
        self,
        *,
        provider: LLMProvider,
        base_prompts: AgentPrompts,
        units: Mapping[str, QuestionUnit],
        log: HarnessLog,
        settings: AgentSettings,
        params: GateParams,
        baseline_cache: BaselineCache,
        guard_err: float,
        draw_samples: Mapping[str, int] | None = None,
    ) -> None:
        self.provider = provider
        # a gate draw's question id -> its sample index (gate_ladder.py, `[gate] draws`)
        self.draw_samples = draw_samples or {}
        self.base_prompts = base_prompts
        self.units = units
        self.log = log
        self.settings = settings
        self.params = params
        self.cache = baseline_cache
        self.guard_err = guard_err
        self.limiter = anyio.CapacityLimiter(settings.concurrency)
        self.baseline_run_id = ""

    async def _answer(
        self, questions: Sequence[Question], prompts: AgentPrompts, run_id: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}  # in the order the answers arrive

        async def answer(q: Question) -> None:
            settings = running
            if q.question_id in self.draw_samples:  # answered afresh: its own sample index
                settings = replace(
                    running, sample=running.sample + self.draw_samples[q.question_id]
                )
            out[q.question_id] = await rollout_question(self.provider, prompts, q, settings)

        running = self.settings
        with calls_logged_as(run_id):
            async with serving_agent(self.settings, self.provider) as running:
                await fan_out(answer, questions, limiter=self.limiter)
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
        units = [self.units[u] for u in missing]
        correct = {k: p.correct for k, p in preds.items()}
        view = unit_correctness_view(units, correct)
        self.cache.put_many(sv, pv, view, unit_outcome_view(units, correct, _scores(preds)))

    async def units_right(
        self, unit_ids: Sequence[str], prompts: AgentPrompts, run_id: str
    ) -> dict[str, bool]:
        """unit_id -> whether `prompts` answer the unit right (a unit without a verdict is
        not right); for the line check of an accepted bundle (bundle_check.py)."""
        questions = [q for u in unit_ids for q in self.units[u].questions]
        preds = await self._answer(questions, prompts, run_id)
        units = [self.units[u] for u in unit_ids]
        view = unit_correctness_view(units, {k: p.correct for k, p in preds.items()})
        return {u: bool(view.get(u)) for u in unit_ids}

    async def _evaluate(
        self, spec: GateSpec, families: Sequence[Family], tally: _Tally
    ) -> list[tuple[str, list[Pair]]]:
        """Run baseline (missing only) and candidate on `families`; (family, pairs) in order.
        `gate_one` passes the families the rule really used to `tally.record`."""
        unit_ids = [u for _, ids in families for u in ids]
        await self.ensure_baseline(unit_ids, self.baseline_run_id)
        questions = [q for u in unit_ids for q in self.units[u].questions]
        preds = await self._answer(questions, spec.candidate, spec.gate_run_id)
        killpoints.reached("gate")
        tally.errors += sum(p.stop_reason == StopReason.ERROR for p in preds.values())
        tally.total += len(preds)
        units = [self.units[u] for u in unit_ids]
        correct = {k: p.correct for k, p in preds.items()}
        tally.unit_correct.update(unit_correctness_view(units, correct))
        # pass/fail units: exactly their correctness, as always; scored ones: their scores
        view = unit_outcome_view(units, correct, _scores(preds))
        sv, pv = self.base_prompts.skills_version, self.base_prompts.prompts_version
        out: list[tuple[str, list[Pair]]] = []
        for family, ids in families:
            pairs: list[Pair] = [(u, self.cache.outcome(sv, pv, u), view[u]) for u in ids]
            out.append((family, pairs))
        tally.answers.update({k: p.correct for k, p in preds.items()})
        if tally.error_share > self.guard_err:
            raise RunFailed(
                f"gate {spec.gate_run_id}: {tally.errors}/{tally.total} candidate "
                f"answers failed with provider errors (> {self.guard_err:.0%}, "
                "gate.guard_err); aborting the step. The checkpoint is intact: "
                "rerun with --resume."
            )
        return out

    async def gate_one(self, spec: GateSpec) -> ValidationOutcome:
        tally = _Tally()
        # known from the benchmark before any outcome: a scored task type's test is held to
        # Ville's level (core/evolution/gate.py family_mean)
        scored = any(is_scored(self.units[u]) for u in spec.unit_ids if u in self.units)
        rule = replace(spec, scored=spec.scored or scored).rule(spec.params or self.params)
        while families := rule.request():
            for _, pairs in rule.observe(await self._evaluate(spec, families, tally)):
                tally.record(pairs, self.units, self._base_correct)
        verdict = rule.verdict()
        # draws counted as ties unevaluated are used by the test: a later segment skips them
        skipped = rule.skipped if isinstance(rule, EProcessRule) else []
        tally.observed += skipped
        return ValidationOutcome(
            task_type=spec.task_type,
            decision=verdict.decision,
            gate_run_id=spec.gate_run_id,
            candidate_correctness=tally.cand,
            baseline_correctness=tally.base,
            quadrants=quadrants(tally.base, tally.cand),
            error_share=tally.error_share,
            candidate_questions=tally.by_question,
            stage2=verdict.reserved,
            test_state=rule.gate.state() if isinstance(rule, EProcessRule) else None,
            imputed_units=tally.imputed,
            observed_units=tuple(tally.observed),
            skipped_draws=len(skipped),
        )

    def _base_correct(self, unit_id: str) -> bool:
        return bool(self.baseline_correct(unit_id))

    def baseline_correct(self, unit_id: str) -> bool | None:
        """The baseline's pass/fail on the unit (None: not answered, or no verdict)."""
        sv, pv = self.base_prompts.skills_version, self.base_prompts.prompts_version
        return self.cache.get(sv, pv, unit_id)

    async def validate(
        self, specs: Sequence[GateSpec], baseline_run_id: str
    ) -> dict[str, ValidationOutcome]:
        self.baseline_run_id = baseline_run_id
        outcomes = await fan_out(self.gate_one, specs)
        return {o.task_type: o for o in sorted(outcomes, key=lambda o: o.task_type)}


def quadrants(base: Mapping[str, bool], cand: Mapping[str, bool]) -> dict[str, list[str]]:
    """Units by (baseline, candidate): both_right, both_wrong, win (W), loss (L)."""
    names = {
        (True, True): "both_right",
        (False, False): "both_wrong",
        (False, True): "win",
        (True, False): "loss",
    }
    out: dict[str, list[str]] = {n: [] for n in names.values()}
    for unit_id in base:
        if unit_id in cand:
            out[names[(base[unit_id], cand[unit_id])]].append(unit_id)
    return out


def with_skill(prompts: AgentPrompts, target_file: str, text: str) -> AgentPrompts:
    """The same prompts with one skill file replaced: the candidate the gate evaluates."""
    return replace(
        prompts,
        skills={**prompts.skills, target_file: text},
        skills_version=f"{prompts.skills_version}+cand",
    )
