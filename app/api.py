"""The Python API: everything the CLI does, as functions that return typed results.

    from app import api

    api.init_workspace("workspaces/mine", seed="sim-starter", questions="sim-basic")
    result = api.train("workspaces/mine", overrides={"epochs": 2})
    print(f"test accuracy {result.baseline_test_accuracy:.3f} -> {result.test_accuracy:.3f}")

Functions that run a model have an async twin (`train_async`, `evaluate_async`,
`infer_async`, `demo_async`, `diagnose_async`, `fork_async`, `rank_async`) for callers that
already run an event loop; the plain ones start their own. Every writer takes the workspace's writer lock, as the CLI does.

Errors are named: `UserError` (bad input or a refused request, e.g. a second writer),
`RunFailed` (a run started but could not finish: budget, provider, full disk), and
`ProviderError` from a model that keeps failing. Their message is one line meant for people.
`progress=True` shows progress bars on stderr (None: when stderr is a terminal).

Log lines go through loguru; importing this module makes every record's message scrubbed of
API keys and control characters (`app.logging_setup.scrub_log_records`), so loguru's default
stderr handler, and any the caller adds, never print a secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import re
import sqlite3
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import anyio
from loguru import logger

from app import paths
from app.api_args import ConfigSource, resolve_config, workspace_config
from app.api_args import bad as _bad
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.errors import DamagedFile, RunFailed, UserError
from app.harness.rollouts import memory
from app.harness.rollouts.benchmark_validation import ValidationReport as BenchmarkValidation
from app.harness.rollouts.session import Session
from app.harness.tools.check import ToolsCheck
from app.harness.training.checkpoint import load_checkpoint
from app.harness.training.runner import Runner, read_final
from app.harness.training.vocabulary import Count, EndReason
from app.harness.workspace import workspace as ws
from app.harness.workspace.atomic import write_json_atomic, write_text_atomic
from app.harness.workspace.config import RunConfig
from app.harness.workspace.ids import check_run_id, check_version
from app.harness.workspace.log_reader import LogReader, open_reader
from app.harness.workspace.store import (
    Seed,
    benchmark_dir,
    benchmark_names,
    load_benchmark,
    load_seed,
    seed_dir,
    seed_names,
)
from app.harness.workspace.writer_lock import WriterLock
from app.logging_setup import scrub_log_records
from app.progress import Bars
from app.providers.errors import BudgetExceeded, ProviderError
from app.report import format_summary, workspace_summary
from core.types import InferenceResult

if TYPE_CHECKING:  # uvicorn and FastAPI load only for `serve`
    from app.harness.serving.savings import SavingsReport
    from app.harness.serving.server import ServeOutcome, ServeReady

scrub_log_records()

__all__ = [
    "BenchmarkValidation",
    "DiagnoseResult",
    "EpochPoint",
    "EvalResult",
    "ExportResult",
    "ExportSkillsResult",
    "ExportedFile",
    "ForkResult",
    "ImportResult",
    "InferResult",
    "JudgeStats",
    "MemoryStats",
    "PairedStats",
    "PromoteResult",
    "ProviderError",
    "RankResult",
    "RunFailed",
    "SourceVersion",
    "TaskTypeScore",
    "TrainResult",
    "UserError",
    "WorkspaceInfo",
    "WorkspaceReport",
    "demo",
    "demo_async",
    "diagnose",
    "diagnose_async",
    "estimate",
    "estimate_async",
    "evaluate",
    "evaluate_async",
    "export",
    "export_skills",
    "fork",
    "fork_async",
    "import_skills",
    "infer",
    "ingest",
    "infer_async",
    "init_workspace",
    "judge_quality",
    "judge_quality_async",
    "promote",
    "rank",
    "rank_async",
    "report",
    "savings",
    "scorecard",
    "scorecard_async",
    "serve",
    "serve_async",
    "train",
    "train_async",
    "validate_benchmark",
]

DEMO_SEED = "sim-starter"
# The demo trains on the built-in world at three times sim-basic's size. In sim-basic (72 units
# per task type) a family is 3 units that each need a different rule, so a one-rule edit moves a
# family by d = 1/3; no level-0.05 test of the per-unit null can confirm that from fewer than 11
# such families in a row (P(d >= 1/3) can be 3/4 per family under the null, and 0.75^10 > 0.05),
# and a ladder there holds 10-18 families. At 216 units the gate has the evidence.
DEMO_QUESTIONS = "sim-large"
DEMO_WORLD: dict[str, Any] = {"sim_units_per_type": 216}  # the world sim-large was generated from


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkspaceInfo:
    root: Path
    seed: str
    questions: str
    skills_version: str
    prompts_version: str


@dataclass(frozen=True)
class TaskTypeScore:
    accuracy: float
    correct: int
    total: int


@dataclass(frozen=True)
class EvalResult:
    """One pass of a skills version over questions (an `eval` or an `infer` run)."""

    run_id: str
    skills_version: str
    prompts_version: str
    accuracy: float
    correct: int
    total: int
    per_task_type: dict[str, TaskTypeScore]
    stop_reason_counts: dict[str, int]
    new_model_calls: int
    cache_hits: int
    simulated_model: bool
    # memory_k > 0: how many stored memories the prompts retrieved from (None: memories off)
    memories_stored: int | None = None
    # built-in tool -> the name it was shown under (`tool_aliases` of `evaluate`)
    tool_aliases: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class InferResult:
    samples: tuple[EvalResult, ...]  # one per --n-samples, in order


@dataclass(frozen=True)
class EpochPoint:
    epoch: int
    val_acc: float
    test_acc: float | None
    accepted: int
    provisional: int
    rejected: int
    kept: int
    rolled_back: int


@dataclass(frozen=True)
class TrainResult:
    workspace: Path
    train_id: str
    status: str  # done, or the status of the run that ended it
    reason: str | None  # why it ended when not simply after all its epochs: a stop, a failure,
    # or an early stop (status "done")
    epochs_run: int
    curve: tuple[EpochPoint, ...]
    baseline_test_accuracy: float | None
    test_accuracy: float | None
    best_skills_version: str | None
    best_prompts_version: str | None
    best_val_acc: float | None
    model_calls: int
    cache_hits: int
    cost_usd: float
    wall_seconds: float
    simulated_model: bool


@dataclass(frozen=True)
class WorkspaceReport:
    """What `report` prints: `summary` is the JSON `report --json` writes, `text` the table."""

    workspace: Path
    summary: dict[str, Any]

    @property
    def text(self) -> str:
        return format_summary(self.summary)

    @property
    def spent_usd(self) -> float:
        return float(self.summary["spent_usd"])

    @property
    def best(self) -> dict[str, Any] | None:
        return self.summary["best"]


# -- the sync functions ---------------------------------------------------------------------------
P = ParamSpec("P")
R = TypeVar("R")


def _run_sync(run: Callable[P, Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs) -> R:
    """`run` in an event loop of its own. Inside a running loop none can be started (anyio
    would say only "Already running asyncio"), so the caller is told which twin to await."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running: the normal case
        return anyio.run(functools.partial(run, *args, **kwargs))
    name = run.__name__.removesuffix("_async")
    raise UserError(
        f"{name}() was called inside a running event loop; await {name}_async() instead"
    )


# -- argument checks: one line naming the argument, before anything is read or written -----------
def _workspace(workspace: object) -> Path:
    if isinstance(workspace, str | Path):
        return paths.absolute(workspace)
    raise _bad("workspace", workspace, "a folder's path (str or Path)")


def _task_types(task_types: object) -> list[str] | None:
    """One name may come as a str; names match whole, never as substrings of a str."""
    if task_types is None or isinstance(task_types, str):
        return None if task_types is None else [task_types]
    if isinstance(task_types, list | tuple) and all(isinstance(t, str) for t in task_types):
        return [str(t) for t in task_types]
    raise _bad("task_types", task_types, 'a list of names, e.g. ["dates"]')


