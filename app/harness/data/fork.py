"""Best-of-N rollouts (README "Best-of-N rollouts"): each selected question answered as N
independent branches.

A fork is one run in the harness log (`_runs.kind = "fork"`, run_id = the rollout id shared
by every branch). Each branch is one `rollout_question` call (app/harness/rollouts/inference.py) with
its own temperature and seed (the branch index) and its own session id
`<rollout>-b<index>-<uuid>`; its row in `branches` (app/harness/workspace/harness_log/schema.py, migration 4) carries
the predictions table's columns plus the branch's own: the trajectory exactly as the agent
saw it (tool outputs summarised by core/trajectory.py before the model read them), the tool
calls alone, and the final reply.

One CapacityLimiter covers every branch of every question. Rows are written in small
batches; a killed fork resumed with the same rollout id runs only the branches that have no
row yet (the spec it started with is stored in the run's config_json).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio

from app.errors import UserError
from app.harness.rollouts.inference import prediction_row, rollout_question, serving_agent
from app.harness.rollouts.pools import split_pools
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.workspace import killpoints
from app.harness.workspace.harness_log import HarnessLog, RunRecord, RunStatus
from app.harness.workspace.harness_log.forks import BranchRecord
from app.harness.workspace.ids import check_run_id
from app.progress import NO_BARS, Bars
from core.concurrency import fan_out
from core.scorecard import pass_at_1_and_n
from core.types import Prediction, Question

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session
    from app.harness.workspace.store import Benchmark

FORK_WRITE_BATCH = 64
POOLS = ("diagnosis", "validation", "test", "all")
MAX_BRANCHES = 64


@dataclass(frozen=True)
class ForkSpec:
    """What a fork runs: which questions, how many branches, at which temperatures."""

    question_ids: tuple[str, ...]
    temperatures: tuple[float, ...]  # one per branch
    concurrency: int = 16
    pool: str = "diagnosis"

    @property
    def n_branches(self) -> int:
        return len(self.temperatures)

    def to_json(self) -> dict[str, Any]:
        return {
            "question_ids": list(self.question_ids),
            "temperatures": list(self.temperatures),
            "concurrency": self.concurrency,
            "pool": self.pool,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str, fix: str = "") -> ForkSpec:
        """The stored spec, checked as strictly as the command line checks a new one: a damaged
        field (a concurrency of 0 would wait forever, a NaN temperature is no temperature) is
        refused in one line naming the field."""
        try:
            return _checked_spec(data)
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(
                f"{where}: fork spec is damaged ({type(e).__name__}: {e})"
                + (f"; {fix}" if fix else "")
            ) from None


def _checked_spec(data: dict[str, Any]) -> ForkSpec:
    ids, temps, concurrency, pool = (
        data["question_ids"],
        data["temperatures"],
        data["concurrency"],
        data["pool"],
    )
    if not isinstance(ids, list) or not ids or not all(isinstance(q, str) for q in ids):
        raise ValueError("question_ids: must be a non-empty list of question ids")
    if not isinstance(temps, list) or not 1 <= len(temps) <= MAX_BRANCHES:
        raise ValueError(f"temperatures: must be a list of 1 to {MAX_BRANCHES} numbers")
    for t in temps:
        if type(t) not in (int, float) or not 0.0 <= t <= 2.0:  # NaN fails the range test
            raise ValueError(f"temperatures: {t!r} is not a number within [0, 2]")
    if type(concurrency) is not int or concurrency < 1:
        raise ValueError(f"concurrency: {concurrency!r} is not a whole number >= 1")
    if pool not in POOLS:
        raise ValueError(f"pool: {pool!r} is not one of {', '.join(POOLS)}")
    return ForkSpec(tuple(ids), tuple(float(t) for t in temps), concurrency, pool)


def stored_spec(run: RunRecord, where: str) -> ForkSpec:
    """The spec a fork started with, from its run row's provenance_json; a row that is not
    JSON or holds no usable spec is refused in one line (nothing is resumed or changed)."""
    fix = "start a new fork under another --rollout-id"
    try:
        provenance = json.loads(run.provenance_json or "{}")
    except json.JSONDecodeError as e:
        raise UserError(
            f"{where}: provenance_json is not JSON ({e.msg} at char {e.pos}), so its fork spec "
            f"is lost; {fix}"
        ) from None
    stored = provenance.get("fork") if isinstance(provenance, dict) else None
    if not isinstance(stored, dict):
        raise UserError(f"{where}: provenance_json holds no fork spec; {fix}")
    return ForkSpec.from_json(stored, where, fix)


def branch_temperatures(
    n: int,
    temperatures: Sequence[float] | None = None,
    temperature_range: tuple[float, float] | None = None,
    default: float = 0.0,
) -> tuple[float, ...]:
    """Per-branch temperatures: an explicit list (length n), an evenly spaced range, or the
    config's temperature for every branch."""
    if not 1 <= n <= MAX_BRANCHES:
        raise UserError(f"--branches must be within [1, {MAX_BRANCHES}] (got {n})")
    if temperatures is not None and temperature_range is not None:
        raise UserError("give --temperatures or --temperature-range, not both")
    if temperatures is not None:
        if len(temperatures) != n:
            raise UserError(f"--temperatures: {len(temperatures)} values for {n} branches")
        values = tuple(float(t) for t in temperatures)
    elif temperature_range is not None:
        lo, hi = temperature_range
        values = tuple(lo if n == 1 else lo + (hi - lo) * i / (n - 1) for i in range(n))
    else:
        values = (default,) * n
    for t in values:
        if not 0.0 <= t <= 2.0:
            raise UserError(f"branch temperature must be within [0, 2] (got {t})")
    return tuple(round(t, 6) for t in values)


