"""The end-of-epoch slow update: ten ordered phases (docs/architecture.md#the-slow-update).

The test pool never feeds the gate, best, early stop or any tuning: it is only evaluated and
reported (phase 9).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from loguru import logger

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.question_units import (
    build_units,
    is_scored,
    unit_accuracy,
    unit_outcome_view,
)
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.training.contamination_guard import refused_as_contamination
from app.harness.training.momentum import run_slow_momentum
from app.harness.training.observation import evidence_rows, write_epoch_report
from app.harness.training.screen import proposal_prompts, screen
from app.harness.training.train_state import (
    Best,
    CurvePoint,
    Probation,
    TrainContext,
    TrainState,
    new_test_params,
)
from app.harness.training.vocabulary import Count
from app.harness.workspace import killpoints
from app.harness.workspace.harness_log.gates import DualMetricRecord, HoldoutRecord
from app.harness.workspace.workspace import update_best, update_manifest
from core.concurrency import fan_out
from core.evolution.budget import edit_budget_at
from core.evolution.diagnose import CasePack, merge_packs
from core.evolution.edits import RejectedEdit
from core.evolution.evolve import EvolutionRecord, TargetKind, evolve, prompt_file_prompt
from core.evolution.gate import (
    GateDecision,
    GateParams,
    ProbationTest,
    ProbationVerdict,
    SequentialGate,
)
from core.evolution.relevance import added_text
from core.evolution.repeats import candidate_key
from core.types import InferenceResult, Question

# An epoch report's counts, in this order; the second group only when not zero.
EPOCH_REPORT_COUNTS = (
    Count.ACCEPTED,
    Count.PROVISIONAL,
    Count.REJECTED,
    Count.ROLLED_BACK,
    Count.KEPT,
    Count.SKIPPED,
    Count.COOLDOWN,
    Count.PROMPTS_KEPT,
    Count.PROMPTS_REVERTED,
)
EPOCH_REPORT_COUNTS_IF_ANY = (
    Count.CONTINUED,
    Count.POOLED,
    Count.DESCRIPTIONS_ACCEPTED,
    Count.DESCRIPTIONS_REJECTED,
    Count.CONTAMINATION,
    Count.REPEATS,
)
PROMPTS_SUBJECT = "_prompts"  # gate_evidence.task_type of a prompt change's test


def slow_prefix(train_id: str, epoch: int) -> str:
    return f"{train_id}-e{epoch}-slow-"


async def run_slow_update(ctx: TrainContext, state: TrainState, epoch: int) -> None:
    prefix = slow_prefix(state.train_id, epoch)
    ctx.log.clear_runs_with_prefix(prefix)
    session = ctx.session
    r, r_prompts, verdicts = await validate_epoch(ctx, state, epoch, prefix)
    # 6. momentum for task types changed this epoch
    await run_slow_momentum(ctx, state, epoch, prefix)
    # 6b. skill descriptions from R's activation failures (progressive mode only)
    if ctx.config.skill_mode == "progressive":
        from app.harness.training.descriptions import evolve_descriptions

        await evolve_descriptions(ctx, state, epoch, prefix, prefix + "val")
    # 7. system and tool prompt evolution from the epoch's packs
    before_prompts = session.paths.prompts_version
    changed = (
        await evolve_prompts(ctx, state, epoch, prefix) if ctx.config.evolve_prompts else False
    )
    # 8. R2 when prompts changed: kept (and considered for best) only if it wins the gate's
    # paired test against R, else reverted
    r2, prompts_test = (
        await settle_prompt_change(ctx, state, r, before_prompts, epoch, prefix)
        if changed
        else (None, None)
    )
    # 9. epoch report and held-out evaluation
    holdout = await holdout_four_way(ctx, state, prefix) if ctx.config.holdout_each_epoch else {}
    report_epoch(ctx, state, epoch, r, r2, holdout, verdicts, prefix, prompts_test)


async def validate_epoch(
    ctx: TrainContext, state: TrainState, epoch: int, prefix: str
) -> tuple[InferenceResult, AgentPrompts, list[dict[str, Any]]]:
    """Steps 1-5 of the slow update: validation re-run R of the current versions, its dual
    metric and correctness, the probations settled against R, best = strict argmax. Also how
    a run whose `max_calls` is spent mid-epoch closes that epoch (runner.py `_finish_spent`)."""
    session = ctx.session
    val = list(ctx.pools.validation)
    # 1. full validation re-run R with the current versions
    r_prompts = session.agent_prompts()
    r = await session.infer(
        val,
        prefix + "val",
        "validation",
        prompts=r_prompts,
        label=f"e{epoch} validation",
        parent_run_id=state.train_id,
    )
    # 2. dual metric: the epoch's hard (validation) accuracy
    ctx.log.add_dual_metric(
        DualMetricRecord(
            run_id=prefix + "val",
            epoch=epoch,
            eval_run_id=prefix + "val",
            hard_acc=r.accuracy,
        )
    )
    # 3. write R's per-question correctness back
    state.correctness.update(r.correctness)
    killpoints.reached("slow")
    # 4. settle probations against R
    verdicts = await settle_probations(ctx, state, r, epoch, prefix)
    # 5. best = strict argmax of validation accuracy
    consider_best(ctx, state, r, r_prompts, epoch, prefix + "val")
    return r, r_prompts, verdicts


async def settle_probations(
    ctx: TrainContext, state: TrainState, r: InferenceResult, epoch: int, prefix: str
) -> list[dict[str, Any]]:
    """Finish each provisional accept's gate test on the validation families it reserved.

    The candidate's outcomes are the validation re-run R's (the current version); the
    baseline's are the anchor's (the current versions with the task type's skill file as it
    was before the provisional accept), run now on the same units. The test goes on from the
    state the gate left it in, so "keep" means it crossed the same accept level: a null edit
    is kept with probability ≤ α together with its chance of being accepted at the gate.
    """
    verdicts = []
    for task_type in sorted(state.probations):
        p = state.probations.pop(task_type)
        verdict, decision = await _probation_test(ctx, p, r, prefix)
        verdicts.append(
            {
                "task_type": task_type,
                "verdict": verdict,
                "W": decision.W,
                "L": decision.L,
                "e_value": decision.e_value,
                "threshold": decision.threshold,
                "n_used": decision.n_used,
                "stop_reason": decision.stop_reason,
                "accepted_version": p.accepted_version,
            }
        )
        logger.info(
            "e{} probation {}: {} (W={} L={} e={:.2f} / {:.2f})",
            epoch,
            task_type,
            verdict,
            decision.W,
            decision.L,
            decision.e_value,
            decision.threshold,
        )
        if verdict == ProbationVerdict.ROLLBACK:
            rollback(ctx, state, p, epoch)
        else:
            state.count(Count.KEPT)
            state.final_accepts += 1
    return verdicts


async def _probation_test(
    ctx: TrainContext, p: Probation, r: InferenceResult, prefix: str
) -> tuple[ProbationVerdict, GateDecision]:
    test = ProbationTest(ctx.gate_params, p.test)
    unit_ids = [u for _, ids in p.families for u in ids]
    questions = [q for u in unit_ids for q in ctx.units[u].questions]
    session = ctx.session
    skills = session.version_files("skills", session.paths.skills_version)
    skills[p.target_file] = p.anchor_text
    anchor = replace(
        session.agent_prompts(),
        skills=skills,
        skills_version=f"{session.paths.skills_version}-anchor-{p.task_type}",
    )
    run_id = f"{prefix}anchor-{p.task_type}"
    base = (
        await session.infer(
            questions, run_id, "gate", prompts=anchor, label=f"probation {p.task_type} anchor"
        )
        if questions
        else None
    )
    units = [ctx.units[u] for u in unit_ids]
    cand_view = unit_outcome_view(units, r.correctness, r.scores)
    base_view = unit_outcome_view(
        units, base.correctness if base else {}, base.scores if base else {}
    )
    for family, ids in p.families:
        if test.done:
            break
        test.observe_family(family, [(u, base_view[u], cand_view[u]) for u in ids])
    verdict, decision = test.verdict()
    ctx.log.add_gate_evidence(
        evidence_rows(f"{prefix}probation-{p.task_type}", p.task_type, decision, p.epoch, p.step)
    )
    return verdict, decision


def rollback(ctx: TrainContext, state: TrainState, p: Probation, epoch: int) -> None:
    session = ctx.session
    files = session.version_files("skills", session.paths.skills_version)
    files[p.target_file] = p.anchor_text
    session.publish_version(
        "skills",
        files,
        source="rollback",
        run_id=state.train_id,
        description=f"e{epoch} rollback of {p.task_type} (accepted in {p.accepted_version})",
    )
    state.cooldown[p.task_type] = ctx.config.cooldown_steps
    state.reject(
        p.task_type,
        [
            RejectedEdit(
                task_type=p.task_type,
                op=e.op,
                section=e.section,
                text=e.content or e.new or e.old,
                reason="rolled back at epoch end",
                epoch=epoch,
                step=p.step,
            )
            for e in p.edits
        ],
    )
    gated = state.gated.get(p.task_type, {}).get(candidate_key(p.anchor_text, p.edits))
    if gated is not None:  # its verdict, as a repeat of it is told (step.py refuse_repeats)
        gated.outcome += f", rolled back at the end of epoch {epoch}"
    state.count(Count.ROLLED_BACK)


def consider_best(
    ctx: TrainContext,
    state: TrainState,
    result: InferenceResult,
    prompts: AgentPrompts,
    epoch: int,
    run_id: str,
) -> None:
    if result.accuracy > state.best.val_acc:
        state.best = Best(
            skills=f"skills/{prompts.skills_version}",
            prompts=f"prompts/{prompts.prompts_version}",
            val_acc=result.accuracy,
            run_id=run_id,
            epoch=epoch,
        )
        update_best(
            ctx.root,
            skills=prompts.skills_version,
            prompts=prompts.prompts_version,
            val_acc=result.accuracy,
            run_id=run_id,
            epoch=epoch,
        )


def with_prompt_file(prompts: AgentPrompts, tool: str, record: EvolutionRecord) -> AgentPrompts:
    """The prompts with the system prompt (`tool` empty) or a tool's description replaced by
    the record's text: a slow-update proposal as the agent would see it."""
    version = f"{prompts.prompts_version}+cand"
    if tool:
        docs = {**prompts.tool_docs, tool: record.evolved}
        return replace(prompts, tool_docs=docs, prompts_version=version)
    return replace(prompts, system=record.evolved, prompts_version=version)


