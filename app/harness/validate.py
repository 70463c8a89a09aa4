"""Gate validation: several task types' candidates checked at once under one limit.

Each spec walks its ladder of families in chunks of about GATE_CHUNK units and folds results
into its acceptance rule strictly in ladder order, so the outcome does not depend on which model
call finished first. The baseline is run lazily, chunk by chunk, for units the cache lacks.

Acceptance strategies (config `[gate] strategy`), all through this one path and all recorded in
`gate_evidence`:
- "eprocess" (default): the sequential gate of core/evolution/gate.py;
- "mcnemar": a fixed one-sided exact McNemar test at α = 1/e_confirm on the family outcomes
  of the whole ladder (up to n_max families);
- "minibatch": GEPA's rule: k units (one from each of the ladder's first k families), accept if
  the candidate's number right is strictly higher than the baseline's;
- "accept_all": accept without evaluating anything.
The last three exist to be compared with the first (bench/acceptance.py).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from app.errors import RunFailed
from app.harness import killpoints
from app.harness.agent_prompts import AgentPrompts
from app.harness.gate_ladder import BaselineCache, Family, Ladder
from app.harness.inference import AgentSettings, answer_question, prediction_row
from app.harness.log import HarnessLog
from app.harness.question_units import unit_correctness_view
from app.harness.telemetry import calls_logged_as
from core.concurrency import fan_out
from core.evolution.gate import (
    OUTCOME_NAMES,
    GateAction,
    GateDecision,
    GateEndedBy,
    GateParams,
    SequentialGate,
    family_outcome,
)
from core.stats import mcnemar_exact
from core.types import Question, QuestionUnit, StopReason

GATE_CHUNK = 8  # units per chunk, fixed, so the evaluated set never depends on concurrency


@dataclass(frozen=True)
class GateSpec:
    task_type: str
    target_file: str
    candidate: AgentPrompts
    ladder: Ladder  # families in ladder order, already truncated to n_max
    gate_run_id: str
    strategy: str = "eprocess"
    minibatch_k: int = 3

    @property
    def unit_ids(self) -> tuple[str, ...]:
        return tuple(u for _, ids in self.ladder.families for u in ids)


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

    @property
    def cand_acc(self) -> float | None:
        used = self.candidate_correctness
        return sum(used.values()) / len(used) if used else None

    @property
    def base_acc(self) -> float | None:
        used = self.baseline_correctness
        return sum(used.values()) / len(used) if used else None


def chunks(families: Sequence[Family], size: int = GATE_CHUNK) -> list[list[Family]]:
    """Consecutive families, each chunk holding at least `size` units (the last may hold
    fewer)."""
    out: list[list[Family]] = []
    current: list[Family] = []
    units = 0
    for fam in families:
        current.append(fam)
        units += len(fam[1])
        if units >= size:
            out.append(current)
            current, units = [], 0
    if current:
        out.append(current)
    return out


class _Tally:
    """What one gate run saw: per-unit outcomes, per-question answers, provider errors."""

    def __init__(self) -> None:
        self.cand: dict[str, bool] = {}
        self.base: dict[str, bool] = {}
        self.by_question: dict[str, bool] = {}
        self.answers: dict[str, bool] = {}
        self.errors = self.total = 0

    @property
    def error_share(self) -> float:
        return self.errors / self.total if self.total else 0.0

    def record(
        self, pairs: Sequence[tuple[str, bool, bool]], units: Mapping[str, QuestionUnit]
    ) -> None:
        """Keep what the rule actually used (units evaluated but not observed are left out)."""
        for unit_id, base, cand in pairs:
            self.cand[unit_id], self.base[unit_id] = cand, base
            for q in units[unit_id].questions:
                self.by_question[q.question_id] = self.answers[q.question_id]


class Validator:
    """Runs baseline (lazily, cached) and candidate units for a step's gate specs."""

    def __init__(
        self,
        *,
        provider,
        base_prompts: AgentPrompts,
        units: Mapping[str, QuestionUnit],
        log: HarnessLog,
        settings: AgentSettings,
        params: GateParams,
        baseline_cache: BaselineCache,
        guard_err: float,
    ) -> None:
        self.provider = provider
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
            out[q.question_id] = await answer_question(self.provider, prompts, q, self.settings)

        with calls_logged_as(run_id):
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
        view = unit_correctness_view(
            [self.units[u] for u in missing], {k: p.correct for k, p in preds.items()}
        )
        self.cache.put_many(sv, pv, view)

    async def _evaluate(
        self, spec: GateSpec, families: Sequence[Family], tally: _Tally
    ) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
        """Run baseline (missing only) and candidate on `families`; (family, pairs) in order.
        Each strategy passes the families it really uses to `tally.record`."""
        unit_ids = [u for _, ids in families for u in ids]
        await self.ensure_baseline(unit_ids, self.baseline_run_id)
        questions = [q for u in unit_ids for q in self.units[u].questions]
        preds = await self._answer(questions, spec.candidate, spec.gate_run_id)
        killpoints.reached("gate")
        tally.errors += sum(p.stop_reason == StopReason.ERROR for p in preds.values())
        tally.total += len(preds)
        view = unit_correctness_view(
            [self.units[u] for u in unit_ids], {k: p.correct for k, p in preds.items()}
        )
        sv, pv = self.base_prompts.skills_version, self.base_prompts.prompts_version
        out = []
        for family, ids in families:
            pairs = [(u, bool(self.cache.get(sv, pv, u)), view[u]) for u in ids]
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
        decide = {
            "eprocess": self._eprocess,
            "mcnemar": self._mcnemar,
            "minibatch": self._minibatch,
            "accept_all": self._accept_all,
        }[spec.strategy]
        decision, stage2 = await decide(spec, tally)
        return ValidationOutcome(
            task_type=spec.task_type,
            decision=decision,
            gate_run_id=spec.gate_run_id,
            candidate_correctness=tally.cand,
            baseline_correctness=tally.base,
            quadrants=quadrants(tally.base, tally.cand),
            error_share=tally.error_share,
            candidate_questions=tally.by_question,
            stage2=stage2,
        )

    async def _eprocess(self, spec: GateSpec, tally: _Tally):
        ladder = spec.ladder
        gate = SequentialGate(self.params, horizon=len(ladder.families), stage1=len(ladder.stage1))
        # Stage 1 first, and stage 2 only if stage 1 did not settle it: a provisional accept
        # at the end of stage 1 leaves stage 2 untouched for its probation.
        for part in (ladder.stage1, ladder.stage2):
            for chunk in chunks(part):
                for family, pairs in await self._evaluate(spec, chunk, tally):
                    gate.observe_family(family, pairs)
                    tally.record(pairs, self.units)
                    if gate.done:
                        break
                if gate.done:
                    break
            if gate.done:
                break
        decision = replace(gate.finish(exhausted=not gate.done), strategy="eprocess")
        stage2 = ladder.stage2 if decision.action == GateAction.ACCEPT_PROVISIONAL else ()
        return decision, stage2

    async def _mcnemar(self, spec: GateSpec, tally: _Tally):
        observed = []
        for chunk in chunks(spec.ladder.families):
            observed += await self._evaluate(spec, chunk, tally)
        for _, pairs in observed:
            tally.record(pairs, self.units)
        outcomes = [family_outcome(pairs) for _, pairs in observed]
        w, l = outcomes.count(1), outcomes.count(-1)  # noqa: E741 - W and L
        p_value = mcnemar_exact(w, l, "greater")
        accepted = p_value <= self.params.alpha
        return _fixed_decision(
            "mcnemar",
            accepted,
            observed,
            e_value=1.0 / max(p_value, 1e-300),
            reason=f"p={p_value:.4g}",
        ), ()

    async def _minibatch(self, spec: GateSpec, tally: _Tally):
        # k units from k different families (GEPA samples k examples at random; the ladder's
        # family order is already a seeded shuffle, and the member is a seeded pick).
        pick = random.Random(spec.gate_run_id)
        units = [(f, (pick.choice(ids),)) for f, ids in spec.ladder.families][: spec.minibatch_k]
        observed = await self._evaluate(spec, units, tally) if units else []
        for _, pairs in observed:
            tally.record(pairs, self.units)
        base = sum(b for _, pairs in observed for _, b, _ in pairs)
        cand = sum(c for _, pairs in observed for _, _, c in pairs)
        return _fixed_decision(
            "minibatch",
            cand > base,
            observed,
            e_value=float(cand - base),
            reason=f"{cand} vs {base} right",
        ), ()

    async def _accept_all(self, spec: GateSpec, tally: _Tally):
        return _fixed_decision("accept_all", True, [], e_value=1.0, reason="accept_all"), ()

    async def validate(
        self, specs: Sequence[GateSpec], baseline_run_id: str
    ) -> dict[str, ValidationOutcome]:
        self.baseline_run_id = baseline_run_id
        outcomes = await fan_out(self.gate_one, specs)
        return {o.task_type: o for o in sorted(outcomes, key=lambda o: o.task_type)}


