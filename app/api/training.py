"""Training: `train` (a new run, a resumed one or a fresh start from the seed), `demo` (a fresh
workspace of the simulated seed, trained with the demo config), the config a resumed run goes on
with, and the `TrainResult` both return."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from app import paths
from app.api._common import _run_sync, _workspace
from app.api.store import _store, find_benchmark, find_seed
from app.api.workspace import _init_seed
from app.api_args import ConfigSource, resolve_config, workspace_config
from app.errors import UserError
from app.harness.rollouts.session import Session
from app.harness.training.checkpoint import load_checkpoint
from app.harness.training.runner import Runner, read_final
from app.harness.training.vocabulary import Count, EndReason
from app.harness.workspace import workspace as ws
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import open_reader
from app.harness.workspace.store import benchmark_dir, load_seed, seed_dir
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars

DEMO_SEED = "sim-starter"
# The demo trains on the built-in world at three times sim-basic's size. In sim-basic (72 units
# per task type) a family is 3 units that each need a different rule, so a one-rule edit moves a
# family by d = 1/3; no level-0.05 test of the per-unit null can confirm that from fewer than 11
# such families in a row (P(d >= 1/3) can be 3/4 per family under the null, and 0.75^10 > 0.05),
# and a ladder there holds 10-18 families. At 216 units the gate has the evidence.
DEMO_QUESTIONS = "sim-large"
DEMO_WORLD: dict[str, Any] = {"sim_units_per_type": 216}  # the world sim-large was generated from


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


def resume_config(root: Path, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The config a training run was going with (recorded in its checkpoint) plus overrides."""
    load_checkpoint(root)  # a damaged checkpoint is named with its recovery hint first
    return workspace_config(root, None, overrides)


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