def screen_run_ids(prefix: str, file: str) -> Callable[[int], str]:
    """Proposal index -> the run id of its screening answers (screen.py)."""
    return lambda index: f"{prefix}screen-{file}-{index}"


async def evolve_prompts(ctx: TrainContext, state: TrainState, epoch: int, prefix: str) -> bool:
    session = ctx.session
    files = session.version_files("prompts", session.paths.prompts_version)
    budget = edit_budget_at(
        state.global_step, ctx.total_steps, ctx.config.edit_budget_start, ctx.config.edit_budget_end
    )
    targets: list[tuple[str, str, CasePack | None, str]] = [
        (
            "system.md",
            "evolve_system",
            merge_packs(state.system_packs, "system"),
            "",
        )
    ]
    tool_names = sorted({p.tool_name for p in state.tool_packs if p.tool_name})
    for name in tool_names:
        packs = [p for p in state.tool_packs if p.tool_name == name]
        targets.append((f"tool_{name}.md", "evolve_tool", merge_packs(packs, f"tool:{name}"), name))
    changed = []
    with calls_logged_as(prefix + "prompts"):
        for file, template, pack, tool in targets:
            if pack is None or file not in files:
                continue
            prompt = prompt_file_prompt(
                ctx.templates[template],
                file=file,
                text=files[file],
                pack=pack,
                budget=budget,
                tool=tool,
            )
            records = await fan_out(
                partial(
                    evolve,
                    session.providers["evolver"],
                    original=files[file],
                    target_file=file,
                    budget=budget,
                    target_kind=TargetKind.TOOL if tool else TargetKind.SYSTEM,
                    source_version=session.paths.prompts_version,
                ),
                proposal_prompts(prompt, ctx.config.evolve_proposals),
            )
            record = await screen(
                ctx,
                records,
                sorted(pack.unit_ids),
                partial(with_prompt_file, session.agent_prompts(), tool),
                screen_run_ids(prefix, file),
                state.train_id,
            )
            if record.changed and not refused_as_contamination(
                ctx, state, file, added_text(record.original, record.evolved)
            ):
                files[file] = record.evolved
                changed.append(file)
    if not changed:
        return False
    session.publish_version(
        "prompts",
        files,
        source="slow_update",
        run_id=state.train_id,
        description=f"e{epoch} evolved {', '.join(changed)}",
    )
    return True