def parse_temperatures(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(
            f"--temperatures: expected comma-separated numbers (got {text!r})"
        ) from None


def parse_range(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(":"))
    except ValueError:
        raise UserError(f"--temperature-range: expected LO:HI (got {text!r})") from None
    return (lo, hi)


def select_questions(
    benchmark: Benchmark,
    pool: str,
    task_types: Sequence[str] | None,
    question_ids: Sequence[str] | None,
    limit: int | None,
) -> list[Question]:
    if pool not in POOLS:
        raise UserError(f"--pool must be one of {', '.join(POOLS)} (got {pool!r})")
    if pool == "all":
        questions = list(benchmark.questions)
    else:
        pools = split_pools(benchmark.questions, benchmark.split, benchmark.seed)
        questions = list(getattr(pools, pool))
    if task_types:
        questions = [q for q in questions if q.task_type in task_types]
    if question_ids:
        wanted = set(question_ids)
        questions = [q for q in questions if q.question_id in wanted]
    if limit is not None:
        questions = questions[: max(0, limit)]
    if not questions:
        raise UserError(f"no questions selected (pool {pool}, task types {task_types or 'all'})")
    return questions


def held_out_question_ids(benchmark: Benchmark, holdout: Sequence[str] = ()) -> set[str]:
    """The test pool's questions, with every question of a `holdout_task_types` type."""
    pools = split_pools(benchmark.questions, benchmark.split, benchmark.seed)
    held = set(holdout)
    return {q.question_id for q in pools.test} | {
        q.question_id for q in benchmark.questions if q.task_type in held
    }


def session_id(rollout_id: str, index: int) -> str:
    return f"{rollout_id}-b{index}-{uuid.uuid4().hex[:12]}"


def branch_row(
    p: Prediction, rollout_id: str, index: int, temperature: float, sid: str
) -> BranchRecord:
    tools = [s for s in p.steps if s.get("type") == "tool"]
    final = next((s.get("text") or "" for s in reversed(p.steps) if s.get("type") == "model"), "")
    return BranchRecord.of_prediction(
        prediction_row(p, rollout_id),
        branch_index=index,
        session_id=sid,
        temperature=temperature,
        tool_calls_json=json.dumps(tools, ensure_ascii=False),
        final_text=final,
    )


def done_branches(log: HarnessLog, rollout_id: str) -> set[tuple[str, int]]:
    return set(log.branch_outcomes(rollout_id))


@dataclass
class ForkResult:
    rollout_id: str
    questions: int
    branches: int
    ran: int
    skipped: int
    elapsed_s: float

    @property
    def branches_per_s(self) -> float:
        return self.ran / self.elapsed_s if self.elapsed_s > 0 else 0.0


async def run_fork(
    session: Session,
    spec: ForkSpec,
    rollout_id: str,
    *,
    resume: bool = False,
    bars: Bars = NO_BARS,
) -> ForkResult:
    """Run (or finish) a fork: every (question, branch) without a row gets one."""
    check_run_id(rollout_id, "--rollout-id")
    log = session.log
    existing = log.run(rollout_id)
    if existing is not None and not resume:
        raise UserError(
            f"--rollout-id {rollout_id}: a {existing.kind} run of that id exists; "
            "add --resume to finish a fork, or pick another id"
        )
    if existing is None and resume:
        raise UserError(
            f"--rollout-id {rollout_id}: no fork of that id to resume; drop --resume to start one"
        )
    if existing is not None and existing.kind != "fork":
        raise UserError(f"--rollout-id {rollout_id}: run is a {existing.kind} run, not a fork")
    if existing is None:
        prompts = session.agent_prompts()
        session.register(rollout_id, "fork", prompts, provenance={"fork": spec.to_json()})
    else:
        # the versions the fork started with, even if the workspace has moved on since
        root = session.paths.root
        prompts = session.agent_prompts(
            root / "skills" / existing.skills_version,
            root / "prompts" / existing.prompts_version,
        )
        spec = stored_spec(existing, f"{session.paths.db}: run {rollout_id}")
        log.reopen_run(rollout_id, RunStatus.RUNNING)
    by_id = session.questions_by_id
    missing = [q for q in spec.question_ids if q not in by_id]
    if missing:
        raise UserError(f"run {rollout_id}: question {missing[0]!r} is not in the benchmark")
    done = done_branches(log, rollout_id)
    todo = [
        (by_id[q], i)
        for q in spec.question_ids
        for i in range(spec.n_branches)
        if (q, i) not in done
    ]
    base = replace(session.agent_settings, concurrency=spec.concurrency)
    running = base  # with an outside agent's gateway once it runs
    pending: list[BranchRecord] = []
    bar = bars.task("branches", len(todo))
    started = time.perf_counter()

    async def run_branch(branch: tuple[Question, int]) -> None:
        question, index = branch
        temperature = spec.temperatures[index]
        settings = replace(running, temperature=temperature, sample=index)
        p = await rollout_question(session.providers["agent"], prompts, question, settings)
        pending.append(branch_row(p, rollout_id, index, temperature, session_id(rollout_id, index)))
        if len(pending) >= FORK_WRITE_BATCH:
            batch = pending[:]
            pending.clear()
            _write(log, batch)
        killpoints.reached("branch")
        bar.advance()

    try:
        with calls_logged_as(rollout_id):
            async with serving_agent(base, session.providers["agent"]) as running:
                limiter = anyio.CapacityLimiter(spec.concurrency)
                await fan_out(run_branch, todo, limiter=limiter)
    except BaseException as e:
        _write(log, pending)
        pending.clear()
        session.recorder.flush()
        from app.errors import first_leaf, is_stop

        leaf = first_leaf(e)
        status = RunStatus.STOPPED if is_stop(leaf) else RunStatus.FAILED
        log.finish_run(
            rollout_id,
            status,
            {
                "reason": f"{status}: {type(leaf).__name__}"[:200],
                "resume": f"fork --rollout-id {rollout_id} --resume",
            },
        )
        raise
    finally:
        bar.done()
    _write(log, pending)
    elapsed = time.perf_counter() - started
    session.recorder.flush()
    total = len(spec.question_ids) * spec.n_branches
    summary = fork_summary(log, rollout_id)
    log.finish_run(
        rollout_id,
        RunStatus.DONE,
        {**summary, "branches": total, "ran": len(todo), "skipped": len(done)},
    )
    return ForkResult(rollout_id, len(spec.question_ids), total, len(todo), len(done), elapsed)


def _write(log: HarnessLog, rows: list[BranchRecord]) -> None:
    """Branch rows; a branch already written (a resumed fork) is kept as it is."""
    log.add_branches(rows)


def fork_summary(log: HarnessLog, rollout_id: str) -> dict[str, Any]:
    """pass@1 (mean over questions of the share of branches right) and pass@N (any branch
    right) over the fork's questions (core/scorecard.py `pass_at_1_and_n`)."""
    by_q: dict[str, list[bool]] = {}
    for (qid, _), correct in log.branch_outcomes(rollout_id).items():
        by_q.setdefault(qid, []).append(bool(correct))
    pass_1, pass_n = pass_at_1_and_n(by_q)
    return {"questions": len(by_q), "pass_at_1": pass_1, "pass_at_n": pass_n}
