"""Runner: the thin orchestrator of `train`, `diagnose` and `promote`
(docs/architecture.md#a-training-run).

The work lives in module functions (step, slow_update, momentum); the state of one train()
is a TrainState passed explicitly and checkpointed after every step and every epoch.
"""

from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

from loguru import logger

from app.errors import RunFailed, UserError, first_leaf, is_stop, stop_reason
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.judge_quality import missing_check_warning
from app.harness.rollouts.pools import (
    Pools,
    filter_trainable,
    hold_out_task_types,
    split_pools,
)
from app.harness.rollouts.question_units import (
    build_units,
    is_scored,
    unit_accuracy,
    unit_correctness_view,
    unit_outcome_view,
)
from app.harness.rollouts.session import Session
from app.harness.training import call_budget
from app.harness.training.batching import build_batches
from app.harness.training.checkpoint import (
    check_resume_config,
    load_checkpoint,
    restore_workspace,
    state_from_json,
    write_checkpoint,
)
from app.harness.training.gate_ladder import BaselineCache, GatePools
from app.harness.training.run_progress import calls_eta, ending_text
from app.harness.training.slow_update import run_slow_update, slow_prefix, validate_epoch
from app.harness.training.step import diagnose_batch, run_step
from app.harness.training.train_state import Best, ResumePlan, TrainContext, TrainState
from app.harness.training.vocabulary import (
    BASELINE_RUN,
    EndReason,
    TrainPhase,
    final_test_run_id,
    step_prefix,
)
from app.harness.workspace import killpoints
from app.harness.workspace.atomic import read_json, write_json_atomic
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog, RunStatus
from app.harness.workspace.ids import check_run_id, check_version
from app.harness.workspace.store import promote_to_seed
from app.harness.workspace.workspace import (
    clean_staging,
    read_manifest,
    read_version_files,
    resolve_paths,
    update_best,
    update_manifest,
)
from app.paths import read_prompt
from app.progress import CallsEta
from app.providers.errors import BudgetExceeded, CallBudgetSpent
from app.secrets import scrub
from core.evolution.budget import resolve_skill_file
from core.evolution.diagnose import FailureTally
from core.types import Question, QuestionUnit

TEMPLATES = ("diagnose_failure", "evolve_skill", "evolve_system", "evolve_tool", "momentum")


def load_templates() -> dict[str, str]:
    return {name: read_prompt(f"{name}.md") for name in TEMPLATES}