async def settle_prompt_change(
    ctx: TrainContext,
    state: TrainState,
    r: InferenceResult,
    before_prompts: str,
    epoch: int,
    prefix: str,
) -> tuple[InferenceResult | None, dict[str, Any]]:
    """Keep the epoch's prompt change only if it wins the paired test a skill edit must pass
    (`prompt_test`); otherwise revert to `before_prompts`. A tie, or a gain too small to
    cross the gate's accept level, is reverted: a prompt line must earn its place, or useless
    lines accumulate epoch after epoch (measured by bench/prompt_lines.py)."""
    session = ctx.session
    prompts = session.agent_prompts()
    r2 = await session.infer(
        list(ctx.pools.validation),
        prefix + "r2",
        "validation",
        prompts=prompts,
        label=f"e{epoch} validation (new prompts)",
        parent_run_id=state.train_id,
    )
    decision = prompt_test(ctx, r, r2, prefix, new_test_params(ctx.config.gate, state))
    keep = keeps_prompt_change(decision, ctx.config.gate.prompt_rule)
    ctx.log.add_gate_evidence(
        evidence_rows(prefix + "prompts-gate", PROMPTS_SUBJECT, decision, epoch, -1)
    )
    verdict = "kept" if keep else "reverted"
    summary = {
        "verdict": verdict,
        "r2_acc": r2.accuracy,
        "W": decision.W,
        "L": decision.L,
        "e_value": decision.e_value,
        "threshold": decision.threshold,
        "n_used": decision.n_used,
        "stop_reason": decision.stop_reason,
    }
    logger.info(
        "e{} prompts {} {}: R2 {:.3f} vs R {:.3f}, W={} L={} e={:.2f} / {:.2f} ({})",
        epoch,
        prompts.prompts_version,
        verdict,
        r2.accuracy,
        r.accuracy,
        decision.W,
        decision.L,
        decision.e_value,
        decision.threshold,
        decision.stop_reason,
    )
    if not keep:
        update_manifest(ctx.root, prompts=before_prompts, run_id=state.train_id)
        session.refresh_paths()
        state.count(Count.PROMPTS_REVERTED)
        return None, summary
    state.correctness.update(r2.correctness)
    state.count(Count.PROMPTS_KEPT)
    state.final_accepts += decision.accepted
    consider_best(ctx, state, r2, prompts, epoch, prefix + "r2")
    return r2, summary


