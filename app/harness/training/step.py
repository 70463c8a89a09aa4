"""One training step (docs/architecture.md#a-step): rollout, diagnose, evolve, gate, settle."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import anyio
from loguru import logger

from app.errors import RunFailed
from app.harness.rollouts import memory
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.model_io import no_tool_calls, record_attempts
from app.harness.rollouts.session import Session
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.skills.activation import run_activation
from app.harness.training.bundle_check import BundleCheck, check_bundle
from app.harness.training.continuation import carried_record, goes_on, pools_evidence
from app.harness.training.observation import (
    current_step_activation,
    current_step_flags,
    evidence_rows,
    quadrant_rows,
    step_report,
    write_step_report,
)
from app.harness.training.screen import proposal_prompts, screen, training_validator
from app.harness.training.train_state import (
    Continuation,
    GatedCandidate,
    PooledTest,
    Probation,
    TrainContext,
    TrainState,
    new_test_params,
)
from app.harness.training.triage_probe import probe_skill_gaps
from app.harness.training.validate import GateSpec, ValidationOutcome, Validator, with_skill
from app.harness.training.vocabulary import Count, SkipAction, StepAction, step_prefix
from app.harness.workspace import killpoints
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import HarnessLog, RunStatus
from app.harness.workspace.harness_log.gates import DiagnosisRecord, ShadowGateRecord
from app.harness.workspace.harness_log.gates import EvolutionRecord as LoggedEvolution
from app.harness.workspace.harness_log.predictions import PredictionTrajectory
from core.concurrency import fan_out
from core.evolution.acceptance import draw_coin
from core.evolution.budget import edit_budget_at, resolve_skill_file
from core.evolution.diagnose import (
    JUDGE,
    NOWHERE_CATEGORIES,
    RAW_NOTE,
    CasePack,
    Diagnosis,
    DiagnosisCall,
    DiagnosisResult,
    Failure,
    FailureTally,
    build_packs,
    diagnose_failures,
    raw_diagnoses,
    with_earlier_failures,
    with_worked_examples,
)
from core.evolution.edits import (
    Edit,
    RejectedEdit,
    apply_edits,
    consolidate_appendix,
    edit_set_key,
)
from core.evolution.evolve import (
    EvolutionRecord,
    EvolutionStatus,
    TargetKind,
    evolve,
    skill_prompt,
)
from core.evolution.gate import (
    AcceptanceStrategy,
    GateAction,
    GateDecision,
    GateState,
    GateStopReason,
    Pair,
    SequentialGate,
)
from core.evolution.relevance import added_text, relevance_scores
from core.evolution.repeats import candidate_key
from core.evolution.triage import (
    RULE_ANSWERED,
    RULE_ANSWERED_NOT_A_FAULT,
    judge_adds_nothing,
    overrule_judge,
    triage_failures,
)
from core.stats import CALIBRATION_MAX_HORIZON
from core.types import Question

# A rejected edit joins the evolver's rejected list only with evidence against it (`shows_harm`)
MIN_LOSSES_TO_BLACKLIST = 2

# What each gate decision adds to the epoch's counts (a rejection also counts Count.REJECTED).
DECISION_COUNTS = {
    GateAction.ACCEPT: Count.ACCEPTED,
    GateAction.ACCEPT_PROVISIONAL: Count.PROVISIONAL,
    GateAction.REJECT: Count.GATE_REJECTED,
}


@dataclass(frozen=True)
class StepScope:
    """What every phase of one step reads: the run, where the step is, the versions it
    started from and the edit budget. Only `state` changes during the step (phase D)."""

    ctx: TrainContext
    state: TrainState
    epoch: int
    step: int
    prompts: AgentPrompts  # the current versions when the step began
    budget: int  # edits per evolution at this point of the run

    @classmethod
    def begin(cls, ctx: TrainContext, state: TrainState, epoch: int, step: int) -> StepScope:
        budget = edit_budget_at(
            state.global_step,
            ctx.total_steps,
            ctx.config.edit_budget_start,
            ctx.config.edit_budget_end,
        )
        return cls(ctx, state, epoch, step, ctx.session.agent_prompts(), budget)

    @property
    def prefix(self) -> str:
        """Every run id of the step starts with it (a retried step clears them all)."""
        return step_prefix(self.state.train_id, self.epoch, self.step)

    def run_id(self, name: str) -> str:
        return self.prefix + name

    def write_report(
        self,
        task_type: str,
        action: StepAction,
        summary: str,
        *,
        base_version: str,
        record: EvolutionRecord | None = None,
        outcome: ValidationOutcome | None = None,
        new_version: str | None = None,
        tally: FailureTally | None = None,
    ) -> None:
        """The step report of one task type (JSON file and step_reports row)."""
        report = step_report(
            run_id=self.state.train_id,
            epoch=self.epoch,
            step=self.step,
            task_type=task_type,
            action=action,
            budget=self.budget,
            base_version=base_version,
            record=record,
            outcome=outcome,
            new_version=new_version,
            summary=summary + (_notes(tally, action) if tally else ""),
            diagnosis=tally.to_dict() if tally else None,
        )
        write_step_report(self.ctx.root, self.ctx.log, report, self.run_id("report"))


def _notes(tally: FailureTally, action: StepAction) -> str:
    """What every step report's summary adds: contradictory diagnoses, and the failures no
    edit can fix (a "no skill gaps" skip's summary already lists every category)."""
    nowhere = "" if action == SkipAction.SKIP_NO_SKILL_GAPS else tally.nowhere_note()
    return tally.contradiction_note() + nowhere


async def run_step(
    ctx: TrainContext, state: TrainState, epoch: int, step: int, batch: Sequence[Question]
) -> None:
    ctx.log.clear_runs_with_prefix(step_prefix(state.train_id, epoch, step))  # no duplicate rows
    scope = StepScope.begin(ctx, state, epoch, step)
    rollout_id = scope.run_id("rollout")
    result = await ctx.session.infer(
        list(batch),
        rollout_id,
        "rollout",
        prompts=scope.prompts,
        label=f"e{epoch} s{step} rollout",
        parent_run_id=state.train_id,
    )
    state.correctness.update(result.correctness)
    flags = []
    if ctx.config.skill_mode == "tool" and no_tool_calls(ctx.log, rollout_id):
        flags.append("no_tool_calls")
        logger.warning(
            "e{} s{}: skill_mode = 'tool' but no rollout called a tool, so the agent "
            "never read its skill file",
            epoch,
            step,
        )
    current_step_flags.set(tuple(flags))
    if ctx.config.skill_mode in ("tool", "progressive"):
        current_step_activation.set(run_activation(ctx.log, rollout_id))
    diagnosis = await diagnose_batch(
        ctx, scope.prompts, batch, scope.prefix, judge_history=f"{state.train_id}-"
    )
    state.system_packs += [diagnosis.system_pack] if diagnosis.system_pack else []
    state.tool_packs += diagnosis.tool_packs.values()
    await gate_step(scope, diagnosis)
    current_step_flags.set(())
    current_step_activation.set(None)
    state.cooldown = {t: n - 1 for t, n in sorted(state.cooldown.items()) if n > 1}
    ctx.baseline_cache.save(ctx.session.paths.baseline_cache)
    killpoints.reached("step_end")  # after the step's writes, before its checkpoint


# -- diagnosis -------------------------------------------------------------------------------
class DiagnosisContext(Protocol):
    """What diagnosis reads: a TrainContext, or the slice `diagnose RUN_ID` builds."""

    session: Session
    config: RunConfig
    templates: dict[str, str]

    @property
    def log(self) -> HarnessLog: ...


def rollout_rows(log: HarnessLog, run_id: str) -> dict[str, PredictionTrajectory]:
    """A rollout's predictions by question id (what `failures_from_rows` reads)."""
    return {r.question_id: r for r in log.trajectories(run_id, by_question=False)}


def failures_from_rows(
    prompts: AgentPrompts, batch: Sequence[Question], rows: Mapping[str, PredictionTrajectory]
) -> tuple[list[Failure], list[tuple[Question, str]]]:
    """The batch's failures (with the prompts the agent saw) and its successes (question,
    prediction), from the rollout's prediction rows."""
    failures, successes = [], []
    for q in batch:
        row = rows[q.question_id]
        if row.correct:
            successes.append((q, row.prediction))
            continue
        tools = "\n".join(f"- {t.name}: {t.description}" for t in prompts.tools_for(q))
        failures.append(
            Failure(
                question=q,
                prediction=row.prediction or "",
                stop_reason=row.stop_reason,
                steps=tuple(json.loads(row.steps_json)),
                system=prompts.system,
                skill=prompts.skill_text(q.task_type),
                tools=tools or "(none)",
            )
        )
    return failures, successes


async def diagnose_batch(
    ctx: DiagnosisContext,
    prompts: AgentPrompts,
    batch: Sequence[Question],
    prefix: str,
    rollout_run_id: str | None = None,
    judge_history: str | None = None,
) -> DiagnosisResult:
    """The batch's diagnoses and case packs. `judge_history`: the run-id prefix of the
    training whose earlier diagnoses `diagnosis_judge = "auto"` reads (None: not a training
    step, so "auto" asks the judge as "all" does)."""
    rows = rollout_rows(ctx.log, rollout_run_id or prefix + "rollout")
    failures, successes = failures_from_rows(prompts, batch, rows)
    asks = judge_answered(ctx, judge_history)
    triaged = triage_failures(failures, judge_answered=asks)  # rules first; the judge: the rest
    skipped = sum(d.decided_by == RULE_ANSWERED for d in triaged.decided)
    if skipped and ctx.config.diagnosis_judge == "auto":
        logger.info(
            "{}diag: the judge's first verdicts in this training were all overruled; {} "
            "answered failure(s) are skill gaps by rule, without a judge call "
            '(diagnosis_judge = "auto")',
            prefix,
            skipped,
        )
    calls: list[DiagnosisCall] = []
    with calls_logged_as(prefix + "diag"):
        judged = await diagnose_failures(
            ctx.session.providers["judge"],
            ctx.templates["diagnose_failure"],
            triaged.for_judge,
            limiter=anyio.CapacityLimiter(ctx.config.concurrency),
            ladder=ctx.session.model_io.ladder("judge"),
            role="judge",
            calls=calls,
        )
    record_attempts(
        ctx.log,
        prefix + "diag",
        "diagnosis",
        [(c.question_id, c.attempts) for c in sorted(calls, key=lambda c: c.question_id)],
    )
    degraded = sum(d.degraded for d in judged)
    parse_errors = {d.question_id: d.rationale for d in judged if d.degraded}
    c = ctx.config
    if judged and degraded / len(judged) > c.diagnosis_degraded_max_share:
        problem = (
            f"{degraded}/{len(judged)} diagnoses did not parse (more than "
            f"diagnosis_degraded_max_share = {c.diagnosis_degraded_max_share:g}); "
            f"judge_model {c.judge_model} makes them"
        )
        if c.on_degraded_diagnoses == "abort":
            raise RunFailed(f"{problem}, and on_degraded_diagnoses = 'abort' stops the run")
        logger.warning(
            "{}: evolving from the raw failure packs instead (on_degraded_diagnoses = 'raw_packs')",
            problem,
        )
        judged = raw_diagnoses(judged)
    judged = overrule_judge(failures, judged)  # a judge verdict the log disproves
    if c.triage_probe:
        judged = await probe_skill_gaps(ctx, prompts, failures, judged, prefix + "probe")
    diagnoses = in_batch_order(failures, [*triaged.decided, *judged])
    _warn_contradictions(prefix + "diag", diagnoses)
    _warn_nowhere(prefix + "diag", diagnoses)
    ctx.log.add_diagnoses(
        [
            DiagnosisRecord(
                run_id=prefix + "diag",
                question_id=d.question_id,
                task_type=d.task_type,
                category=d.category,
                target=d.target,
                rationale=d.rationale,
                degraded=int(d.degraded),
                parse_error=parse_errors.get(d.question_id),
                decided_by=d.decided_by,
            )
            for d in diagnoses
        ],
    )
    packs = build_packs(diagnoses, failures, successes)
    # a distillation's teacher answered some of these diagnosis-pool failures right: worked
    # examples in the packs (app/distill.py); none in a workspace that was never distilled
    ids = [f.question.question_id for f in failures]
    return with_worked_examples(packs, memory.teacher_examples(ctx.log, ids))


def judge_answered(ctx: DiagnosisContext, judge_history: str | None) -> bool:
    """Whether the judge is asked about answered failures (config `diagnosis_judge`; for
    "auto", from the training's diagnoses in the log, so a resumed step decides alike)."""
    mode = ctx.config.diagnosis_judge
    if mode == "auto" and judge_history is not None:
        counts = ctx.log.deciders(judge_history)
        return not judge_adds_nothing(
            counts.get(JUDGE, 0), counts.get(RULE_ANSWERED_NOT_A_FAULT, 0)
        )
    return mode != "unanswered"


def in_batch_order(failures: Sequence[Failure], diagnoses: Sequence[Diagnosis]) -> list[Diagnosis]:
    by_id = {d.question_id: d for d in diagnoses}
    return [by_id[f.question.question_id] for f in failures]


def _warn_nowhere(run_id: str, diagnoses: Sequence[Diagnosis]) -> None:
    """One line for a batch's failures that no edit can fix (no evolution acts on them)."""
    odd = [d for d in diagnoses if d.category in NOWHERE_CATEGORIES]
    if not odd:
        return
    kinds = FailureTally.of(odd).by_category
    shown = ", ".join(f"{d.question_id} ({d.category}, {d.decided_by})" for d in odd[:3])
    more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
    logger.warning(
        "{}: {} of {} failures no edit can fix ({}): {}{}; they are counted in the step reports "
        "and in `report`",
        run_id,
        len(odd),
        len(diagnoses),
        ", ".join(f"{k} {n}" for k, n in kinds.items()),
        shown,
        more,
    )


def _warn_contradictions(run_id: str, diagnoses: Sequence[Diagnosis]) -> None:
    """One line for all of a batch's self-contradictory diagnoses: they are kept and routed by
    their category (core/evolution/diagnose.py build_packs), but the judge is not reliable."""
    odd = [d for d in diagnoses if d.contradiction is not None]
    if not odd:
        return
    shown = ", ".join(f"{d.question_id} ({d.contradiction})" for d in odd[:3])
    more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
    logger.warning(
        "{}: {} of {} diagnoses contradict themselves: {}{}; each is routed by its category",
        run_id,
        len(odd),
        len(diagnoses),
        shown,
        more,
    )


# -- the four gate phases -------------------------------------------------------------------
async def gate_step(scope: StepScope, diagnosis: DiagnosisResult) -> None:
    ctx, state = scope.ctx, scope.state
    records = refuse_contaminated(scope, await evolve_phase(scope, diagnosis), diagnosis)
    records = refuse_repeats(scope, records, diagnosis)
    if not records:
        return
    specs = [
        gate_spec(scope, rec, diagnosis.skill_packs.get(tt, CasePack(tt, ())))
        for tt, rec in records.items()
    ]
    for spec in specs:
        ctx.session.register(spec.gate_run_id, "gate", spec.candidate, parent_run_id=state.train_id)
    validator = training_validator(ctx, scope.prompts, ctx.draw_samples)
    outcomes = await validator.validate(specs, scope.run_id("gatebase"))
    for spec in specs:
        ctx.log.finish_run(
            spec.gate_run_id, RunStatus.DONE, {"action": outcomes[spec.task_type].decision.action}
        )
    # only a sequential test stops before its ladder's end; minibatch and accept_all observe
    # what they observe by design, and checking further would price them as another rule
    ladders = {
        spec.task_type: spec.unit_ids
        for spec in specs
        if spec.strategy == AcceptanceStrategy.EPROCESS
    }
    checks = await line_check_phase(scope, validator, records, outcomes, ladders)
    ctx.session.recorder.flush()
    for task_type in sorted(outcomes):  # phase D: alphabetical, the only writer of state
        settle(
            scope,
            records[task_type],
            outcomes[task_type],
            diagnosis.tally(task_type),
            checks[task_type],
        )


async def line_check_phase(
    scope: StepScope,
    validator: Validator,
    records: Mapping[str, EvolutionRecord],
    outcomes: Mapping[str, ValidationOutcome],
    ladders: Mapping[str, Sequence[str]],
) -> dict[str, BundleCheck]:
    """Phase C': the line check of each accepted bundle (bundle_check.py); `[gate]
    bundle_check = false` keeps every accepted bundle whole."""
    ctx = scope.ctx
    variants: list[str] = []

    def register(run_id: str, prompts: AgentPrompts) -> None:
        ctx.session.register(run_id, "gate", prompts, parent_run_id=scope.state.train_id)
        variants.append(run_id)

    async def check(task_type: str) -> BundleCheck:
        record, outcome = records[task_type], outcomes[task_type]
        if not ctx.config.gate.bundle_check:
            return BundleCheck(record)
        # a provisional accept's unreached families are its probation's
        final = outcome.decision.action == GateAction.ACCEPT
        further = ladders.get(task_type, ()) if final else ()
        return await check_bundle(
            validator, record, outcome, outcome.gate_run_id, register, further
        )

    task_types = sorted(outcomes)
    checks = dict(zip(task_types, await fan_out(check, task_types), strict=True))
    for run_id in variants:  # each variant's answers are all in: the run is over
        ctx.log.finish_run(run_id, RunStatus.DONE, {"line_check": True})
    return checks


async def evolve_phase(scope: StepScope, diagnosis: DiagnosisResult) -> dict[str, EvolutionRecord]:
    """Phase A: evolve each eligible task type concurrently; report the skipped ones."""
    state = scope.state
    eligible = []
    carried: list[str] = []
    for task_type in scope.ctx.task_types:
        tally = diagnosis.tally(task_type)
        if state.cooldown.get(task_type, 0) > 0:
            _skip(
                scope,
                task_type,
                SkipAction.SKIP_COOLDOWN,
                f"cooling down for {state.cooldown[task_type]} more step(s)",
                tally=tally,
            )
        elif on_probation(state, task_type):
            _skip_on_probation(scope, task_type, tally)
        elif task_type in state.continuations:
            carried.append(task_type)  # its test goes on (below): no new edit meanwhile
        elif task_type not in diagnosis.skill_packs:
            action = (
                SkipAction.SKIP_NO_SKILL_GAPS if tally.failures else SkipAction.SKIP_NO_FAILURES
            )
            _skip(scope, task_type, action, tally.describe(), tally=tally)
        else:
            eligible.append(task_type)

    packs = {t: evolver_pack(scope, diagnosis.skill_packs[t]) for t in eligible}

    async def evolve_one(task_type: str) -> EvolutionRecord:
        return await evolve_skill(scope, task_type, packs[task_type])

    for task_type in eligible:  # their packs go into the evolver's prompts, answers included
        state.show(packs[task_type].unit_ids)
        state.remember_failures(diagnosis.skill_packs[task_type])

    with calls_logged_as(scope.run_id("evolve")):
        evolved = await fan_out(evolve_one, eligible)
    kept = {}
    for task_type, record in zip(eligible, evolved, strict=True):
        _log_evolution(scope, record)
        if record.changed:
            kept[task_type] = record
        else:
            action = (
                SkipAction.SKIP_NO_CHANGE
                if record.status == EvolutionStatus.NO_CHANGE
                else SkipAction.EVOLVE_FAILED
            )
            _skip(
                scope,
                task_type,
                action,
                f"evolver produced no applicable change ({record.status})",
                record,
                tally=diagnosis.tally(task_type),
            )
    for task_type in carried:
        if (carried_on := carry_on(scope, task_type)) is not None:
            kept[task_type] = carried_on
        else:
            summary = "the edit whose test was going on no longer applies: rejected"
            _skip(
                scope,
                task_type,
                SkipAction.SKIP_NO_CHANGE,
                summary,
                tally=diagnosis.tally(task_type),
            )
    return dict(sorted(kept.items()))


def evolver_pack(scope: StepScope, pack: CasePack) -> CasePack:
    """The pack the evolver is shown: the step's failures, and with `carry_failures` those
    of the task type's earlier packs whose question's latest outcome is still a failure."""
    if not scope.ctx.config.carry_failures:
        return pack
    earlier = scope.state.shown_failures.get(pack.target, [])
    correctness = scope.state.correctness
    return with_earlier_failures(pack, earlier, lambda q: correctness.get(q) is False)


def carry_on(scope: StepScope, task_type: str) -> EvolutionRecord | None:
    """The record a pending continuation is tested with this step: its edit on the file as it
    is now (re-applied if the slow update changed the file since). An edit that no longer
    applies ends the test: rejected, blacklisted."""
    state = scope.state
    c = state.continuations[task_type]
    current = scope.prompts.skills.get(c.target_file, "")
    evolved = c.evolved
    if current != c.original:
        text, reports = apply_edits(current, c.edits, c.target_file)
        evolved = consolidate_appendix(text, scope.ctx.config.appendix_max_lines)[0]
        if not all(r.applied for r in reports) or evolved == current:
            del state.continuations[task_type]
            _blacklist(scope, task_type, c.edits, "its file changed before its test went on")
            return None
    return carried_record(
        task_type, c.target_file, current, evolved, c.edits, scope.prompts.skills_version
    )


async def evolve_skill(scope: StepScope, task_type: str, pack: CasePack) -> EvolutionRecord:
    ctx, prompts, budget = scope.ctx, scope.prompts, scope.budget
    target = resolve_skill_file(task_type, prompts.skills)
    original = prompts.skills.get(target, "")
    prompt = skill_prompt(
        ctx.templates["evolve_skill"],
        task_type=task_type,
        file=target,
        skill=original,
        pack=pack,
        budget=budget,
        rejected=scope.state.rejected_edits(task_type),
    )
    raw = sum(f.note == RAW_NOTE for f in pack.failures)
    summary = (
        f"{len(pack.failures)} failures"
        + (f" ({raw} raw, undiagnosed)" if raw else "")
        + f", {len(pack.successes)} successes, budget {budget}"
    )

    async def proposal(request: str) -> EvolutionRecord:
        record = await evolve(
            ctx.session.providers["evolver"],
            request,
            original=original,
            target_file=target,
            budget=budget,
            target_kind=TargetKind.SKILL,
            task_type=task_type,
            source_version=prompts.skills_version,
            request_summary=summary,
            ladder=ctx.session.model_io.ladder("evolver"),
        )
        if not record.changed:
            return record
        consolidated, _ = consolidate_appendix(record.evolved, ctx.config.appendix_max_lines)
        return replace(record, evolved=consolidated)

    records = await fan_out(proposal, proposal_prompts(prompt, ctx.config.evolve_proposals))
    return await screen(
        ctx,
        records,
        sorted(pack.unit_ids),
        lambda r: with_skill(prompts, r.target_file, r.evolved),
        lambda index: scope.run_id(f"screen-{task_type}-{index}"),
        scope.state.train_id,
    )


def refuse_contaminated(
    scope: StepScope, records: dict[str, EvolutionRecord], diagnosis: DiagnosisResult
) -> dict[str, EvolutionRecord]:
    """Before any gate: a candidate whose added text holds a held-out question's words or
    answer (core/evolution/contamination.py) is refused and reported; the rest go on. Its
    edits are not blacklisted: the blacklist is shown to the evolver, and would carry the
    held-out text into its next prompts."""
    kept = {}
    for task_type, record in records.items():
        sign = scope.ctx.held_out.check(added_text(record.original, record.evolved))
        if sign is None:
            kept[task_type] = record
            continue
        logger.warning(
            "e{} s{} {}: refused, {}", scope.epoch, scope.step, task_type, sign.describe()
        )
        scope.state.count(Count.CONTAMINATION)
        scope.write_report(
            task_type,
            SkipAction.CONTAMINATION,
            f"refused before the gate: {sign.describe()}",
            base_version=scope.prompts.skills_version,
            record=record,
            tally=diagnosis.tally(task_type),
        )
    return kept


def refuse_repeats(
    scope: StepScope, records: dict[str, EvolutionRecord], diagnosis: DiagnosisResult
) -> dict[str, EvolutionRecord]:
    """Before any gate: a candidate equal to one whose test already ended (the same base file
    and the same edits once normalised, core/evolution/repeats.py `candidate_key`) is not
    gated again; it is reported (`skip_repeat`, with the earlier candidate's step and outcome)
    and costs no gate call. The rest go on.

    Why skipping is right and not a loss of evidence: the earlier test was that candidate's
    one test at the gate's level α. A fresh test of the same candidate would give the same
    hypothesis a second chance to cross the level (two tests at α each accept a null candidate
    with probability up to 2α, k re-proposals up to (k+1)α), so its verdict stands. Evidence
    from a re-proposal is pooled only where a test has not ended: a test that stopped for want
    of a signal is kept, not recorded here, and goes on over units it never observed when the
    same edits come again (continuation.py `pools_evidence`; it is found by its exact edit set
    first), as does a test carried over to a later step. The same edits on a different base
    file (the task type's file changed: an accept, a rollback, momentum guidance) are another
    candidate and are gated. The candidates whose test ended live in `TrainState.gated`, which
    the checkpoint holds, so a resumed run skips exactly what the run it resumes would have."""
    kept = {}
    for task_type, record in records.items():
        earlier = repeat_of(scope.state, record)
        if earlier is None:
            kept[task_type] = record
            continue
        summary = (
            f"not gated: the same edits on the same file were gated in e{earlier.epoch} "
            f"s{earlier.step} ({earlier.outcome}); its verdict stands"
        )
        logger.info("e{} s{} {:<10} {}", scope.epoch, scope.step, task_type, summary)
        scope.state.count(Count.REPEATS)
        scope.write_report(
            task_type,
            SkipAction.SKIP_REPEAT,
            summary,
            base_version=scope.prompts.skills_version,
            record=record,
            tally=diagnosis.tally(task_type),
        )
    return kept


def repeat_of(state: TrainState, record: EvolutionRecord) -> GatedCandidate | None:
    """The earlier candidate whose test ended for good that `record` repeats, or None (also
    for a test that goes on: a carried-over one, or a kept test of the same edit set)."""
    if record.task_type in state.continuations or pooled_test(state, record) is not None:
        return None
    key = candidate_key(record.original, record.applied())
    return state.gated.get(record.task_type, {}).get(key)


def remember_gated(scope: StepScope, record: EvolutionRecord, outcome: str) -> None:
    """Record a candidate whose test ended for good (`refuse_repeats` reads it)."""
    key = candidate_key(record.original, record.applied())
    scope.state.gated.setdefault(record.task_type, {})[key] = GatedCandidate(
        scope.epoch, scope.step, outcome
    )


def ladder_relevance(scope: StepScope, record: EvolutionRecord) -> dict[str, float] | None:
    """Stage-1 family id -> relevance to the edit's added text (None: `ladder_order` is
    "shuffle"). Texts only: the questions of the task type's diagnosis families."""
    if scope.ctx.config.gate.ladder_order != "relevance":
        return None
    families = scope.ctx.gate_pools.families.get(record.task_type, {}).get("diagnosis", {})
    units = scope.ctx.units
    docs = {
        family: "\n".join(q.question for u in ids if u in units for q in units[u].questions)
        for family, ids in families.items()
    }
    return relevance_scores(docs, added_text(record.original, record.evolved))


def gate_spec(scope: StepScope, record: EvolutionRecord, pack: CasePack) -> GateSpec:
    """Phase B: the ladder minus the families of every unit the evolver has been shown in
    this run (this step's case pack and every earlier one), truncated to n_max. While the task
    type is on probation its validation families stay reserved for that probation."""
    c = scope.ctx.config
    task_type = record.task_type
    carried = scope.state.continuations.get(task_type)
    pooled = None if carried else pooled_test(scope.state, record)
    # A continued test's edit was not written from this step's pack (nothing was evolved), but
    # it must never observe a family twice; nor may a pooled test (a re-proposed edit set).
    seen = carried.used_units if carried else pack.unit_ids
    used = pooled.used_units if pooled else ()
    pools = scope.ctx.gate_pools
    changed = c.gate.draws_for == "changed" and bool(pools.draws)
    ladder = pools.ladder_for(
        task_type,
        {*seen, *used, *scope.state.shown_units},
        key=scope.prefix,
        with_stage2=task_type not in scope.state.probations,
        relevance=ladder_relevance(scope, record),
        in_rounds=changed,
    )
    if changed:  # n_max counts questions; the draws stay within the exact level's horizon
        ladder, segment = pools.fitted(ladder, c.gate.n_max, CALIBRATION_MAX_HORIZON)
    else:
        segment = ladder.truncated(c.gate.n_max)
    resume = carried.test if carried else (pooled.test if pooled else None)
    params = new_test_params(c.gate, scope.state) if resume is None else None
    if params is not None and len(segment.families) > params.n_max:
        params = replace(params, n_max=len(segment.families))
    gate_run_id = scope.run_id(f"gate-{task_type}")
    return GateSpec(
        params=params,
        task_type=task_type,
        target_file=record.target_file,
        candidate=with_skill(scope.prompts, record.target_file, record.evolved),
        ladder=segment,
        gate_run_id=gate_run_id,
        strategy=AcceptanceStrategy(c.gate.strategy),
        minibatch_k=c.gate.minibatch_k,
        # a test whose ladder n_max cut is one test over the whole ladder (continuation.py)
        whole_horizon=len(ladder.families) if resume is None else 0,
        resume=resume,
        redraws=pools.redraws(ladder) if changed else {},
        coin=draw_coin(c.seed, gate_run_id),
    )


def pooled_test(state: TrainState, record: EvolutionRecord) -> PooledTest | None:
    """The kept test of this edit set, when the evolver proposed the same set before."""
    return state.pooled.get(record.task_type, {}).get(edit_set_key(record.applied()))


def settle(
    scope: StepScope,
    record: EvolutionRecord,
    outcome: ValidationOutcome,
    tally: FailureTally,
    check: BundleCheck,
) -> None:
    """Phase D for one task type: evidence, report, then accept (the bundle the line check
    kept) or reject."""
    ctx, state, epoch, step = scope.ctx, scope.state, scope.epoch, scope.step
    d = outcome.decision
    ctx.log.add_gate_evidence(
        evidence_rows(outcome.gate_run_id, outcome.task_type, outcome.decision, epoch, step)
    )
    ctx.log.add_quadrants(quadrant_rows(outcome, scope.run_id("report"), epoch, step))
    ctx.log.add_shadow_gate(shadow_row(scope, outcome))
    paths = ctx.session.refresh_paths()
    new_version = None
    carried = state.continuations.pop(record.task_type, None)
    key = edit_set_key(record.applied())
    pooled = None if carried else state.pooled.get(record.task_type, {}).pop(key, None)
    origin = step_prefix(state.train_id, carried.epoch, carried.step) if carried else scope.prefix
    note = f"; went on from {pooled.segments} earlier test(s) of the same edits" if pooled else ""
    if d.accepted:
        new_version = accept(scope, check.record, outcome)
        state.final_accepts += d.action == GateAction.ACCEPT  # a provisional one: at its keep
        ctx.log.set_result_version(origin + "evolve", record.task_type, new_version)
        remember_gated(scope, record, d.action)  # the bundle as proposed: never gated again
        note += _drop_lines(scope, record, check)
        record = check.record
    elif goes_on(d, outcome.test_state, carried.test.n if carried else 0):
        note = _continue_later(scope, record, outcome, carried)
    elif carried is None and pools_evidence(d, outcome.test_state):
        note += _pool(scope, record, outcome, key, pooled)
    else:
        reason = f"gate {d.stop_reason} (W={d.W}, L={d.L})"
        if shows_harm(d):
            _blacklist(scope, record.task_type, record.applied(), reason)
        else:  # unproven, not refuted: the evolver may still bundle these edits with others
            state.count(Count.REJECTED)
            note += "; not blacklisted: no evidence against it"
        remember_gated(scope, record, f"{d.action}: {reason}")
    state.count(DECISION_COUNTS[d.action])
    summary = (
        f"{d.action}: W={d.W} L={d.L} e={d.e_value:.2f} over {d.n_used} families, "
        f"{d.units_used} units ({d.stop_reason})"
        + _coin_note(d)
        + _skipped_note(outcome.skipped_draws)
        + (f"; continued from e{carried.epoch} s{carried.step}" if carried else "")
        + note
    )
    logger.info("e{} s{} {:<10} {}", epoch, step, record.task_type, summary)
    scope.write_report(
        record.task_type,
        d.action,
        summary,
        base_version=paths.skills_version,
        record=record,
        outcome=outcome,
        new_version=new_version,
        tally=tally,
    )


def _drop_lines(scope: StepScope, record: EvolutionRecord, check: BundleCheck) -> str:
    """The edits the line check dropped join the blacklist (after the accept, which clears
    it); returns the step report's note."""
    if not check.dropped:
        return ""
    reason = "the line check: left out, it turned more lost questions right than won ones wrong"
    scope.state.reject(
        record.task_type,
        [
            RejectedEdit.from_edit(record.task_type, e, reason, scope.epoch, scope.step)
            for e in check.dropped
        ],
    )
    return check.note(len(record.applied()))


def _coin_note(decision: GateDecision) -> str:
    if decision.chance >= 1.0:
        return ""
    return (
        f"; one win short of the final look's level, accepted on the test's coin "
        f"(chance {decision.chance:.2f}; core/evolution/gate.py)"
    )


def _skipped_note(skipped_draws: int) -> str:
    if not skipped_draws:
        return ""
    return f"; {skipped_draws} of the families were draws not asked for (no answer changed): ties"


def shows_harm(decision: GateDecision) -> bool:
    """Whether a rejected candidate's test found evidence against it: it stopped on harm, or it
    lost at least two questions and more than it won. Only such edits join the rejected list
    the evolver is shown. An edit rejected for want of evidence (ties, a lone loss, more wins
    than losses that did not reach the level) is unproven, not refuted: blacklisting it kept
    true rules out of every later bundle (bench/acceptance.py, 72 units, default setting, 5
    worlds: final test 0.722 with every rejection blacklisted, 0.830 with this rule). The same
    candidate is still never tested twice (`refuse_repeats`); the gate's per-test bound is
    unchanged."""
    if decision.stop_reason == GateStopReason.HARM:
        return True
    return decision.L >= MIN_LOSSES_TO_BLACKLIST and decision.L > decision.W


def _blacklist(scope: StepScope, task_type: str, edits: Sequence[Edit], reason: str) -> None:
    """A final rejection: the edits join the task type's blacklist."""
    scope.state.reject(
        task_type,
        [RejectedEdit.from_edit(task_type, e, reason, scope.epoch, scope.step) for e in edits],
    )
    scope.state.count(Count.REJECTED)


def _continue_later(
    scope: StepScope,
    record: EvolutionRecord,
    outcome: ValidationOutcome,
    carried: Continuation | None,
) -> str:
    """Keep a rejected segment's test for a later step; returns the step report's note."""
    test = outcome.test_state
    assert test is not None  # `goes_on` keeps only an eprocess test, which has a state
    used = {*(carried.used_units if carried else ()), *outcome.observed_units}
    scope.state.continuations[record.task_type] = Continuation(
        task_type=record.task_type,
        target_file=record.target_file,
        original=record.original,
        evolved=record.evolved,
        edits=record.applied(),
        test=test,
        used_units=tuple(sorted(used)),
        epoch=carried.epoch if carried else scope.epoch,
        step=carried.step if carried else scope.step,
        segments=carried.segments + 1 if carried else 1,
    )
    scope.state.count(Count.CONTINUED)
    scope.state.count(Count.REJECTED)
    return f"; goes on in a later step ({test.n}/{test.horizon} families)"


def _pool(
    scope: StepScope,
    record: EvolutionRecord,
    outcome: ValidationOutcome,
    key: str,
    pooled: PooledTest | None,
) -> str:
    """Keep a test that stopped for want of a signal under its edit set's `key`, not
    blacklisting its edits: when the evolver proposes the same set again, the test goes on
    (continuation.py `pools_evidence`)."""
    test = outcome.test_state
    assert test is not None  # `pools_evidence` keeps only an eprocess test, which has a state
    used = {*(pooled.used_units if pooled else ()), *outcome.observed_units}
    segments = pooled.segments + 1 if pooled else 1
    scope.state.pooled.setdefault(record.task_type, {})[key] = PooledTest(
        test=test, used_units=tuple(sorted(used)), segments=segments
    )
    scope.state.count(Count.POOLED)
    scope.state.count(Count.REJECTED)
    return "; kept: its test goes on if the same edits are proposed again"


def accept(scope: StepScope, record: EvolutionRecord, outcome: ValidationOutcome) -> str:
    session, state = scope.ctx.session, scope.state
    draws, draw_samples = scope.ctx.gate_pools.draws, scope.ctx.draw_samples
    files = session.version_files("skills", session.paths.skills_version)
    files[record.target_file] = record.evolved
    version = session.publish_version(
        "skills",
        files,
        source=f"gate:{outcome.decision.action}",
        run_id=state.train_id,
        description=f"e{scope.epoch} s{scope.step} {record.task_type}: "
        f"{len(record.applied())} edit(s), W={outcome.decision.W} L={outcome.decision.L}",
    )
    task_type = record.task_type
    if outcome.decision.action == GateAction.ACCEPT_PROVISIONAL:
        # Only reachable when the task type was not on probation: its stage 2 (the reserved
        # validation families) is what the probation will test.
        state.probations[task_type] = Probation(
            task_type=task_type,
            target_file=record.target_file,
            anchor_text=record.original,
            accepted_version=version,
            test=provisional_test(outcome.decision),
            # the validation re-run answers each question once: a draw waits for no probation
            families=tuple(f for f in outcome.stage2 if not draws.keys() & f[1]),
            edits=record.applied(),
            epoch=scope.epoch,
            step=scope.step,
        )
    state.correctness.update(
        (q, ok) for q, ok in outcome.candidate_questions.items() if q not in draw_samples
    )
    state.rejected.pop(task_type, None)
    state.mark_changed(task_type)
    return version


def provisional_test(decision: GateDecision) -> GateState:
    """The test a provisional accept's probation goes on with."""
    if decision.continuation is None:
        raise ValueError(f"a {decision.strategy} provisional accept carries no test to go on")
    return decision.continuation


def shadow_row(scope: StepScope, outcome: ValidationOutcome) -> ShadowGateRecord:
    """What the other bet would have decided on the same evidence (analysis only)."""
    params = scope.ctx.gate_params
    d0 = outcome.decision
    other = "fixed" if params.lambda_strategy == "mixture" else "mixture"
    gate = SequentialGate(
        replace(params, lambda_strategy=other),
        horizon=max(d0.horizon, 1),
        stage1=max(d0.horizon, 1),
    )
    families: dict[str, list[Pair]] = {}
    for e in d0.evidence:
        families.setdefault(e.family, []).append((e.unit_id, e.base, e.cand))
    for family, pairs in families.items():
        gate.observe_family(family, pairs)
        if gate.done:
            break
    d = gate.finish(exhausted=True)
    return ShadowGateRecord(
        run_id=scope.run_id("report"),
        epoch=scope.epoch,
        step=scope.step,
        task_type=outcome.task_type,
        strategy=other,
        action=d.action,
        e_value=d.e_value,
        n_used=d.n_used,
    )


def _skip(
    scope: StepScope,
    task_type: str,
    action: SkipAction,
    summary: str,
    record: EvolutionRecord | None = None,
    *,
    tally: FailureTally,
) -> None:
    scope.state.count(Count.COOLDOWN if action == SkipAction.SKIP_COOLDOWN else Count.SKIPPED)
    scope.write_report(
        task_type,
        action,
        summary,
        base_version=scope.prompts.skills_version,
        record=record,
        tally=tally,
    )


def on_probation(state: TrainState, task_type: str) -> bool:
    """Whether the task type's edits wait: a provisional accept of it awaits its verdict."""
    return task_type in state.probations


def _skip_on_probation(scope: StepScope, task_type: str, tally: FailureTally) -> None:
    """No edit while a provisional accept awaits its verdict: the epoch-end test compares the
    file with the file before that accept, so a later edit would be tested with it, and a
    rollback would discard the later edit too (app/harness/training/slow_update.py)."""
    p = scope.state.probations[task_type]
    _skip(
        scope,
        task_type,
        SkipAction.SKIP_PROBATION,
        f"on probation since e{p.epoch} s{p.step} ({p.accepted_version}): no edit until its "
        "epoch-end verdict",
        tally=tally,
    )


def _log_evolution(scope: StepScope, record: EvolutionRecord) -> None:
    run_id = scope.run_id("evolve")
    plain = record.to_dict()
    scope.ctx.log.add_evolutions(
        [
            LoggedEvolution(
                run_id=run_id,
                epoch=scope.epoch,
                step=scope.step,
                task_type=record.task_type,
                target_kind=record.target_kind,
                target_file=record.target_file,
                status=record.status,
                request_summary=record.request_summary,
                edits_json=json.dumps(plain["edits"]),
                apply_report_json=json.dumps(plain["apply_report"]),
                clip_json=json.dumps(plain["clip"]),
                source_version=record.source_version,
                result_version=None,  # set by `settle` once the gate accepts it
                parse_errors_json=json.dumps(record.parse_errors),
                attempts_json=json.dumps(plain["attempts"]),
            )
        ],
    )
    record_attempts(
        scope.ctx.log,
        run_id,
        "edits",
        [(f"{record.target_kind}:{record.task_type or record.target_file}", plain["attempts"])],
    )
