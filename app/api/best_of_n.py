"""Best-of-N: `fork` answers each question as N branches (app/harness/data/fork.py), `rank`
verifies, judges and ranks them (app/harness/data/rank.py), with the judge, pairing and memory
figures of the ranking as typed results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from app.api._common import _is_number, _names, _run_sync, _task_types, _workspace
from app.api.curation import (
    CascadeReport,
    TrajectoryClasses,
    _cascade_report,
    _check_cascade_arguments,
    _trajectory_classes,
)
from app.api.run_ids import next_run_id
from app.api_args import ConfigSource, workspace_config
from app.api_args import expect as _expect
from app.errors import UserError
from app.harness.rollouts.session import Session
from app.harness.workspace.harness_log import LogReader
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars


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
    classes: TrajectoryClasses | None = None  # curation (app/api/curation.py)
    cascade: CascadeReport | None = None  # None: every verifier ran on every branch


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