def keeps_prompt_change(decision: GateDecision, rule: str) -> bool:
    """`[gate] prompt_rule`: "eprocess" keeps only what the paired test accepted; "net_win"
    also keeps a change that won more validation families than it lost (never a tie), which
    keeps more useful changes and more useless ones (bench/prompt_lines.py)."""
    return decision.accepted or (rule == "net_win" and decision.W > decision.L)


def prompt_test(
    ctx: TrainContext, r: InferenceResult, r2: InferenceResult, key: str, params: GateParams
) -> GateDecision:
    """The prompt change's paired test: core/evolution/gate.py's SequentialGate with this test's
    gate parameters (`new_test_params` in train_state.py), one observation per
    validation family, baseline = R (the prompts before), candidate = R2 (after).

    The families come in a seeded order that never looks at an outcome, and the prompt change
    was written from diagnosis-pool failures only (the validation pool shares no family with
    them), so the gate's guarantee holds: a change that does not help is kept with
    probability at most the test's level, 1/e_confirm. Both runs cover the whole pool, so it
    costs no calls.
    """
    units = build_units(ctx.pools.validation)
    # the gate's observations: families, or units when the benchmark declares them independent
    group = {u: g for t in ctx.gate_pools.task_types for u, g in ctx.gate_pools.group_of(t).items()}
    by_family: dict[str, list[str]] = {}
    for u in units:
        fallback = u.questions[0].family or u.unit_id
        by_family.setdefault(group.get(u.unit_id, fallback), []).append(u.unit_id)
    order = sorted(by_family.items())
    random.Random(f"{ctx.gate_pools.seed}:prompts:{key}").shuffle(order)
    base = unit_outcome_view(units, r.correctness, r.scores)
    cand = unit_outcome_view(units, r2.correctness, r2.scores)
    # scores are off the ±1/0 lattice: such a test is held to Ville's level (gate.family_mean)
    singletons = all(len(ids) == 1 for _, ids in order) and not any(map(is_scored, units))
    gate = SequentialGate(params, horizon=len(order), singletons=singletons)
    for family, ids in order:
        if gate.done:
            break
        gate.observe_family(family, [(u, base[u], cand[u]) for u in ids])
    return gate.finish(exhausted=not gate.done)