def _fixed_decision(
    strategy: str,
    accepted: bool,
    observed: Sequence[tuple[str, Sequence[tuple[str, bool, bool]]]],
    e_value: float,
    reason: str,
) -> GateDecision:
    """A one-shot rule's decision, with the same per-unit evidence rows as the e-process."""
    wins = losses = 0
    evidence = []
    for n, (family, pairs) in enumerate(observed, start=1):
        g = family_outcome(pairs)
        wins, losses = wins + (g == 1), losses + (g == -1)
        for unit_id, base, cand in pairs:
            evidence.append(
                {
                    "unit_id": unit_id,
                    "family": family,
                    "base": base,
                    "cand": cand,
                    "outcome": OUTCOME_NAMES[g],
                    "e_win": e_value,
                    "e_harm": 1.0,
                    "W": wins,
                    "L": losses,
                    "n": n,
                }
            )
    n = len(observed)
    return GateDecision(
        action=GateAction.ACCEPT if accepted else GateAction.REJECT,
        W=wins,
        L=losses,
        n_used=n,
        e_value=e_value,
        e_harm=1.0,
        stop_reason=f"{strategy}: {reason}",
        delta_hat=(wins - losses) / n if n else 0.0,
        delta_shrunk=0.0,
        evidence=tuple(evidence),
        ended_by=GateEndedBy.EXHAUSTED,
        threshold=0.0,
        horizon=n,
        units_used=len(evidence),
        strategy=strategy,
    )


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