# -- config -----------------------------------------------------------------------------------
def resume_config(root: Path, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The config a training run was going with (recorded in its checkpoint) plus overrides."""
    load_checkpoint(root)  # a damaged checkpoint is named with its recovery hint first
    return workspace_config(root, None, overrides)


# -- init ---------------------------------------------------------------------------------------
def init_workspace(
    workspace: str | Path,
    *,
    questions: str,
    seed: str | None = None,
    store: str | Path | None = None,
    skills_from: str | Path | None = None,
    prompts_from: str = "sim-starter",
) -> WorkspaceInfo:
    """Create a workspace from a store seed (or a folder of Agent Skills) and a benchmark."""
    root = _workspace(workspace)
    _expect("questions", questions, isinstance(questions, str), "a benchmark's name")
    _expect("seed", seed, seed is None or isinstance(seed, str), "a seed's name or None")
    _expect("prompts_from", prompts_from, isinstance(prompts_from, str), "a seed's name")
    _expect("skills_from", skills_from, _is_path(skills_from, none=True), "a folder's path")
    store_dir = writable_store(store) if skills_from is not None else _store(store)
    bench = find_benchmark(store_dir, questions)  # a bad name refuses before anything is written
    if skills_from is not None:
        from app.harness.skills.agent_skills import import_skills

        seed = seed or root.name
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise UserError(f"{root}: already exists; choose another path (nothing imported)")
        target = import_skills(
            paths.absolute(skills_from), store_dir, seed, find_seed(store_dir, prompts_from)
        )
        logger.info("imported {} as seed {}", skills_from, target)
    if seed is not None and not seed:
        raise UserError("init: give a seed name, a folder of Agent Skills (skills_from) or none")
    chosen = _init_seed(store_dir, seed, bench, prompts_from)
    seed = chosen.name
    created = ws.init_workspace(root, chosen, bench)
    _warn_of_benchmark_defects(bench, chosen)
    logger.debug(  # the CLI prints it as its result, on stdout
        "created workspace {} (skills/v1, prompts/v1, questions {})",
        created.root,
        created.questions_ref,
    )
    return WorkspaceInfo(
        created.root, seed, created.questions_ref, created.skills_version, created.prompts_version
    )


def _init_seed(store: Path, seed: str | None, bench: Path, prompts_from: str) -> Seed:
    """The named seed, or without one the starter skills of the benchmark's task types
    (app/harness/workspace/starter.py), announced: the user did not name them."""
    if seed is not None:
        return load_seed(find_seed(store, seed))
    from app.harness.workspace.starter import starter_seed, starter_summary

    starter = starter_seed(load_benchmark(bench), load_seed(find_seed(store, prompts_from)))
    logger.info("{}", starter_summary(starter))
    return starter


# -- train --------------------------------------------------------------------------------------
def train(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    resume: bool = False,
    fresh: bool = False,
    store: str | Path | None = None,
    progress: bool | None = False,
) -> TrainResult:
    """Train a workspace: a new run, `resume=True` to continue a stopped one exactly, or
    `fresh=True` to archive the workspace and start again from its seed."""
    return _run_sync(
        train_async,
        workspace,
        config,
        overrides=overrides,
        resume=resume,
        fresh=fresh,
        store=store,
        progress=progress,
    )


async def train_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    resume: bool = False,
    fresh: bool = False,
    store: str | Path | None = None,
    progress: bool | None = False,
) -> TrainResult:
    """`train` for callers inside an event loop."""
    _workspace(workspace)
    if resume and fresh:
        raise UserError("train: choose one of resume and fresh")
    root, started = paths.absolute(workspace), time.perf_counter()
    run_config = resolve_config(config, overrides)  # bad keys refuse before any state is read
    command = "train" + (" --resume" if resume else "") + (" --fresh" if fresh else "")
    # The lock first: the mode, the checkpoint and (for fresh) the archive are decided and
    # done by the only writer, so no live run can write into what this command sets up.
    with WriterLock(root, command) as lock:
        mode = ws.train_start_mode(root, resume=resume, fresh=fresh)
        if mode == "resume" and config is None:
            run_config = resume_config(root, overrides)
        if mode == "fresh":
            _restart_from_seed(root, _store(store), lock)
        if mode != "resume":  # a stored estimate is compared with this run by `report`
            from app.estimate import pin_estimate

            pin_estimate(root, run_config)
        with Session(root, run_config, Bars(enabled=progress)) as session:
            await Runner(session).train_async(resume=mode == "resume")
            totals = dict(session.recorder.totals)
    return _train_result(root, run_config, totals, time.perf_counter() - started)


def _restart_from_seed(root: Path, store: Path, lock: WriterLock) -> None:
    manifest = ws.read_manifest(root)
    bench = find_benchmark(store, manifest["current"]["questions"])
    starter = manifest.get("seed_starter")  # init without a seed: built again, the same way
    if isinstance(starter, dict) and isinstance(starter.get("prompts_from"), str):
        seed = _init_seed(store, None, bench, starter["prompts_from"])
    else:
        seed = load_seed(find_seed(store, manifest["seed"]))
    archived = ws.archive_workspace(root)
    ws.init_workspace(root, seed, bench, lock=lock)
    logger.info("archived the old workspace to {}", archived)


def _train_result(
    root: Path, config: RunConfig, totals: Mapping[str, Any], seconds: float
) -> TrainResult:
    final = read_final(root) or {}
    has_checkpoint = (root / "checkpoint.json").is_file()
    progress = load_checkpoint(root)["progress"] if has_checkpoint else {}
    train_id = str(progress.get("train_id") or final.get("train_id") or "")
    status, reason = _run_status(root, train_id)
    best = final.get("best") or {}
    return TrainResult(
        workspace=root,
        train_id=train_id,
        status=status,
        reason=reason,
        epochs_run=len(final.get("curve", [])),
        curve=tuple(_epoch_point(row) for row in final.get("curve", [])),
        baseline_test_accuracy=final.get("baseline_test_accuracy"),
        test_accuracy=final.get("test_accuracy"),
        best_skills_version=final.get("skills_version"),
        best_prompts_version=final.get("prompts_version"),
        best_val_acc=best.get("val_acc"),
        model_calls=int(totals.get("calls", 0)),
        cache_hits=int(totals.get("cache_hits", 0)),
        cost_usd=float(totals.get("cost_usd", 0.0)),
        wall_seconds=seconds,
        simulated_model=config.uses_sim,
    )


def _run_status(root: Path, run_id: str) -> tuple[str, str | None]:
    if not run_id or not (root / "harness.db").is_file():
        return "unknown", None
    with open_reader(root / "harness.db") as log:
        row = log.run(run_id)
    if row is None:
        return "unknown", None
    status = str(row.status)
    if status == "done" and row.summary.get("end") != EndReason.EARLY_STOP:
        return status, None  # all epochs run (or a summary written before `end` was recorded)
    return status, row.summary.get("reason")


def _epoch_point(row: Mapping[str, Any]) -> EpochPoint:
    return EpochPoint(
        epoch=int(row["epoch"]),
        val_acc=float(row["val_acc"]),
        test_acc=row.get("test_acc"),
        accepted=int(row.get(Count.ACCEPTED, 0)),
        provisional=int(row.get(Count.PROVISIONAL, 0)),
        rejected=int(row.get(Count.REJECTED, 0)),
        kept=int(row.get(Count.KEPT, 0)),
        rolled_back=int(row.get(Count.ROLLED_BACK, 0)),
    )


# -- demo ---------------------------------------------------------------------------------------
def demo(
    workspace: str | Path | None = None,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> TrainResult:
    """A fresh workspace (default `<workspaces>/demo`, the previous one archived) from the
    simulated seed, trained with the demo config."""
    return _run_sync(demo_async, workspace, config, overrides=overrides, progress=progress)


async def demo_async(
    workspace: str | Path | None = None,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> TrainResult:
    root = _workspace(workspace) if workspace is not None else paths.workspaces_dir() / "demo"
    demo_overrides = {**DEMO_WORLD, **dict(overrides or {})}
    run_config = resolve_config(config, demo_overrides, default_file=paths.demo_config())
    store = paths.builtin_store()
    seed, bench = load_seed(seed_dir(store, DEMO_SEED)), benchmark_dir(store, DEMO_QUESTIONS)
    _check_trainable(bench, run_config)  # a refused config leaves the previous demo in place
    is_workspace = (root / "manifest.json").is_file()
    if not is_workspace and root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UserError(
            f"{root}: exists and is not a workspace (no manifest.json); demo archives only a "
            "previous workspace: choose another path"
        )
    started = time.perf_counter()
    lock = WriterLock(root, "demo")
    try:  # a demo still being trained must not be archived under its feet
        if is_workspace:
            lock.acquire()
            logger.info("archived the previous demo workspace to {}", ws.archive_workspace(root))
        ws.init_workspace(root, seed, bench, lock=lock)
        logger.info("created {} from seed {} and benchmark {}", root, DEMO_SEED, DEMO_QUESTIONS)
        with Session(root, run_config, Bars(enabled=progress)) as session:
            await Runner(session).train_async(resume=False)
            totals = dict(session.recorder.totals)
    finally:
        lock.release()
    return _train_result(root, run_config, totals, time.perf_counter() - started)


def _check_trainable(bench: Path, config: RunConfig) -> None:
    """Refuse, as training would, a config that leaves no task type of `bench` to train."""
    from app.harness.rollouts.pools import filter_trainable, hold_out_task_types, split_pools
    from app.harness.workspace.store import load_benchmark

    b = load_benchmark(bench)
    pools, task_types = hold_out_task_types(
        split_pools(b.questions, b.split, b.seed),
        b.questions,
        config.task_types,
        config.holdout_task_types,
    )
    filter_trainable(pools, task_types, config.eval_min_per_class, config.trainable_min_units)


# -- evaluate and infer -------------------------------------------------------------------------
def evaluate(
    workspace: str | Path,
    version: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
    tool_aliases: Mapping[str, str] | None = None,
) -> EvalResult:
    """Answer the whole benchmark with skills `version` (e.g. "v3") and the current prompts;
    the report goes to `analyses/eval_<run_id>.json`. `tool_aliases` shows built-in tools
    under new names ({"read_context": "lookup"}): how much of a gain survives a changed tool
    interface (docs/scorecard.md#holdouts)."""
    return _run_sync(
        evaluate_async,
        workspace,
        version,
        config,
        overrides=overrides,
        progress=progress,
        tool_aliases=tool_aliases,
    )


async def evaluate_async(
    workspace: str | Path,
    version: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
    tool_aliases: Mapping[str, str] | None = None,
) -> EvalResult:
    from app.harness.rollouts.agent_prompts import check_tool_aliases

    version = check_version(version, "version")
    aliases = check_tool_aliases(tool_aliases)
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with (
        WriterLock(root, "eval"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        have = ws.list_versions(session.paths.root, "skills")
        if version not in have:
            raise UserError(f"{root}: no skills version {version!r} (have {have})")
        prompts = session.agent_prompts(skills_dir=session.paths.root / "skills" / version)
        prompts = dataclasses.replace(prompts, tool_aliases=aliases)
        run_id = next_run_id(session, f"eval-{version}-{prompts.prompts_version}-")
        before = _call_counts(session)
        with session.bars.live(), _budget_is_run_failed():
            outcome = await session.infer(
                list(session.benchmark.questions),
                run_id,
                "eval",
                prompts=prompts,
                label=f"eval {version}",
                provenance={"tool_aliases": dict(aliases)} if aliases else None,
            )
        result = _eval_result(outcome, session, version, prompts.prompts_version, before)
        result = dataclasses.replace(result, tool_aliases=dict(aliases))
        write_json_atomic(session.paths.analyses / f"eval_{run_id}.json", _eval_report(result))
    return result


def infer(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    task_types: list[str] | str | None = None,
    n_samples: int = 1,
    run_id: str | None = None,
    overwrite_run: bool = False,
    progress: bool | None = False,
) -> InferResult:
    """Answer the benchmark (or some task types of it: a list of names, or one name as a str)
    with the current versions, `n_samples` times; an existing `run_id` is refused unless
    `overwrite_run`."""
    return _run_sync(
        infer_async,
        workspace,
        config,
        overrides=overrides,
        task_types=task_types,
        n_samples=n_samples,
        run_id=run_id,
        overwrite_run=overwrite_run,
        progress=progress,
    )


async def infer_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    task_types: list[str] | str | None = None,
    n_samples: int = 1,
    run_id: str | None = None,
    overwrite_run: bool = False,
    progress: bool | None = False,
) -> InferResult:
    task_types = _task_types(task_types)
    _expect("n_samples", n_samples, type(n_samples) is int, "a whole number, at least 1")
    _expect("run_id", run_id, run_id is None or isinstance(run_id, str), "a run id or None")
    if n_samples < 1:
        raise UserError(f"n_samples: must be at least 1 (got {n_samples})")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    samples: list[EvalResult] = []
    with (
        WriterLock(root, "infer"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        questions = [
            q for q in session.benchmark.questions if not task_types or q.task_type in task_types
        ]
        if not questions:
            raise UserError(f"no questions for task types {task_types}")
        base = run_id if run_id is not None else next_run_id(session, "infer-")
        run_ids = [base] if n_samples == 1 else [f"{base}-s{n}" for n in range(n_samples)]
        replaced = {r: claim_run_id(session, r, overwrite_run) for r in run_ids}
        prompts = session.agent_prompts()
        with session.bars.live(), _budget_is_run_failed():
            for sample, sample_id in enumerate(run_ids):
                before = _call_counts(session)
                extra = {"overwrote": replaced[sample_id]} if replaced[sample_id] else None
                outcome = await session.infer(
                    questions, sample_id, "infer", sample=sample, provenance=extra
                )
                samples.append(
                    _eval_result(
                        outcome, session, prompts.skills_version, prompts.prompts_version, before
                    )
                )
    return InferResult(tuple(samples))


@contextlib.contextmanager
def _budget_is_run_failed() -> Iterator[None]:
    """A spent budget ends eval/infer as RunFailed, as it ends train (the runner maps it)."""
    try:
        yield
    except BudgetExceeded as e:
        raise RunFailed(
            f"{e}. The answers so far are logged: raise max_cost_usd and rerun."
        ) from None


def _call_counts(session: Session) -> tuple[int, int]:
    """(new model calls, cache hits) so far in this session; a run's are the difference."""
    totals = session.recorder.totals
    return int(totals["calls"] - totals["cache_hits"]), int(totals["cache_hits"])


def _eval_result(
    outcome: InferenceResult,
    session: Session,
    skills: str,
    prompts: str,
    before: tuple[int, int],
) -> EvalResult:
    calls, hits = _call_counts(session)
    return EvalResult(
        run_id=outcome.run_id,
        skills_version=skills,
        prompts_version=prompts,
        accuracy=outcome.accuracy,
        correct=outcome.correct,
        total=outcome.total,
        per_task_type={
            t: TaskTypeScore(float(e["accuracy"]), int(e["correct"]), int(e["total"]))
            for t, e in outcome.per_task_type.items()
        },
        stop_reason_counts=dict(outcome.stop_reason_counts),
        new_model_calls=calls - before[0],
        cache_hits=hits - before[1],
        simulated_model=session.config.uses_sim,
        memories_stored=memory.count(session.log) if session.config.memory_k > 0 else None,
    )


def _eval_report(result: EvalResult) -> dict[str, Any]:
    return {
        "run_id": result.run_id,
        "skills_version": result.skills_version,
        "prompts_version": result.prompts_version,
        "accuracy": result.accuracy,
        "total_units": result.total,
        "per_task_type": {
            t: {"accuracy": s.accuracy, "correct": s.correct, "total": s.total}
            for t, s in result.per_task_type.items()
        },
        "stop_reason_counts": result.stop_reason_counts,
        "new_model_calls": result.new_model_calls,
        "simulated_model": result.simulated_model,
        "tool_aliases": result.tool_aliases,
    }


# -- run ids ------------------------------------------------------------------------------------
def next_run_id(session: Session, prefix: str) -> str:
    taken = {r.run_id for r in LogReader(session.log).runs()}
    n = sum(1 for r in taken if r.startswith(prefix)) + 1
    while f"{prefix}{n}" in taken:  # an id given with --run-id may sit in the sequence
        n += 1
    return f"{prefix}{n}"


def claim_run_id(session: Session, run_id: str, overwrite: bool) -> dict[str, Any] | None:
    """Refuse a run id that would replace another run's rows, unless `overwrite` is given
    for an infer/eval run; returns what is being overwritten, for the new run's provenance."""
    _check_run_id(run_id)
    old = LogReader(session.log).run(run_id)
    if old is None:
        return None
    if not overwrite:
        raise UserError(
            f"--run-id (run_id) {run_id}: a {old.kind} run of that id already exists "
            f"(started {old.started_at}, {old.status}); pick another id, or "
            "add --overwrite-run (overwrite_run=True) to replace it"
        )
    logger.warning("replacing run {} ({} run started {})", run_id, old.kind, old.started_at)
    return {
        "run_id": old.run_id,
        "kind": old.kind,
        "status": old.status,
        "started_at": old.started_at,
        "finished_at": old.finished_at,
    }


TRAINING_RUN_RE = re.compile(r"(baseline|train\d+)(-.*)?")


def _check_run_id(run_id: str) -> None:
    check_run_id(run_id, "--run-id (run_id)")
    if TRAINING_RUN_RE.fullmatch(run_id):
        raise UserError(
            f"--run-id (run_id) {run_id}: ids like 'baseline' and 'trainN...' belong to "
            "training and are never replaced; pick another id"
        )


# -- report -------------------------------------------------------------------------------------
def report(workspace: str | Path) -> WorkspaceReport:
    """A read-only summary of a workspace: versions, runs, epochs, spend, progress."""
    root = _workspace(workspace)
    try:
        return WorkspaceReport(root, workspace_summary(root))
    except sqlite3.OperationalError as e:  # an emptied or foreign file: the tables are missing
        raise DamagedFile(
            f"{root / 'harness.db'}: not a complete harness log ({e}); restore it from a backup"
        ) from None


def _store_argument(store: object) -> Path | None:
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    return paths.absolute(store) if isinstance(store, str | Path) else None


def _store(store: object) -> Path:
    return _store_argument(store) or paths.builtin_store()


def writable_store(store: object) -> Path:
    """Where a new seed goes: `store`, else a checkout's own `store/`; an installed package's
    built-in store is never written (it lives in site-packages)."""
    chosen = _store_argument(store)
    if chosen is not None:
        return chosen
    if paths.checkout_root() is None:
        raise UserError(
            "--store DIR is needed (store= in the API): new seeds are not written into the installed package's "
            "built-in store"
        )
    return paths.builtin_store()


def find_seed(store: Path, name: str) -> Path:
    """A seed from `store`, else the built-in one of that name (sim-starter, real-starter)."""
    return _in_store_or_builtin(seed_dir, "seeds", store, name)


def find_benchmark(store: Path, name: str) -> Path:
    """A benchmark from `store`, else the built-in one of that name."""
    return _in_store_or_builtin(benchmark_dir, "questions", store, name)


def _in_store_or_builtin(
    lookup: Callable[[Path, str], Path], folder: str, store: Path, name: str
) -> Path:
    try:
        return lookup(store, name)
    except UserError as e:  # it names `store`, where the user looked
        builtin = paths.builtin_store()
        if store.resolve() == builtin.resolve():
            raise
        if not (builtin / folder / name).is_dir():  # the built-in names are looked up too
            names = seed_names if folder == "seeds" else benchmark_names
            raise UserError(f"{e}; built-in: {names(builtin)}") from None
        return lookup(builtin, name)


# -- diagnose -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiagnoseResult:
    """A run's failures diagnosed (app/harness/training/runner.py `diagnose_run`): counts by cause, and
    how many failures each case pack (what the evolver would be sent) sampled."""

    run_id: str
    failures: int
    by_category: dict[str, int]
    degraded: int  # diagnoses that did not parse
    contradictory: int
    skill_packs: dict[str, int]  # per task type
    system_pack: int
    tool_packs: dict[str, int]  # per tool
    simulated_model: bool
    decided_by: dict[str, int] = field(default_factory=dict)  # "judge" or "rule:<name>" -> n


def diagnose(
    workspace: str | Path,
    run_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DiagnoseResult:
    """Diagnose the failures of run `run_id` (e.g. "baseline") with the judge model; the
    diagnoses go to the harness log under `<run_id>-diagnose-...`."""
    return _run_sync(
        diagnose_async, workspace, run_id, config, overrides=overrides, progress=progress
    )


async def diagnose_async(
    workspace: str | Path,
    run_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DiagnoseResult:
    _expect("run_id", run_id, isinstance(run_id, str), "a run id, e.g. 'baseline'")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with (
        WriterLock(root, "diagnose"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        summary = await Runner(session).diagnose_run_async(run_id)
    return DiagnoseResult(**summary, simulated_model=run_config.uses_sim)


# -- promote and Agent Skills -------------------------------------------------------------------
@dataclass(frozen=True)
class PromoteResult:
    seed: Path  # the new seed's folder in the store
    agent_skills: tuple[Path, ...]  # the SKILL.md files written (agent_skills=OUT)


@dataclass(frozen=True)
class ImportResult:
    seed: Path  # the new seed's folder in the store


@dataclass(frozen=True)
class ExportSkillsResult:
    files: tuple[Path, ...]  # the SKILL.md files written


def promote(
    workspace: str | Path,
    version: str,
    *,
    eval_run: str,
    name: str,
    store: str | Path | None = None,
    agent_skills: str | Path | None = None,
) -> PromoteResult:
    """Copy skills `version` (justified by the finished eval run `eval_run`) into the store as
    seed `name`; with `agent_skills`, also write it as Agent Skills under that folder. All or
    nothing: the Agent Skills are removed again if the seed cannot be written."""
    from app.harness.skills.agent_skills import stage_version
    from app.harness.training.runner import promote as promote_to_store

    root = _workspace(workspace)
    _expect("version", version, isinstance(version, str), "a skills version, e.g. 'v3'")
    _expect("eval_run", eval_run, isinstance(eval_run, str), "an eval run's id")
    _expect("name", name, isinstance(name, str), "the new seed's name")
    _expect("agent_skills", agent_skills, _is_path(agent_skills, none=True), "a folder's path")
    store_dir = writable_store(store)
    written: list[Path] = []
    with WriterLock(root, "promote"):
        # the Agent Skills are written (and every check passed) before the seed is
        staged = None
        if agent_skills is not None:
            staged = stage_version(root, version, paths.absolute(agent_skills), eval_run, store_dir)
            written = staged.publish()
        try:
            target = promote_to_store(root, version, eval_run, name, store_dir)
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
    return PromoteResult(target, tuple(written))


def import_skills(
    skills_dir: str | Path,
    *,
    name: str,
    store: str | Path | None = None,
    prompts_from: str = "sim-starter",
) -> ImportResult:
    """A folder of Agent Skills (`<name>/SKILL.md`) becomes store seed `name`, with the prompts
    of seed `prompts_from` (unless the folder has prompts/system.md)."""
    from app.harness.skills.agent_skills import import_skills as import_to_store

    _expect("skills_dir", skills_dir, _is_path(skills_dir), "a folder's path")
    _expect("name", name, isinstance(name, str), "the new seed's name")
    _expect("prompts_from", prompts_from, isinstance(prompts_from, str), "a seed's name")
    store_dir = writable_store(store)
    target = import_to_store(
        paths.absolute(skills_dir), store_dir, name, find_seed(store_dir, prompts_from)
    )
    return ImportResult(target)


def export_skills(
    workspace: str | Path,
    *,
    out: str | Path,
    version: str = "best",
    eval_run: str | None = None,
    store: str | Path | None = None,
) -> ExportSkillsResult:
    """Write skills `version` ("best", or e.g. "v3") as `<out>/.agents/skills/<name>/SKILL.md`,
    with the accuracy of `eval_run` (default: the version's latest eval) in the metadata."""
    from app.harness.skills.agent_skills import export_version

    root = _workspace(workspace)
    _expect("out", out, _is_path(out), "a folder's path")
    _expect("version", version, isinstance(version, str), "'best' or a version, e.g. 'v3'")
    _expect("eval_run", eval_run, eval_run is None or isinstance(eval_run, str), "a run id")
    # reads only immutable, sha256-checked versions: no writer lock needed (like `report`)
    files = export_version(root, version, paths.absolute(out), eval_run, _store(store))
    return ExportSkillsResult(tuple(files))


# -- best-of-N: fork, rank, export --------------------------------------------------------------
@dataclass(frozen=True)
class ForkResult:
    """A fork (app/harness/data/fork.py): `branches` answers in all over `questions` questions."""

    rollout_id: str
    questions: int
    branches: int
    ran: int
    skipped: int  # branches a resumed fork had already finished
    elapsed_s: float
    pass_at_1: float  # mean over questions of the share of branches right (core/scorecard.py)
    pass_at_n: float
    simulated_model: bool


@dataclass(frozen=True)
class JudgeStats:
    model: str
    calls: int
    cap_per_batch: int
    max_calls_in_a_batch: int
    batches_at_cap: int
    calls_over_cap: int
    capped_samples: int
    samples: int
    temperature: float
    same_model_as_agent: bool
    pairwise: PairwiseBias | None = None  # position and verbosity controls (core/ranking.py)


@dataclass(frozen=True)
class PairwiseBias:
    """Pairwise judging controls of a rank (core/ranking.py `pairwise_report`): a preference
    counts only when both orders agree; figures are None when there was nothing to measure."""

    pairs_both_orders: int
    order_disagreements: int
    order_disagreement_rate: float | None
    one_order_only: int
    first_shown_win_rate: float | None  # 0.5 for a judge without position bias
    length_mismatched_verdicts: int
    longer_preferred_share: float | None
    verbosity_warning: bool


@dataclass(frozen=True)
class PairedStats:
    """The ranker's top branch vs branch 0, paired by question (core/ranking.py
    `paired_report`); figures are None when there was nothing to measure."""

    n: int
    powered: bool
    accuracy: float | None
    baseline_accuracy: float | None
    wilson: tuple[float, float]
    wins: int
    losses: int
    min_detectable_delta_pp: float | None
    mcnemar_p: float | None


@dataclass(frozen=True)
class MemoryStats:
    stored: int
    dropped_unverified: int
    already_stored: int
    test_pool_skipped: int


@dataclass(frozen=True)
class RankResult:
    """A fork ranked (app/harness/data/rank.py); the same report is in `analyses/rank_<id>.json`."""

    rollout_id: str
    questions: int
    branches: int
    verifiers: tuple[str, ...]
    weights: dict[str, float]
    pass_at_1: float
    pass_at_n: float
    ranker_top_correct_share: float | None  # None: no question had a correct branch
    judge: JudgeStats
    top_vs_branch0: PairedStats
    memories: MemoryStats | None  # None: remember=False
    simulated_model: bool
    classes: TrajectoryClasses | None = None  # curation (see the end of this module)
    cascade: CascadeReport | None = None  # None: every verifier ran on every branch


@dataclass(frozen=True)
class SourceVersion:
    skills: str
    prompts: str


@dataclass(frozen=True)
class ExportedFile:
    """One JSONL file of an export and its manifest (`<file>.manifest.json` beside it)."""

    file: str
    layout: str
    export_version: int
    count: int
    sha256: str
    rollout_ids: tuple[str, ...]
    source_versions: tuple[SourceVersion, ...]
    test_pool_included: bool
    test_questions_skipped: int
    simulated_model: bool
    created_at: str
    # branches only a rubric judge passed, left out of training targets unless audited
    # (app/harness/data/admission.py)
    judge_only_refused: int = 0
    judge_only_audited: int = 0
    judge_only_refused_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExportResult:
    out: Path
    files: dict[str, ExportedFile]  # by file name, e.g. "sft.jsonl"
    curation: CurationSummary | None = None  # curation.manifest.json (end of this module)


def fork(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    branches: int = 8,
    temperatures: list[float] | tuple[float, ...] | None = None,
    temperature_range: tuple[float, float] | None = None,
    pool: str = "diagnosis",
    task_types: list[str] | str | None = None,
    questions: list[str] | str | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    rollout_id: str | None = None,
    resume: bool = False,
    progress: bool | None = False,
    select: str | None = None,
) -> ForkResult:
    """Answer each selected question (of `pool`, `task_types`, `questions` ids, at most `limit`)
    as `branches` branches at `temperatures` (one per branch) or evenly over
    `temperature_range`; `resume=True` finishes a killed fork of `rollout_id`;
    `select="informative"` keeps only the questions whose branches disagreed in the latest
    fork (0 < p-hat < 1: docs/scorecard.md#loop-health)."""
    return _run_sync(
        fork_async,
        workspace,
        config,
        overrides=overrides,
        branches=branches,
        temperatures=temperatures,
        temperature_range=temperature_range,
        pool=pool,
        task_types=task_types,
        questions=questions,
        limit=limit,
        concurrency=concurrency,
        rollout_id=rollout_id,
        resume=resume,
        progress=progress,
        select=select,
    )


async def fork_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    branches: int = 8,
    temperatures: list[float] | tuple[float, ...] | None = None,
    temperature_range: tuple[float, float] | None = None,
    pool: str = "diagnosis",
    task_types: list[str] | str | None = None,
    questions: list[str] | str | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    rollout_id: str | None = None,
    resume: bool = False,
    progress: bool | None = False,
    select: str | None = None,
) -> ForkResult:
    from app.harness.data.fork import ForkSpec, branch_temperatures, run_fork, select_questions

    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    _check_fork_arguments(branches, temperatures, temperature_range, pool, limit, rollout_id)
    task_types, question_ids = _task_types(task_types), _names("questions", questions)
    _expect(
        "concurrency",
        concurrency,
        concurrency is None or type(concurrency) is int,
        "a whole number, at least 1, or None",
    )
    with (
        WriterLock(root, "fork"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        if resume:
            if not rollout_id:
                raise UserError("--resume needs --rollout-id")
            spec = ForkSpec((), (0.0,))  # replaced by the stored spec
        else:  # a resumed fork goes on with the stored spec's concurrency
            in_flight = concurrency if concurrency is not None else run_config.concurrency
            if in_flight < 1:
                raise UserError(f"--concurrency must be >= 1 (got {in_flight})")
            temps = branch_temperatures(
                branches, temperatures, temperature_range, run_config.temperature
            )
            question_ids = _selected_questions(session, select, question_ids)
            chosen = select_questions(session.benchmark, pool, task_types, question_ids, limit)
            spec = ForkSpec(tuple(q.question_id for q in chosen), temps, in_flight, pool)
            rollout_id = rollout_id or next_run_id(session, "fork-")
        with session.bars.live():
            ran = await run_fork(session, spec, rollout_id, resume=resume, bars=session.bars)
        row = LogReader(session.log).run(rollout_id)
    summary = row.summary if row is not None else {}
    return ForkResult(
        rollout_id=ran.rollout_id,
        questions=ran.questions,
        branches=ran.branches,
        ran=ran.ran,
        skipped=ran.skipped,
        elapsed_s=ran.elapsed_s,
        pass_at_1=summary.get("pass_at_1", 0.0),
        pass_at_n=summary.get("pass_at_n", 0.0),
        simulated_model=run_config.uses_sim,
    )


def _selected_questions(
    session: Session, select: object, question_ids: list[str] | None
) -> list[str] | None:
    """`question_ids` narrowed by `select` (loop health: app/harness/data/loop_health.py)."""
    from app.harness.data.loop_health import informative_questions

    _expect("select", select, select in (None, "informative"), 'None or "informative"')
    if select is None:
        return question_ids
    last, ids = informative_questions(session.log)
    if last is None:
        raise UserError("--select informative: no earlier fork in this workspace to select from")
    if question_ids:
        ids = [q for q in ids if q in set(question_ids)]
    if not ids:
        raise UserError(f"--select informative: no question of {last} had 0 < p-hat < 1")
    logger.info("--select informative: {} questions of {} (0 < p-hat < 1)", len(ids), last)
    return ids


def _check_fork_arguments(
    branches: object,
    temperatures: object,
    temperature_range: object,
    pool: object,
    limit: object,
    rollout_id: object,
) -> None:
    _expect("branches", branches, type(branches) is int, "a whole number of branches")
    _expect(
        "temperatures",
        temperatures,
        temperatures is None
        or (isinstance(temperatures, list | tuple) and all(_is_number(t) for t in temperatures)),
        "a list of numbers, one per branch, or None",
    )
    _expect(
        "temperature_range",
        temperature_range,
        temperature_range is None
        or (
            isinstance(temperature_range, list | tuple)
            and len(temperature_range) == 2
            and all(_is_number(t) for t in temperature_range)
        ),
        "two numbers (low, high) or None",
    )
    _expect("pool", pool, isinstance(pool, str), "diagnosis, validation, test or all")
    _expect("limit", limit, limit is None or type(limit) is int, "a whole number or None")
    _expect("rollout_id", rollout_id, rollout_id is None or isinstance(rollout_id, str), "an id")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _names(label: str, names: object) -> list[str] | None:
    """Ids as a list; one may come as a str (matched whole, never as a substring)."""
    if names is None or isinstance(names, str):
        return None if names is None else [names]
    if isinstance(names, list | tuple) and all(isinstance(n, str) for n in names):
        return [str(n) for n in names]
    raise _bad(label, names, "a list of ids")


def rank(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    verifiers: list[str] | tuple[str, ...] = ("checker",),
    weights: Mapping[str, float] | None = None,
    judge_cap: int | None = None,
    remember: bool = True,
    progress: bool | None = False,
    cascade: bool = False,
    verifier_costs: Mapping[str, float] | None = None,
) -> RankResult:
    """Verify, judge and rank the branches of fork `rollout_id`; `remember` stores verified
    winners as memories (never test-pool questions). `weights` (objective, judge, bt or
    module:function) replace the default weights; `judge_cap` caps judge calls per question.
    `cascade` runs the verifiers cheapest first and stops at a branch's first non-pass, with
    `verifier_costs` (seconds per branch) declared instead of measured."""
    return _run_sync(
        rank_async,
        workspace,
        rollout_id,
        config,
        overrides=overrides,
        verifiers=verifiers,
        weights=weights,
        judge_cap=judge_cap,
        remember=remember,
        progress=progress,
        cascade=cascade,
        verifier_costs=verifier_costs,
    )


async def rank_async(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    verifiers: list[str] | tuple[str, ...] = ("checker",),
    weights: Mapping[str, float] | None = None,
    judge_cap: int | None = None,
    remember: bool = True,
    progress: bool | None = False,
    cascade: bool = False,
    verifier_costs: Mapping[str, float] | None = None,
) -> RankResult:
    from app.harness.data.rank import rank_rollout

    _check_rank_arguments(rollout_id, verifiers, weights, judge_cap, remember)
    _check_cascade_arguments(cascade, verifier_costs)
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with (
        WriterLock(root, "rank"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        report = await rank_rollout(
            session,
            rollout_id,
            verifiers=tuple(verifiers),
            weights=_rank_weights(weights),
            judge_cap=judge_cap,
            remember=remember,
            cascade=cascade,
            verifier_costs=dict(verifier_costs or {}),
        )
    result = _rank_result(report)
    if not result.top_vs_branch0.powered:
        logger.warning(
            "underpowered (n={}): read the ranking as a best-effort estimate",
            result.top_vs_branch0.n,
        )
    return result


def _check_rank_arguments(
    rollout_id: object, verifiers: object, weights: object, judge_cap: object, remember: object
) -> None:
    _expect("rollout_id", rollout_id, isinstance(rollout_id, str), "a fork's id, e.g. 'fork-1'")
    _expect(
        "verifiers",
        verifiers,
        isinstance(verifiers, list | tuple) and all(isinstance(v, str) for v in verifiers),
        'a list of names, e.g. ["checker"]',
    )
    _expect(
        "weights",
        weights,
        weights is None
        or (
            isinstance(weights, Mapping)
            and all(isinstance(k, str) and _is_number(v) for k, v in weights.items())
        ),
        'a mapping of reward keys to numbers, e.g. {"judge": 0.5}',
    )
    _expect("judge_cap", judge_cap, judge_cap is None or type(judge_cap) is int, "a whole number")
    _expect("remember", remember, isinstance(remember, bool), "True or False")


def _rank_weights(weights: Mapping[str, float] | None) -> dict[str, float] | None:
    """`weights` over the default ones (core/ranking.py), as `rank --weight` gives them."""
    from core.ranking import DEFAULT_WEIGHTS

    if weights is None:
        return None
    for key in weights:
        if key not in DEFAULT_WEIGHTS and ":" not in key:
            known = ", ".join(DEFAULT_WEIGHTS)
            raise UserError(f"weights: unknown key {key!r} (one of {known}, or module:function)")
    return {**DEFAULT_WEIGHTS, **weights}


def _rank_result(report: Mapping[str, Any]) -> RankResult:
    paired, memories = report["top_vs_branch0"], report["memories"]
    return RankResult(
        rollout_id=report["rollout_id"],
        questions=report["questions"],
        branches=report["branches"],
        verifiers=tuple(report["verifiers"]),
        weights=dict(report["weights"]),
        pass_at_1=report["pass_at_1"],
        pass_at_n=report["pass_at_n"],
        ranker_top_correct_share=report["ranker_top_correct_share"],
        judge=JudgeStats(
            **{
                **report["judge"],
                "pairwise": PairwiseBias(**report["judge"]["pairwise"])
                if report["judge"].get("pairwise")
                else None,
            }
        ),
        top_vs_branch0=PairedStats(**{**paired, "wilson": tuple(paired["wilson"])}),
        memories=None if memories is None else MemoryStats(**memories),
        simulated_model=report["simulated_model"],
        classes=_trajectory_classes(report.get("classes")),
        cascade=_cascade_report(report.get("cascade")),
    )


def export(
    workspace: str | Path,
    rollout_ids: list[str] | str,
    *,
    out: str | Path | None = None,
    include_test: bool = False,
    overwrite: bool = False,
    mix: Mapping[str, float] | str | None = None,
    by: str = "tokens",
    mix_total: int | None = None,
    seed: int = 0,
    allow_copyleft: bool = False,
    allow_restricted: bool = False,
    audited: str | Path | None = None,
) -> ExportResult:
    """Write the ranked forks `rollout_ids` (or ingest runs: their traces by their feedback,
    docs/ingest.md#as-training-data) as DPO pairs, SFT examples and reward records
    (JSONL, each with a manifest) into `out` (default `<workspace>/exports/<first id>`); the
    test pool's questions are left out unless `include_test`. Calls no model.
    `mix` ("pristine=0.65,recovery=0.25" or a mapping) down-samples the curated SFT files to
    those shares `by` tokens or count (seeded by `seed`; `mix_total` fixes the size). A
    benchmark without a licence, or a proprietary or non-commercial one, is refused unless
    `allow_restricted` (the user's own data); strong copyleft needs `allow_copyleft`.
    A branch only a rubric judge passed is no training target unless the `audited` ids file
    names it (docs/checkers.md)."""
    from app.harness.data.admission import read_audited
    from app.harness.data.export import export_rollouts

    root = _workspace(workspace)
    ids = _names("rollout_ids", rollout_ids)
    if not ids:
        raise _bad("rollout_ids", rollout_ids, "at least one ranked fork's id")
    _expect("out", out, _is_path(out, none=True), "a folder's path or None")
    _expect("include_test", include_test, isinstance(include_test, bool), "True or False")
    _expect("overwrite", overwrite, isinstance(overwrite, bool), "True or False")
    _expect("allow_copyleft", allow_copyleft, isinstance(allow_copyleft, bool), "True or False")
    _expect(
        "allow_restricted", allow_restricted, isinstance(allow_restricted, bool), "True or False"
    )
    options = _curation_options(mix, by, mix_total, seed, allow_copyleft, allow_restricted)
    _expect("audited", audited, _is_path(audited, none=True), "an audited-ids file's path or None")
    audited_ids = read_audited(paths.absolute(audited)) if audited is not None else frozenset()
    with (
        WriterLock(root, "export"),
        Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session,
    ):
        target = paths.absolute(out) if out is not None else session.paths.root / "exports" / ids[0]
        manifests = export_rollouts(
            session,
            ids,
            target,
            include_test=include_test,
            overwrite=overwrite,
            curation=options,
            audited=audited_ids,
        )
    return ExportResult(
        target,
        {name: _exported_file(m) for name, m in manifests.items()},
        _curation_summary(target / "curation.manifest.json"),
    )


def _exported_file(manifest: Mapping[str, Any]) -> ExportedFile:
    return ExportedFile(
        **{
            **manifest,
            "rollout_ids": tuple(manifest["rollout_ids"]),
            "source_versions": tuple(SourceVersion(**v) for v in manifest["source_versions"]),
            "judge_only_refused_ids": tuple(manifest.get("judge_only_refused_ids", ())),
        }
    )


# --- benchmark format ---
def validate_benchmark(
    name: str, *, store: str | Path | None = None, seed: str | None = None
) -> BenchmarkValidation:
    """Check that a store benchmark can tell right from wrong (docs/benchmarks.md), and run
    every check `train` runs before its first model call (with default settings; the skill
    files only with `seed`): format errors raise UserError (file:line: field); defects come
    back as findings in file and line order, each with its severity. Writes nothing."""
    from app.harness.rollouts.benchmark_validation import validate_benchmark_dir

    _expect("name", name, isinstance(name, str), "a benchmark's name")
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    _expect("seed", seed, seed is None or isinstance(seed, str), "a seed's name or None")
    store_dir = _store(store)
    bench = find_benchmark(store_dir, name)
    if seed is None:
        return validate_benchmark_dir(bench)
    skills = load_seed(find_seed(store_dir, seed)).skills
    return validate_benchmark_dir(bench, skills=skills, skills_source=f"seed {seed}")


def _warn_of_benchmark_defects(bench: Path, seed: Seed) -> None:
    """`init` prints the validate-benchmark findings as warnings (errors, too-small pools and
    untrainable task types one by one, the rest counted) and never refuses on them."""
    from app.harness.rollouts.benchmark_validation import init_lines, validate_benchmark_dir

    try:
        report = validate_benchmark_dir(
            bench, skills=seed.skills, skills_source=f"seed {seed.name}"
        )
    except UserError as e:  # the workspace exists: a file changed since must not fail init
        logger.warning("benchmark not validated: {}", e)
        return
    if report.findings:
        for line in init_lines(report):
            logger.warning("{}", line)


# --- serve ---
def serve(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    version: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    name: str | None = None,
    on_ready: Callable[[ServeReady], None] | None = None,
    allow_origins: Sequence[str] = (),
) -> ServeOutcome:
    """Serve the workspace's agent at an OpenAI-compatible endpoint until SIGTERM/Ctrl-C
    (docs/serving.md); holds the writer lock while it runs."""
    return _run_sync(
        serve_async,
        workspace,
        config,
        overrides=overrides,
        version=version,
        host=host,
        port=port,
        token=token,
        name=name,
        on_ready=on_ready,
        allow_origins=allow_origins,
    )


async def serve_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    version: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    name: str | None = None,
    on_ready: Callable[[ServeReady], None] | None = None,
    stop: anyio.Event | None = None,
    allow_origins: Sequence[str] = (),
) -> ServeOutcome:
    root = _workspace(workspace)
    _expect("port", port, type(port) is int and 0 <= port < 65536, "a port number (0: any free)")
    if version is not None and version not in ("best", "current"):
        version = check_version(version, "--version (version)")
    from app.harness.serving.server import ServeSettings, serve_workspace

    settings = ServeSettings(
        host=host,
        port=port,
        token=token,
        version=version,
        name=name,
        allow_origins=tuple(allow_origins),
    )
    return await serve_workspace(
        root, serve_config(root, config, overrides), settings, on_ready, stop
    )


def serve_config(
    root: Path, config: ConfigSource, overrides: Mapping[str, Any] | None
) -> RunConfig:
    """The trained agent's own config (its training run's, from the checkpoint) unless a
    config is given; overrides on top either way (app/api_args.py `workspace_config`)."""
    return workspace_config(_workspace(root), config, overrides)


def savings(
    workspace: str | Path,
    *,
    run_id: str | None = None,
    baseline_model: str | None = None,
    baseline_run: str | None = None,
) -> SavingsReport:
    """Cost, latency p50/p95 and accuracy of a run (default: the latest serve, else eval, else
    infer run) against a baseline model's prices or another run, from the log (read-only)."""
    from app.harness.serving.savings import savings_report

    for label, value in (("run_id", run_id), ("baseline_run", baseline_run)):
        if value is not None:
            check_run_id(value, label)
    _expect(
        "baseline_model",
        baseline_model,
        baseline_model is None or isinstance(baseline_model, str),
        "a model name or None",
    )
    return savings_report(_workspace(workspace), run_id, baseline_model, baseline_run)


# --- trace export (OTLP, Inspect) ---

__all__ += ["TraceExportResult", "TraceFile", "export_traces"]


@dataclass(frozen=True)
class TraceFile:
    """One file of a trace export and its manifest (`<file>.manifest.json` beside it)."""

    file: str
    format: str
    count: int  # trajectories: fork branches or run predictions
    sha256: str
    run_ids: tuple[str, ...]
    test_pool_included: bool
    simulated_model: bool
    created_at: str


@dataclass(frozen=True)
class TraceExportResult:
    out: Path
    files: dict[str, TraceFile]  # by file name: "otlp.json" or "inspect-<run>.json"


def export_traces(
    workspace: str | Path,
    run_ids: list[str] | str,
    *,
    format: str = "otlp",  # noqa: A002 -- the CLI's --format
    out: str | Path | None = None,
    include_test: bool = False,
    overwrite: bool = False,
) -> TraceExportResult:
    """Write runs or forks `run_ids` as OTLP JSON (`format="otlp"`: GenAI spans, one trace per
    trajectory) or as Inspect AI eval logs (`format="inspect"`) into `out` (default
    `<workspace>/exports/<first id>`), every string redacted (app/secrets.py `scrub_json`);
    the step-to-span mapping is in app/harness/data/export_otel.py. Calls no model."""
    from app.harness.data.export_otel import FORMATS
    from app.harness.data.export_otel import export_traces as write_traces

    root = _workspace(workspace)
    ids = _names("run_ids", run_ids)
    if not ids:
        raise _bad("run_ids", run_ids, "at least one run or fork id")
    _expect("format", format, format in FORMATS, " or ".join(repr(f) for f in FORMATS))
    _expect("out", out, _is_path(out, none=True), "a folder's path or None")
    _expect("include_test", include_test, isinstance(include_test, bool), "True or False")
    _expect("overwrite", overwrite, isinstance(overwrite, bool), "True or False")
    with (
        WriterLock(root, "export"),
        Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session,
    ):
        target = paths.absolute(out) if out is not None else session.paths.root / "exports" / ids[0]
        manifests = write_traces(
            session, ids, target, format, include_test=include_test, overwrite=overwrite
        )
    return TraceExportResult(
        target,
        {n: TraceFile(**{**m, "run_ids": tuple(m["run_ids"])}) for n, m in manifests.items()},
    )


# --- curation ---
if TYPE_CHECKING:
    from app.harness.data.export_formats import CurationOptions


@dataclass(frozen=True)
class TrajectoryClasses:
    """How many ranked branches fell in each trajectory class (core/curation.py)."""

    counts: dict[str, int]  # pristine, recovery, verbose, negative
    shares: dict[str, float]  # of all ranked branches
    recovery_with_retry: int  # recoveries whose remediation re-called the faulted tool


@dataclass(frozen=True)
class CascadeStage:
    verifier: str
    entered: int
    passed: int
    pass_rate: float
    mean_cost_s: float
    cost_basis: str  # declared, declared by the verifier, or measured on N branches
    measured_mean_s: float | None
    rejected: int
    rejects: tuple[str, ...]  # "question#branch", the first ones


@dataclass(frozen=True)
class CascadeReport:
    """`rank --cascade`: stages cheapest first; yield Y = prod p_i, C_attempt = c1 + p1 c2 +
    ..., cost per accepted = C_attempt / Y; spent vs every verifier on every branch."""

    order: tuple[str, ...]
    stages: tuple[CascadeStage, ...]
    yield_rate: float  # Y
    cost_per_attempt_s: float
    cost_every_stage_s: float
    cost_per_accepted_s: float | None
    cost_spent_s: float
    cost_if_every_verifier_s: float
    cost_ratio: float | None


def _trajectory_classes(report: Mapping[str, Any] | None) -> TrajectoryClasses | None:
    if not report:
        return None
    return TrajectoryClasses(
        dict(report["counts"]), dict(report["shares"]), report["recovery_with_retry"]
    )


def _cascade_report(report: Mapping[str, Any] | None) -> CascadeReport | None:
    if not report:
        return None
    fields = {k: v for k, v in report.items() if k not in ("stages", "order")}
    return CascadeReport(
        order=tuple(report["order"]),
        stages=tuple(
            CascadeStage(**{**st, "rejects": tuple(st["rejects"])}) for st in report["stages"]
        ),
        **fields,
    )


def _check_cascade_arguments(cascade: object, verifier_costs: object) -> None:
    _expect("cascade", cascade, isinstance(cascade, bool), "True or False")
    _expect(
        "verifier_costs",
        verifier_costs,
        verifier_costs is None
        or (
            isinstance(verifier_costs, Mapping)
            and all(
                isinstance(k, str) and _is_number(v) and v >= 0 for k, v in verifier_costs.items()
            )
        ),
        'a mapping of verifier names to seconds (>= 0), e.g. {"checker": 0.001}',
    )


@dataclass(frozen=True)
class CurationSummary:
    """An export's curation manifest (app/harness/data/export_formats.py)."""

    classes_available: dict[str, int]
    mix_by: str
    mix_requested: dict[str, float] | None  # None: every pristine and recovery branch
    mix_realised: dict[str, float] | None
    mix_max_error_pp: float | None
    sft_records: int
    preference_records: int
    negative_token_share: float | None  # of the preference data's tokens
    lineage_id: str  # sha256, or hmac-sha256 under SKILL_TRAINER_LINEAGE_KEY
    licence_tier: (
        str  # permissive, weak-copyleft, strong-copyleft or restricted (allowed by the user)
    )
    # the --mix shares as given; mix_requested is them normalised to sum 1 over the classes named
    mix_given: dict[str, float] | None = None


def _curation_options(
    mix: object,
    by: object,
    total: object,
    seed: object,
    allow_copyleft: bool,
    allow_restricted: bool = False,
) -> CurationOptions:
    from app.harness.data.export_formats import CurationOptions, parse_mix_option

    _expect("by", by, by in ("tokens", "count"), '"tokens" or "count"')
    _expect("mix_total", total, total is None or (type(total) is int and total > 0), "a count > 0")
    _expect("seed", seed, type(seed) is int, "a whole number")
    if mix is None:
        shares = None
    elif isinstance(mix, str):
        shares = parse_mix_option(mix)
    elif isinstance(mix, Mapping) and all(
        isinstance(k, str) and _is_number(v) for k, v in mix.items()
    ):
        shares = parse_mix_option(",".join(f"{k}={v}" for k, v in mix.items()))
    else:
        raise _bad("mix", mix, '"pristine=0.65,recovery=0.25" or a mapping of class to share')
    return CurationOptions(
        shares,
        by == "tokens",
        int(str(seed)),
        None if total is None else int(str(total)),
        allow_copyleft,
        allow_restricted,
    )


def _curation_summary(path: Path) -> CurationSummary | None:
    import json

    if not path.is_file():
        return None
    m = json.loads(path.read_text())
    mix_part, pref = m["mix"], m["preference"]
    return CurationSummary(
        classes_available=dict(m["classes_available"]),
        mix_by=mix_part["by"],
        mix_requested=mix_part.get("requested"),
        mix_realised=mix_part.get("realised"),
        mix_max_error_pp=mix_part.get("max_error_pp"),
        sft_records=m["sft_records"],
        preference_records=pref["records"],
        negative_token_share=pref["negative_token_share"],
        lineage_id=m["lineage"]["id"],
        licence_tier=m["licence"]["tier"],
        mix_given=mix_part.get("given"),
    )


@dataclass(frozen=True)
class ExportVerifyResult:
    """`export verify DIR`: records whose digest, lineage id (and, with a workspace, whose
    component hashes) no longer match, files whose sha256 or record count differ from their
    manifests; the first one named as file:line. `checked` says how each file was checked,
    `not_checked` which were not and why."""

    folder: Path
    files: int
    records: int
    failures: int
    first_failure: str | None
    keyed: bool
    workspace_checked: bool
    checked: dict[str, str]  # file -> what was checked
    not_checked: dict[str, str]  # file -> why not (absent, no manifest)


def export_verify(folder: str | Path, workspace: str | Path | None = None) -> ExportVerifyResult:
    """Recompute every curated record's lineage in `folder`; with `workspace`, also every
    component hash from it. Calls no model and writes nothing."""
    from app.harness.data.export import LAYOUTS
    from app.harness.data.export_formats import CURATED_LAYOUTS
    from app.harness.data.lineage import verify_folder

    _expect("folder", folder, _is_path(folder, none=False), "an export folder's path")
    names, hashed = tuple(CURATED_LAYOUTS), tuple(LAYOUTS)
    if workspace is None:
        r = verify_folder(paths.absolute(folder), names, None, hashed)
    else:
        root = _workspace(workspace)
        with Session(root, resolve_config(), Bars(enabled=False), calls_models=False) as session:
            r = verify_folder(paths.absolute(folder), names, session, hashed)
    return ExportVerifyResult(
        r.folder,
        r.files,
        r.records,
        r.failures,
        r.first_failure,
        r.keyed,
        r.workspace_checked,
        r.checked,
        r.not_checked,
    )


# --- checkers ---


@dataclass(frozen=True)
class JudgeQualityResult:
    """`judge-quality`: how the rubric judge did on labelled cases (core/judge_quality.py)."""

    run_id: str
    judge_model: str
    cases: int
    judged: int
    agreement: float
    pass_line: float
    passed: bool
    leniency: float
    verbosity_bias: float
    invalid_cases: int
    invalid_replies: int
    by_kind: dict[str, float]
    band_misses: tuple[dict[str, Any], ...]
    record: Path
    simulated_model: bool


def judge_quality(
    workspace: str | Path,
    cases: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    pass_line: float = 0.9,
) -> JudgeQualityResult:
    """Grade the rubric judge (`judge_model`) on the labelled cases of `cases` (JSONL,
    docs/checkers.md#judge-quality) and record the check in `analyses/judge_quality.json`."""
    return _run_sync(
        judge_quality_async, workspace, cases, config, overrides=overrides, pass_line=pass_line
    )


async def judge_quality_async(
    workspace: str | Path,
    cases: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    pass_line: float = 0.9,
) -> JudgeQualityResult:
    from app.harness.rollouts.judge_quality import (
        judge_cases,
        load_cases,
        quality_summary,
        record_check,
    )
    from app.harness.rollouts.rubric import RubricSettings
    from app.harness.workspace.log import RunStatus
    from core.judge_quality import assess

    root = _workspace(workspace)
    _expect("cases", cases, _is_path(cases), "a JSONL file's path")
    _expect(
        "pass_line",
        pass_line,
        isinstance(pass_line, int | float)
        and not isinstance(pass_line, bool)
        and 0 < pass_line <= 1,
        "a number in (0, 1]",
    )
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "judge-quality"), Session(root, run_config, Bars(enabled=False)) as s:
        labelled = load_cases(paths.absolute(cases), s.questions_by_id)
        run_id = next_run_id(s, "judge-quality-")
        s.register(run_id, "judge_quality", s.agent_prompts())
        settings = RubricSettings(
            samples=run_config.rubric_samples, temperature=run_config.rubric_temperature
        )
        with _budget_is_run_failed():
            scores = await judge_cases(
                s.providers["judge"], settings, labelled, run_id, run_config.concurrency
            )
        quality = assess(labelled, scores, float(pass_line))
        s.recorder.flush()
        s.log.finish_run(run_id, RunStatus.DONE, quality_summary(quality))
        entry = record_check(
            s.paths.analyses,
            run_config.judge_model,
            labelled,
            quality,
            paths.absolute(cases),
            run_id,
        )
    return JudgeQualityResult(
        run_id=run_id,
        judge_model=run_config.judge_model,
        cases=quality.cases,
        judged=quality.judged,
        agreement=quality.agreement,
        pass_line=quality.pass_line,
        passed=quality.passed,
        leniency=quality.leniency,
        verbosity_bias=quality.verbosity_bias,
        invalid_cases=quality.invalid_cases,
        invalid_replies=quality.invalid_replies,
        by_kind=dict(quality.by_kind),
        band_misses=tuple(entry["band_misses"]),
        record=s.paths.analyses / "judge_quality.json",
        simulated_model=run_config.judge_model.startswith("sim/"),
    )


# --- offline: estimate before a run ---
if TYPE_CHECKING:
    from app.estimate import Estimate


def estimate(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> Estimate:
    """`estimate`: model calls per role, tokens, cost and wall time of `train` with this config,
    before it runs (app/estimate.py says how); stored in analyses/estimate.json for `report`."""
    return _run_sync(estimate_async, workspace, config, overrides=overrides)


async def estimate_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> Estimate:
    """`estimate` for callers inside an event loop."""
    from app.estimate import estimate_async as run_estimate

    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "estimate"):
        return await run_estimate(root, run_config)


# --- trace ingest ---
if TYPE_CHECKING:
    from app.harness.ingest.service import IngestSummary


def ingest(
    workspace: str | Path,
    file: str | Path,
    *,
    source: str = "auto",
    sample: float = 1.0,
    seed: int = 0,
    to_benchmark: str | None = None,
    store: str | Path | None = None,
    reference: str = "feedback",
    task_type: str = "ingested",
    progress: bool | None = False,
    license: str | None = None,
) -> IngestSummary:
    """Ingest an observability export into the workspace's log (an `IngestSummary`;
    app/harness/ingest/service.py). A folder that is not a workspace yet takes only
    `to_benchmark` (the benchmark a workspace is then initialised from). `license`: the
    traces' SPDX expression (docs/curation.md#licences)."""
    from app.harness.ingest.api import run_ingest

    _expect("file", file, _is_path(file), "an export file's path")
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    return run_ingest(
        _workspace(workspace),
        paths.absolute(file),
        source=source,
        sample=sample,
        seed=seed,
        to_benchmark=to_benchmark,
        store=None if store is None else paths.absolute(store),
        reference=reference,
        task_type=task_type,
        licence=license,
        bars=Bars(enabled=progress),
    )


# --- tools ---
async def check_tools_async(questions: str | Path) -> ToolsCheck:
    """Start a benchmark folder's declared tools once and validate its fixtures' oracles
    (docs/tools.md). Calls no model; writes only a temporary folder it removes."""
    from app.harness.tools.check import check_tools

    _expect("questions", questions, _is_path(questions), "a benchmark folder's path")
    folder = paths.absolute(questions)
    if not (folder / "benchmark.toml").is_file():
        raise UserError(f"{folder}: no benchmark.toml there")
    return await check_tools(folder)


def check_tools(questions: str | Path) -> ToolsCheck:
    return _run_sync(check_tools_async, questions)


# --- web report ---


def html_report(workspace: str | Path, out: str | Path) -> Path:
    """Write the workspace's web report to `out`: one self-contained HTML page (read-only on
    the workspace; docs/serving.md#the-web-report). Returns the path written."""
    from app.harness.serving.page_data import gather
    from app.harness.serving.webpage import render_page

    root = _workspace(workspace)
    _expect("out", out, _is_path(out), "a file path")
    target = paths.absolute(out)
    if target.is_dir():
        raise UserError(f"--html {target}: a folder; give the file to write (e.g. report.html)")
    if not target.parent.is_dir():
        raise UserError(f"--html {target}: no folder {target.parent} to write into")
    try:
        page = render_page(gather(root), served=False)
    except sqlite3.OperationalError as e:
        raise DamagedFile(
            f"{root / 'harness.db'}: not a complete harness log ({e}); restore it from a backup"
        ) from None
    write_text_atomic(target, page)
    return target


# --- scorecard ---
@dataclass(frozen=True)
class ScorecardFigure:
    name: str
    value: float | None
    unit: str
    basis: str


@dataclass(frozen=True)
class ScorecardResult:
    rollout_id: str
    figures: tuple[ScorecardFigure, ...]
    warnings: tuple[str, ...]
    heldout_mcnemar_p: float | None
    heldout_powered: bool | None
    loop_health: dict[str, Any]
    report_path: Path

    def figure(self, name: str) -> ScorecardFigure:
        return next(f for f in self.figures if f.name == name)


def scorecard(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    reruns: int = 3,
    memory_k: int = 3,
    progress: bool | None = False,
) -> ScorecardResult:
    """Judge ranked fork `rollout_id`'s data (docs/scorecard.md): yield, verifier flakiness
    over `reruns` reruns, planted-canary leak rate, cost per clean trajectory, and held-out
    test accuracy with up to `memory_k` of its memories per question vs without (two eval
    runs of the test pool). The report goes to `analyses/scorecard_<rollout>.json`."""
    return _run_sync(
        scorecard_async,
        workspace,
        rollout_id,
        config,
        overrides=overrides,
        reruns=reruns,
        memory_k=memory_k,
        progress=progress,
    )


async def scorecard_async(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    reruns: int = 3,
    memory_k: int = 3,
    progress: bool | None = False,
) -> ScorecardResult:
    from app.harness.data.scorecard import build_scorecard

    _expect("rollout_id", rollout_id, isinstance(rollout_id, str), "a fork's id, e.g. 'fork-1'")
    _expect("reruns", reruns, type(reruns) is int and reruns >= 2, "a whole number, at least 2")
    _expect("memory_k", memory_k, type(memory_k) is int and memory_k >= 0, "a whole number >= 0")
    check_run_id(rollout_id, "rollout")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with (
        WriterLock(root, "scorecard"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        run_ids = (
            next_run_id(session, f"scorecard-{rollout_id}-mem-"),
            next_run_id(session, f"scorecard-{rollout_id}-nomem-"),
        )
        with session.bars.live(), _budget_is_run_failed():
            report = await build_scorecard(
                session, rollout_id, reruns=reruns, memory_k=memory_k, heldout_run_ids=run_ids
            )
        path = session.paths.analyses / f"scorecard_{rollout_id}.json"
        write_json_atomic(path, report)
    paired = report["heldout"]["paired"]
    return ScorecardResult(
        rollout_id=rollout_id,
        figures=tuple(ScorecardFigure(**f) for f in report["figures"]),
        warnings=tuple(report["warnings"]),
        heldout_mcnemar_p=None if paired is None else paired["mcnemar_p"],
        heldout_powered=None if paired is None else paired["powered"],
        loop_health=dict(report["loop_health"]),
        report_path=path,
    )


# --- distill ---
if TYPE_CHECKING:
    from app.distill import DistillOutcome


def distill(
    workspace: str | Path,
    teacher: str,
    student: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DistillOutcome:
    """Probe teacher vs student on validation; on `distill`, store the teacher's verified
    diagnosis-pool winners as memories, train the student, and write `analyses/distill.json`
    (docs/distill.md). `outcome.exit_code` is the verdict's."""
    return _run_sync(
        distill_async, workspace, teacher, student, config, overrides=overrides, progress=progress
    )


async def distill_async(
    workspace: str | Path,
    teacher: str,
    student: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DistillOutcome:
    from app.distill import run_distill

    for name, model in (("teacher", teacher), ("student", student)):
        _expect(name, model, isinstance(model, str) and bool(model.strip()), "a model name")
    if teacher == student:
        raise UserError(f"teacher and student are the same model ({teacher!r})")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "distill"), _budget_is_run_failed():  # one budget for all its runs
        return await run_distill(root, run_config, teacher, student, Bars(enabled=progress))