class Runner:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.config = session.config
        self._calls_eta: CallsEta | None = None  # the run's ETA from a stored estimate
        # set once `max_calls` is spent: the setup that follows only finishes the run
        self._finishing = False

    # -- train ----------------------------------------------------------------------------
    async def train_async(self, *, resume: bool) -> None:
        """Train, and record how the run ended if it did not finish: stopped (Ctrl-C,
        SIGTERM, the budget) or failed; a stop re-raises as KeyboardInterrupt."""
        lock = self.session.paths.root / "train.lock"
        write_json_atomic(
            lock, {"pid": os.getpid(), "host": socket.gethostname(), "started_at": now_iso()}
        )
        try:
            try:
                await self._train(resume)
            except BaseException as e:
                if not isinstance(first_leaf(e), CallBudgetSpent):
                    raise
                logger.info("{}: training ends; the best version so far is tested", first_leaf(e))
                await self._finish_spent()
        except BaseException as e:
            self._end_badly(e)
        finally:
            lock.unlink(missing_ok=True)

    async def _finish_spent(self) -> None:
        """`max_calls` spent mid-step: back to the last checkpoint, as --resume goes, and
        finish from there (app/harness/training/call_budget.py)."""
        self._finishing = True  # this process's spend is charged already: carry nothing
        with self.session.bars.live():
            setup = await self._setup(resume=True)
            if setup is None:
                return
            ctx, state, plan = setup
            self._forget_cut_short(ctx, state, plan)
            if state.global_step == 0:
                logger.warning(
                    "max_calls = {} was spent before the first step closed, so nothing was "
                    "learned (a step cut short goes back to its checkpoint): raise max_calls "
                    "(docs/training.md, what a call budget buys)",
                    self.config.max_calls,
                )
            if plan.resume_epoch is not None:  # mid-epoch: validate it, settle probations
                await self._close_epoch(ctx, state, plan.resume_epoch)
            last_epoch = plan.resume_epoch or plan.first_epoch - 1
            await self._finish(ctx, state, last_epoch, EndReason.MAX_CALLS)

    def _forget_cut_short(self, ctx: TrainContext, state: TrainState, plan: ResumePlan) -> None:
        """Delete the rows of the step (or the slow update) `max_calls` cut short. Which of its
        calls were in flight at the cap is a matter of timing, so its rows are too; they go, as
        a `--resume` that redid the step would replace them, and the run's log ends the same
        whether or not it was killed on the way. Their paid calls stay in the spend ledger."""
        if plan.resume_epoch is None:
            return
        epoch = plan.resume_epoch
        step = plan.first_step_of(epoch)
        if step < len(plan.batches or ()):
            ctx.log.clear_runs_with_prefix(step_prefix(state.train_id, epoch, step))
        else:  # every step closed: the epoch's slow update was cut
            ctx.log.clear_runs_with_prefix(slow_prefix(state.train_id, epoch))

    async def _close_epoch(self, ctx: TrainContext, state: TrainState, epoch: int) -> None:
        """The slow update's validation and best tracking for an epoch cut short, so the
        edits accepted in it can become the best. Past the cap: its calls are the price of
        ending cleanly, at most one validation run (and the probations' anchors)."""
        self.session.budget.arm_calls(None)
        prefix = f"{state.train_id}-e{epoch}-close-"
        ctx.log.clear_runs_with_prefix(prefix)
        await validate_epoch(ctx, state, epoch, prefix)

    def _end_badly(self, e: BaseException) -> NoReturn:
        leaf = first_leaf(e)
        if is_stop(leaf):  # Ctrl-C, SIGTERM (errors.Stopped), or the cancellation they cause
            self._mark_train(
                RunStatus.STOPPED, f"stopped by {stop_reason(leaf)}", stop_reason(leaf)
            )
            self._save_spend()
            if isinstance(leaf, KeyboardInterrupt):
                raise leaf from None
            raise e  # a cancellation goes on unwinding; the event loop turns it into Ctrl-C
        if isinstance(leaf, BudgetExceeded):
            self._mark_train(RunStatus.STOPPED, str(leaf), "max_cost_usd")
            self._save_spend()
            raise RunFailed(
                f"{leaf}. The checkpoint is intact: raise max_cost_usd and --resume (resume=True)."
            ) from None
        self._mark_train(RunStatus.FAILED, f"{type(leaf).__name__}: {leaf}")
        if isinstance(leaf, RunFailed) and "--resume" not in str(leaf):
            raise RunFailed(
                f"{leaf}. The checkpoint is intact: fix the cause and rerun train --resume (resume=True)."
            ) from None
        if leaf is not e:
            raise leaf from None
        raise e

    def _save_spend(self) -> None:
        """The run's spend so far into checkpoint.json (only that key changes)."""
        path = self.session.paths.checkpoint
        if not path.is_file() or not self.session.recorder.owner:
            return
        try:
            ckpt = read_json(path)
            ckpt["progress"]["spent_usd"] = self._spent()
            write_json_atomic(path, ckpt)
        except (OSError, RunFailed, UserError) as e:  # the ledger in harness.db still has it
            logger.debug("could not record the spend in {}: {}", path, e)

    def _mark_train(self, status: RunStatus, reason: str, stop: str | None = None) -> None:
        """Record how the run ended: `reason` for people (report, TUI), `stop` (a stop's
        short cause: SIGTERM, Ctrl-C, max_cost_usd) for scripts."""
        train_id = getattr(self, "_train_id", None)
        if not train_id:
            return
        summary: dict[str, str] = {"reason": scrub(reason)[:500]}
        if stop:
            summary["stop_reason"] = stop
        try:  # best effort: on a full disk this fails too, and must not hide the first error
            self.session.recorder.flush()
            self.session.log.finish_run(train_id, status, summary)
        except (RunFailed, UserError, OSError) as e:
            logger.debug("could not mark {} {}: {}", train_id, status, e)

    async def _train(self, resume: bool) -> None:
        session = self.session
        self._calls_eta = calls_eta(session.paths.analyses, session.log)  # before any call
        with session.bars.live():
            setup = await self._setup(resume)
            if setup is None:
                logger.info("training already finished; nothing to resume")
                return
            ctx, state, plan = setup
            epoch = plan.first_epoch - 1  # the last epoch run so far
            # Resumed after an epoch_done checkpoint: that epoch's early-stop count is in the
            # state already, so the decision it led to is taken again, not skipped.
            stop = plan.resume_epoch is None and epoch >= 1 and self._patience_spent(state)
            while not stop and epoch < self.config.epochs:
                epoch += 1
                await self._epoch(
                    ctx, state, epoch, plan.batches_of(epoch), plan.first_step_of(epoch)
                )
                stop = self._patience_spent(state)
            end = EndReason.EARLY_STOP if stop and epoch < self.config.epochs else None
            if end:  # after the last epoch a spent patience changes nothing: all epochs ran
                logger.info(
                    "early stop after epoch {}: no new best for {} epoch(s)",
                    epoch,
                    state.epochs_since_best,
                )
            await self._finish(ctx, state, epoch, end or EndReason.ALL_EPOCHS)

    async def _epoch(
        self,
        ctx: TrainContext,
        state: TrainState,
        epoch: int,
        batches_ids: list[list[str]] | None,
        step_from: int,
    ) -> None:
        if batches_ids is None:
            state.system_packs, state.tool_packs = [], []
            state.changed_this_epoch, state.epoch_counts = [], {}
            state.epoch_start_skills = self.session.version_files(
                "skills", self.session.paths.skills_version
            )
            batches, _ = build_batches(
                ctx.evolver_diagnosis,
                state.correctness,
                self.config.batch_size,
                self.config.min_class_per_batch,
                seed=self.config.seed * 1000 + epoch,
                correct_ratio=self.config.batch_correct_ratio,
            )
            batches_ids = [list(dict.fromkeys(q.unit_id for q in b)) for b in batches]
            self._checkpoint(ctx, state, epoch, TrainPhase.IN_EPOCH, -1, batches_ids)
        logger.info("epoch {}/{}: {} step(s)", epoch, self.config.epochs, len(batches_ids))
        bar = self.session.bars.task(f"epoch {epoch} steps", len(batches_ids))
        bar.advance(step_from)
        for step in range(step_from, len(batches_ids)):
            batch = [q for uid in batches_ids[step] for q in ctx.units[uid].questions]
            await run_step(ctx, state, epoch, step, batch)
            state.global_step += 1
            self._checkpoint(ctx, state, epoch, TrainPhase.IN_EPOCH, step, batches_ids)
            bar.advance()
            totals = self.session.recorder.totals
            extra = f"{totals['calls']} calls, ${totals['cost_usd']:.4f}"
            if (eta := self._calls_eta) is not None and eta.train_id == state.train_id:
                extra += f"; {eta.text(int(totals['calls'] - totals['cache_hits']))}"
            self.session.bars.set_extra(bar, extra)
        bar.done()
        await run_slow_update(ctx, state, epoch)
        # Counted before the checkpoint, so a run resumed from it has the count it would have.
        state.epochs_since_best = 0 if state.best.epoch == epoch else state.epochs_since_best + 1
        self._checkpoint(ctx, state, epoch, TrainPhase.EPOCH_DONE, len(batches_ids) - 1, None)

    def _patience_spent(self, state: TrainState) -> bool:
        return state.epochs_since_best >= self.config.early_stop_patience

    async def _finish(
        self, ctx: TrainContext, state: TrainState, last_epoch: int, end: EndReason
    ) -> None:
        best = state.best
        update_manifest(ctx.root, skills=best.skills, prompts=best.prompts, run_id=state.train_id)
        self.session.refresh_paths()
        killpoints.reached("finish")  # 1: best restored as current, before the final test
        await final_test_eval(ctx, state)
        killpoints.reached("finish")  # 2: final_test_eval.json written, before the checkpoint
        ending = {
            "end": end,
            "epochs_planned": self.config.epochs,
            "epochs_since_best": state.epochs_since_best,
        }
        progress = self._checkpoint(
            ctx, state, last_epoch, TrainPhase.FINISHED, -1, None, ending=ending
        )
        self.session.recorder.flush()
        self.session.log.finish_run(state.train_id, RunStatus.DONE, done_summary(state, progress))

    def _checkpoint(
        self,
        ctx: TrainContext,
        state: TrainState,
        epoch: int,
        phase: TrainPhase,
        step_completed: int,
        batches: list[list[str]] | None,
        *,
        ending: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write checkpoint.json; returns its progress. `ending`: how a finished run ended."""
        state.gate_pools = ctx.gate_pools
        state.baseline_cache = dict(ctx.baseline_cache.entries)
        state.baseline_scores = dict(ctx.baseline_cache.scores)
        self.session.recorder.flush()
        progress = {
            "epoch": epoch,
            "phase": phase,
            "step_completed": step_completed,
            "global_step": state.global_step,
            "total_steps": ctx.total_steps,
            "train_id": state.train_id,
            "spent_usd": self._spent(),
            "at": now_iso(),
            **(ending or {}),
        }
        write_checkpoint(
            ctx.root,
            progress=progress,
            state=state,
            epoch_batches=batches,
            config=self.config,
            benchmark_hash=self.session.benchmark.content_hash,
        )
        return progress

    # -- setup and resume -------------------------------------------------------------------
    async def _setup(self, resume: bool) -> tuple[TrainContext, TrainState, ResumePlan] | None:
        """The run's context, state and where to start; None when it already finished.
        After `max_calls` was spent (`_finishing`) it only finishes: no resume is recorded."""
        session = self.session
        removed = clean_staging(session.paths.root)
        if removed:
            logger.info("removed {} staging leftover(s) of an interrupted writer", removed)
        ckpt = load_checkpoint(session.paths.root) if resume else None
        if ckpt:
            check_resume_config(ckpt, self.config, session.benchmark.content_hash)
            orphans = restore_workspace(session.paths.root, ckpt)
            if orphans:
                logger.info("removed versions written after the checkpoint: {}", orphans)
            session.refresh_paths()
        pools, task_types = self._pools()
        units = {u.unit_id: u for u in build_units(session.benchmark.questions)}
        judged = missing_check_warning(
            session.paths.analyses, self.config.judge_model, session.benchmark.questions
        )
        if judged is not None:  # rubric scores from an unchecked judge (docs/checkers.md)
            logger.warning(judged)
        if ckpt and ckpt["progress"]["phase"] == TrainPhase.FINISHED:
            self._mark_finished(state_from_json(ckpt["state"]), ckpt["progress"])
            return None
        # the run's history says it was resumed, when, and from where
        if ckpt and not self._finishing:
            session.log.record_resume(ckpt["progress"]["train_id"], ckpt["progress"])
        if ckpt and ckpt["progress"]["phase"] != TrainPhase.SETUP:
            state = state_from_json(ckpt["state"])
            self._train_id = state.train_id
            self._carry_spend(state.train_id, ckpt)
            ctx = self._context(pools, task_types, units, state, ckpt["progress"]["total_steps"])
            logger.info(
                "{} {} from epoch {} ({}, step {})",
                "finishing" if self._finishing else "resuming",
                state.train_id,
                ckpt["progress"]["epoch"],
                ckpt["progress"]["phase"],
                ckpt["progress"]["step_completed"],
            )
            session.log.finish_run(state.train_id, RunStatus.RUNNING)
            return ctx, state, ResumePlan.after(ckpt["progress"], ckpt["epoch_batches"])
        train_id = ckpt["progress"]["train_id"] if ckpt else self._new_train_id()
        self._train_id = train_id
        self._carry_spend(train_id, ckpt)
        return await self._fresh_setup(train_id, pools, task_types, units)

    def _mark_finished(self, state: TrainState, progress: dict[str, Any]) -> None:
        """A run killed between its "finished" checkpoint and its "done" mark is done."""
        run = self.session.log.run(state.train_id)
        if run is not None and run.status != RunStatus.DONE:
            summary = done_summary(state, progress)
            self.session.log.finish_run(state.train_id, RunStatus.DONE, summary)

    def _carry_spend(self, train_id: str, ckpt: dict[str, Any] | None) -> None:
        """`max_cost_usd` bounds the run, not this process: start from what it has spent;
        `max_calls` likewise counts the training calls earlier processes made."""
        if self._finishing:
            return
        before = (ckpt or {}).get("progress", {}).get("spent_usd") or 0.0
        prior = self.session.charge_run(train_id, before)
        if prior:
            logger.info("{} has spent ${:.4f} so far", train_id, prior)
        self.session.budget.check()
        paid = self.session.cache.paid_calls_by_run(train_id)
        call_budget.arm(
            self.session.budget,
            self.config.max_calls,
            train_id,
            call_budget.training_calls(paid, train_id),
        )

    def _spent(self) -> float:
        return self.session.cache.spend_total(self.session.recorder.owner or "")

    def _new_train_id(self) -> str:
        n = sum(1 for r in self.session.log.runs() if r.kind == "train") + 1
        return f"train{n}"

    def _pools(self) -> tuple[Pools, tuple[str, ...]]:
        b = self.session.benchmark
        pools, task_types = hold_out_task_types(
            split_pools(b.questions, b.split, b.seed),
            b.questions,
            self.config.task_types,
            self.config.holdout_task_types,
        )
        pools, kept, dropped = filter_trainable(
            pools,
            task_types,
            self.config.eval_min_per_class,
            self.config.trainable_min_units,
        )
        for task_type, why in dropped:
            logger.warning("not training task type {}: {}", task_type, why)
        self._check_disjoint_files(kept)
        return pools, kept

    def _check_disjoint_files(self, task_types: tuple[str, ...]) -> None:
        files = self.session.version_files("skills", self.session.paths.skills_version)
        by_file: dict[str, list[str]] = {}
        for t in task_types:
            by_file.setdefault(resolve_skill_file(t, files), []).append(t)
        shared = {f: ts for f, ts in by_file.items() if len(ts) > 1}
        if shared:
            detail = "; ".join(f"{f}: {', '.join(ts)}" for f, ts in shared.items())
            raise UserError(
                "task types would share a skill file, so their edits could collide "
                f"within a step ({detail}); add one skill file per task type (init without "
                "--seed creates one for each)"
            )

    def _context(
        self,
        pools: Pools,
        task_types: tuple[str, ...],
        units: dict[str, QuestionUnit],
        state: TrainState,
        total_steps: int,
    ) -> TrainContext:
        drawn = state.gate_pools.draw_units(units)
        return TrainContext(
            session=self.session,
            config=self.config,
            pools=pools,
            task_types=task_types,
            units={**units, **drawn},
            draw_samples=state.gate_pools.draw_samples(drawn),
            gate_pools=state.gate_pools,
            baseline_cache=BaselineCache(state.baseline_cache, state.baseline_scores),
            templates=load_templates(),
            total_steps=total_steps,
        )

    async def _fresh_setup(
        self,
        train_id: str,
        pools: Pools,
        task_types: tuple[str, ...],
        units: dict[str, QuestionUnit],
    ) -> tuple[TrainContext, TrainState, ResumePlan]:
        session = self.session
        prompts = session.agent_prompts()
        # The checkpoint first: a run that dies after it resumes under the same train id.
        write_checkpoint(
            session.paths.root,
            progress={
                "epoch": 0,
                "phase": TrainPhase.SETUP,
                "step_completed": -1,
                "global_step": 0,
                "total_steps": 0,
                "train_id": train_id,
                "spent_usd": self._spent(),
                "at": now_iso(),
            },
            state=None,
            epoch_batches=None,
            config=self.config,
            benchmark_hash=session.benchmark.content_hash,
        )
        session.register(train_id, "train", prompts)
        baseline = await self._baseline(prompts)
        val_units = build_units(pools.validation)
        baseline_val = unit_accuracy(val_units, baseline)
        trainable = {q.question_id for q in (*pools.diagnosis, *pools.validation)}
        correctness = {qid: ok for qid, ok in baseline.items() if qid in trainable}
        gate_units = [u for u in units.values() if u.task_type in task_types]
        test_units = {q.unit_id for q in pools.test}
        unit_view = unit_correctness_view(gate_units, baseline)
        validation_ids = {q.unit_id for q in pools.validation}
        gate_pools = GatePools.build(
            gate_units,
            validation_ids,
            test_units,
            seed=self.config.seed,
            independent_units=session.benchmark.independent_units,
            draws=self.config.gate.draws,
            drawable=frozenset(u.unit_id for u in gate_units if not is_scored(u)),
        )
        gate_pools.save(session.paths.gate_pools)
        if self.config.gate.draws > 1 and not gate_pools.draws:
            why = (
                "every gate question is scored (a draw counts a pass/fail answer)"
                if session.benchmark.independent_units
                else "the benchmark's families are near-duplicates "
                '(family_units = "independent" in benchmark.toml lets a draw count)'
            )
            logger.warning("gate.draws = {}: not used, {}", self.config.gate.draws, why)
        cache = BaselineCache()  # the file is a mirror; the state comes from the checkpoint
        # a scored unit's gate outcome is its score (pass/fail units keep their correctness):
        # without it the gate compared a candidate's score with a baseline of 0
        outcomes = unit_outcome_view(gate_units, baseline, session.log.scores(BASELINE_RUN))
        cache.put_many(prompts.skills_version, prompts.prompts_version, unit_view, outcomes)
        cache.save(session.paths.baseline_cache)
        versions = {"skills": prompts.skills_version, "prompts": prompts.prompts_version}
        best = Best(
            skills=f"skills/{versions['skills']}",
            prompts=f"prompts/{versions['prompts']}",
            val_acc=baseline_val,
            run_id=BASELINE_RUN,
            epoch=0,
        )
        update_best(
            session.paths.root,
            skills=versions["skills"],
            prompts=versions["prompts"],
            val_acc=baseline_val,
            run_id=BASELINE_RUN,
            epoch=0,
        )
        state = TrainState(
            train_id=train_id,
            correctness=correctness,
            best=best,
            baseline_val_acc=baseline_val,
            baseline_versions=versions,
            gate_pools=gate_pools,
            baseline_cache=dict(cache.entries),
            baseline_scores=dict(cache.scores),
        )
        _, selected = build_batches(
            gate_pools.without_gate_only(pools.diagnosis, self.config.gate.gate_only_share),
            correctness,
            self.config.batch_size,
            self.config.min_class_per_batch,
            seed=1,
            correct_ratio=self.config.batch_correct_ratio,
        )
        total_steps = self.config.epochs * max(1, math.ceil(selected / self.config.batch_size))
        ctx = self._context(pools, task_types, units, state, total_steps)
        logger.info(
            "{}: {} task types, pools diagnosis/validation/test = {}/{}/{} questions, "
            "baseline validation accuracy {:.3f}",
            train_id,
            len(task_types),
            len(pools.diagnosis),
            len(pools.validation),
            len(pools.test),
            baseline_val,
        )
        return ctx, state, ResumePlan()

    async def _baseline(self, prompts: AgentPrompts) -> dict[str, bool]:
        """The seed versions on the whole benchmark, run once per workspace and reused."""
        log = self.session.log
        run = log.run(BASELINE_RUN)
        if (
            run
            and run.status == RunStatus.DONE
            and run.skills_version == prompts.skills_version
            and run.prompts_version == prompts.prompts_version
        ):
            return log.correctness(BASELINE_RUN)
        result = await self.session.infer(
            list(self.session.benchmark.questions),
            BASELINE_RUN,
            "baseline",
            prompts=prompts,
            label="baseline",
        )
        return result.correctness

    # -- other modes ------------------------------------------------------------------------
    async def diagnose_run_async(self, run_id: str) -> dict[str, Any]:
        session = self.session
        check_run_id(run_id, "run id")
        run = session.log.run(run_id)
        if run is None:
            raise UserError(f"no run {run_id!r} in {session.paths.db}")
        skills_dir = session.paths.root / "skills" / run.skills_version.split("+")[0]
        prompts_dir = session.paths.root / "prompts" / run.prompts_version
        prompts = session.agent_prompts(skills_dir, prompts_dir)
        ids = session.log.question_ids(run_id)
        batch = [session.questions_by_id[i] for i in ids if i in session.questions_by_id]
        ctx = _DiagnoseContext(session, load_templates())
        session.log.clear_runs_with_prefix(f"{run_id}-diagnose-")
        result = await diagnose_batch(
            ctx, prompts, batch, f"{run_id}-diagnose-", rollout_run_id=run_id
        )
        session.recorder.flush()
        tally = FailureTally.of(result.diagnoses)
        return {
            "run_id": run_id,
            "failures": len(result.diagnoses),
            "by_category": tally.by_category,
            "decided_by": tally.decided_by,
            "degraded": result.degraded_count,
            "contradictory": len(result.contradictory),
            "skill_packs": {t: len(p.failures) for t, p in result.skill_packs.items()},
            "system_pack": len(result.system_pack.failures) if result.system_pack else 0,
            "tool_packs": {t: len(p.failures) for t, p in result.tool_packs.items()},
        }


class _DiagnoseContext:
    """The slice of TrainContext that diagnosis needs, for `diagnose RUN_ID`."""

    def __init__(self, session: Session, templates: dict[str, str]) -> None:
        self.session, self.templates, self.config = session, templates, session.config

    @property
    def log(self) -> HarnessLog:
        return self.session.log


async def final_test_eval(ctx: TrainContext, state: TrainState) -> dict[str, Any]:
    session = ctx.session
    run_id = final_test_run_id(state.train_id)
    ctx.log.clear_runs_with_prefix(run_id)
    test: list[Question] = list(ctx.pools.test)
    result = await session.infer(
        test, run_id, "test", label="final test", parent_run_id=state.train_id
    )
    baseline_correct = ctx.log.correctness(ctx.baseline_run_id)
    baseline_acc = unit_accuracy(build_units(test), baseline_correct)
    report = {
        "run_id": run_id,
        "train_id": state.train_id,
        "skills_version": session.paths.skills_version,
        "prompts_version": session.paths.prompts_version,
        "test_accuracy": result.accuracy,
        "baseline_test_accuracy": baseline_acc,
        "improvement": result.accuracy - baseline_acc,
        "units": result.total,
        "per_task_type": result.per_task_type,
        "baseline_per_task_type": {
            t: unit_accuracy(build_units(q for q in test if q.task_type == t), baseline_correct)
            for t in sorted({q.task_type for q in test})
        },
        "holdout_task_types": list(ctx.config.holdout_task_types),
        "best": asdict(state.best),
        "curve": [point.flat() for point in state.curve],
        "simulated_model": ctx.config.uses_sim,
    }
    write_json_atomic(ctx.root / "analyses" / "final_test_eval.json", report)
    return report


def done_summary(state: TrainState, progress: dict[str, Any]) -> dict[str, Any]:
    """A finished train run's summary in the log: best, curve, and why it stopped."""
    return {
        "best": asdict(state.best),
        "curve": [point.flat() for point in state.curve],
        "reason": ending_text(progress),
        "end": str(progress.get("end") or ""),
    }


def promote(root: Path, version: str, eval_run_id: str, name: str, store: Path) -> Path:
    """Copy a skills version (with the prompts its eval used) into a new store seed."""
    from app.harness.workspace.harness_log import HarnessLog

    version = check_version(version, "version")
    check_run_id(eval_run_id, "--eval-run")
    paths = resolve_paths(root)
    with HarnessLog(paths.db, readonly=True) as log:
        run = log.run(eval_run_id)
    if run is None or run.status != RunStatus.DONE:
        raise UserError(f"no finished run {eval_run_id!r} in {paths.db} to justify the promotion")
    if run.skills_version != version:
        raise UserError(f"run {eval_run_id} evaluated skills {run.skills_version}, not {version}")
    # read and verified (sha256, no symlinks) before anything reaches the store
    skills = read_version_files(paths.root / "skills" / version)
    prompts = read_version_files(paths.root / "prompts" / run.prompts_version)
    summary = json.loads(run.summary_json or "{}")
    manifest = read_manifest(root)
    provenance = {
        "workspace": str(paths.root),
        "skills_version": version,
        "prompts_version": run.prompts_version,
        "eval_run_id": eval_run_id,
        "eval_accuracy": summary.get("accuracy"),
        "seed": manifest.get("seed"),
        "questions": manifest["current"]["questions"],
    }
    # the promoted skills start from the workspace's seed, so they keep its licence
    licence = manifest.get("seed_license")
    return promote_to_seed(
        store, name, skills, prompts, provenance, licence if isinstance(licence, str) else None
    )


def read_final(root: Path) -> dict[str, Any] | None:
    path = Path(root) / "analyses" / "final_test_eval.json"
    return read_json(path) if path.exists() else None
