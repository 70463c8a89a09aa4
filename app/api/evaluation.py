"""How a skills version does: `evaluate` (one version over the whole benchmark), `infer` (the
current versions, possibly several samples) and `diagnose` (a run's failures by cause, as the
evolver would see them), with their typed results."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.api._common import _budget_is_run_failed, _run_sync, _task_types, _workspace
from app.api.run_ids import claim_run_id, next_run_id
from app.api_args import AgentChoice, ConfigSource, agent_choice, agent_spec, workspace_config
from app.api_args import expect as _expect
from app.errors import UserError
from app.harness.rollouts import memory
from app.harness.rollouts.session import Session
from app.harness.training.runner import Runner
from app.harness.workspace import workspace as ws
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.config import build_config
from app.harness.workspace.ids import check_version
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars
from core.types import InferenceResult


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
    # the agent that answered, as `eval --agent` spells it: "builtin", "python:mod:fn",
    # "command:python agent.py"
    agent: str = "builtin"


@dataclass(frozen=True)
class InferResult:
    samples: tuple[EvalResult, ...]  # one per --n-samples, in order


def evaluate(
    workspace: str | Path,
    version: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
    tool_aliases: Mapping[str, str] | None = None,
    agent: AgentChoice | str | None = None,
) -> EvalResult:
    """Answer the whole benchmark with skills `version` ("v3", or "best") and the current prompts;
    the report goes to `analyses/eval_<run_id>.json`. `tool_aliases` shows built-in tools
    under new names ({"read_context": "lookup"}): how much of a gain survives a changed tool
    interface (docs/scorecard.md#holdouts). `agent` runs the rollouts with another agent than
    the config's, for this eval only (transfer: docs/agents.md): an `AgentChoice` or its
    `--agent` spelling, "builtin", "python:module:function" or "command:python agent.py";
    it applies after `overrides`."""
    return _run_sync(
        evaluate_async,
        workspace,
        version,
        config,
        overrides=overrides,
        progress=progress,
        tool_aliases=tool_aliases,
        agent=agent,
    )


def _named_version(root: Path, version: str) -> str:
    """`vN` (or `skills/vN`), or `best`: the manifest's best version."""
    if version != "best":
        return check_version(version, "version")
    best = ws.read_best(root)
    if not best:
        raise UserError(f"{root}/manifest.json: no best version yet (train first)")
    return check_version(best["skills"], "the manifest's best version")


async def evaluate_async(
    workspace: str | Path,
    version: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
    tool_aliases: Mapping[str, str] | None = None,
    agent: AgentChoice | str | None = None,
) -> EvalResult:
    from app.harness.rollouts.agent_prompts import check_tool_aliases

    aliases = check_tool_aliases(tool_aliases)
    choice = agent_choice(agent)
    root = _workspace(workspace)
    version = _named_version(root, version)
    run_config = workspace_config(root, config, overrides)
    if choice is not None:
        run_config = build_config(choice.overrides(), f"agent {choice.spec!r}", run_config)
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
        agent=agent_spec(
            session.config.agent_kind, session.config.agent_function, session.config.agent_command
        ),
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
        "agent": result.agent,
    }


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