async def holdout_four_way(
    ctx: TrainContext, state: TrainState, prefix: str
) -> dict[str, dict[str, Any]]:
    """baseline / best-hard / final / best-mixed on the test pool; one run per version pair."""
    session = ctx.session
    test = list(ctx.pools.test)
    current = (session.paths.skills_version, session.paths.prompts_version)
    best = state.best.versions
    labels = {
        "baseline": (state.baseline_versions["skills"], state.baseline_versions["prompts"]),
        "best_hard": best,
        "final": current,
        "best_mixed": (best[0], current[1]),
    }
    done: dict[tuple[str, str], float] = {}
    out: dict[str, dict[str, Any]] = {}
    for label, versions in labels.items():
        if versions not in done:
            done[versions] = await _test_accuracy(ctx, state, versions, test, prefix)
        out[label] = {"skills": versions[0], "prompts": versions[1], "accuracy": done[versions]}
    ctx.log.add_holdout_evals(
        [
            HoldoutRecord(
                run_id=prefix + "holdout",
                epoch=int(prefix.split("-e")[-1].split("-")[0]),
                label=label,
                skills_version=v["skills"],
                prompts_version=v["prompts"],
                accuracy=v["accuracy"],
                eval_run_id=f"{prefix}holdout-{v['skills']}-{v['prompts']}",
            )
            for label, v in out.items()
        ],
    )
    return out


async def _test_accuracy(
    ctx: TrainContext,
    state: TrainState,
    versions: tuple[str, str],
    test: list[Question],
    prefix: str,
) -> float:
    if versions == (state.baseline_versions["skills"], state.baseline_versions["prompts"]):
        units = build_units(test)
        return unit_accuracy(units, ctx.log.correctness(ctx.baseline_run_id))
    session = ctx.session
    prompts = session.agent_prompts(
        ctx.root / "skills" / versions[0], ctx.root / "prompts" / versions[1]
    )
    result = await session.infer(
        test,
        f"{prefix}holdout-{versions[0]}-{versions[1]}",
        "holdout",
        prompts=prompts,
        label=f"holdout {versions[0]}/{versions[1]}",
    )
    return result.accuracy


def report_epoch(
    ctx: TrainContext,
    state: TrainState,
    epoch: int,
    r: InferenceResult,
    r2: InferenceResult | None,
    holdout: dict[str, Any],
    verdicts: list[dict[str, Any]],
    prefix: str,
    prompts_test: dict[str, Any] | None = None,
) -> None:
    val_acc = max(r.accuracy, r2.accuracy) if r2 else r.accuracy
    test_acc = holdout.get("final", {}).get("accuracy")
    counts = dict(state.epoch_counts)
    report = {
        "run_id": state.train_id,
        "epoch": epoch,
        "val_acc": val_acc,
        "r_acc": r.accuracy,
        "r2_acc": r2.accuracy if r2 else None,
        "test_acc": test_acc,
        "best": asdict(state.best),
        "counts": {
            **{k: counts.get(k, 0) for k in EPOCH_REPORT_COUNTS},
            # progressive mode only (app/harness/training/descriptions.py)
            **{k: counts[k] for k in EPOCH_REPORT_COUNTS_IF_ANY if counts.get(k)},
        },
        "probations": verdicts,
        "holdout": {k: v["accuracy"] for k, v in holdout.items()},
        "prompts_changed": r2 is not None,
        "prompts_test": prompts_test,  # the prompt change's paired test; None: no change
        "versions": {
            "skills": ctx.session.paths.skills_version,
            "prompts": ctx.session.paths.prompts_version,
        },
        "per_task_type": r.per_task_type,
    }
    write_epoch_report(ctx.root, ctx.log, report, prefix + "report")
    state.curve.append(CurvePoint(epoch, val_acc, test_acc, dict(report["counts"])))
    logger.info(
        "epoch {}: validation {:.3f}{}  best {:.3f} ({})",
        epoch,
        val_acc,
        f"  test {test_acc:.3f}" if test_acc is not None else "",
        state.best.val_acc,
        state.best.skills,
    )
