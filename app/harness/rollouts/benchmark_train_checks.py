"""The checks `train` runs before its first model call, as `validate-benchmark` findings.

- trainability: the task types `filter_trainable` (app/harness/rollouts/pools.py) leaves out,
  with the thresholds it uses (`eval_min_per_class` validation units, `trainable_min_units`
  diagnosis + validation units); none left is what `train` refuses;
- skill files: two trained task types reading one skill file is what `train` refuses
  (app/harness/training/runner.py `_check_disjoint_files`); known only with the skills
  (a seed's or a workspace's), else said to be not checked;
- custom checkers: each `module:function` imported and called, in the worker processes and
  with the timeout training uses (app/harness/rollouts/custom_checkers.py `CheckerPool`), on
  every question's reference answer (it must pass) and on an empty answer (it must not), within
  a time budget; a checker that does not import, raises, hangs or crashes is an error naming it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Collection, Sequence

from app.errors import UserError
from app.harness.rollouts.custom_checkers import CheckerPool
from app.harness.rollouts.pools import hold_out_task_types, split_pools, trainability
from app.harness.workspace.config import RunConfig
from app.harness.workspace.store import Benchmark
from core.benchmark_checks import CheckerKind, Defect, Finding, checker_kind
from core.checkers import CheckResult, CheckStatus, passes
from core.evolution.budget import resolve_skill_file
from core.types import Question

CHECKER_BUDGET_S = 60.0  # all custom-checker probes of one validation; the rest not checked


def trainability_findings(benchmark: Benchmark, config: RunConfig) -> list[Finding]:
    """Task types train leaves out (warnings), or every one when none is left (errors)."""
    kept, dropped = _trainable(benchmark, config)
    rule = (
        f"train needs at least {config.eval_min_per_class} validation units "
        f"(eval_min_per_class) and {config.trainable_min_units} diagnosis + validation units "
        "(trainable_min_units) per task type; a unit is a question, or a pair"
    )
    if kept:
        return [
            Finding(
                Defect.NOT_TRAINABLE, f"task type '{t}': {why}: train leaves it out; {rule}", "", t
            )
            for t, why in dropped
        ]
    return [
        Finding(
            Defect.NOTHING_TRAINABLE,
            f"task type '{t}': {why}: no task type is trainable, so train refuses; {rule}",
            "",
            t,
        )
        for t, why in dropped
    ]


def _trainable(benchmark: Benchmark, config: RunConfig) -> tuple[list[str], list[tuple[str, str]]]:
    pools, task_types = hold_out_task_types(
        split_pools(benchmark.questions, benchmark.split, benchmark.seed),
        benchmark.questions,
        config.task_types,
        config.holdout_task_types,
    )
    return trainability(pools, task_types, config.eval_min_per_class, config.trainable_min_units)


def skill_file_findings(
    benchmark: Benchmark, config: RunConfig, skills: Collection[str] | None, source: str
) -> list[Finding]:
    """Trained task types that would share a skill file (`source` names where the skills
    come from: a seed, a workspace); with no skills, one not-checked finding saying so."""
    if skills is None:
        return [
            Finding(
                Defect.SKILLS_NOT_CHECKED,
                "skill files not checked: no seed given (`--seed SEED` checks them). train "
                "needs one skill file per trained task type; `init` without --seed creates them",
            )
        ]
    kept, _ = _trainable(benchmark, config)
    by_file: dict[str, list[str]] = defaultdict(list)
    for t in kept:
        by_file[resolve_skill_file(t, skills)].append(t)
    return [
        Finding(
            Defect.SHARED_SKILL_FILE,
            f"task types {', '.join(ts)} would share the skill file {name} of {source}, and "
            "train refuses that (their edits could collide within a step): give each its "
            f"own file ({', '.join(f'{t}.md' for t in ts if f'{t}.md' != name)}), or init "
            "without --seed, which creates one per task type",
            "",
            ts[0],
        )
        for name, ts in by_file.items()
        if len(ts) > 1
    ]


def custom_checker_findings(
    questions: Sequence[Question], timeout_s: float, budget_s: float = CHECKER_BUDGET_S
) -> list[Finding]:
    """Each custom checker run on each of its questions' reference and empty answers."""
    by_spec: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        if checker_kind(q.checker) is CheckerKind.CUSTOM:
            by_spec[q.checker].append(q)
    if not by_spec:
        return []
    deadline = time.monotonic() + budget_s
    pool = CheckerPool(workers=1, timeout_s=timeout_s)
    found: list[Finding] = []
    try:
        for spec, asked in by_spec.items():
            found += _probe(pool, spec, asked, deadline, budget_s)
    finally:
        pool.close()
    return found


def _probe(
    pool: CheckerPool, spec: str, asked: list[Question], deadline: float, budget_s: float
) -> list[Finding]:
    found: list[Finding] = []
    for i, q in enumerate(asked):
        if time.monotonic() > deadline:
            return found + [
                Finding(
                    Defect.NOT_CHECKED,
                    f"checker '{spec}' not run: the {budget_s:g} s budget of checker probes ran out",
                    rest.question_id,
                    rest.task_type,
                )
                for rest in asked[i:]
            ]
        try:
            reference = pool.check(spec, q, q.answer)
        except UserError as e:  # it does not load: once, at its first question
            return [Finding(Defect.CHECKER_UNLOADABLE, str(e), q.question_id, q.task_type)]
        empty = pool.check(spec, q, "")
        found += _verdict_findings(spec, q, reference, empty)
    return found


def _verdict_findings(
    spec: str, q: Question, reference: CheckResult, empty: CheckResult
) -> list[Finding]:
    found: list[Finding] = []
    for what, result in (("the reference answer", reference), ("an empty answer", empty)):
        if result.status is CheckStatus.CHECK_ERROR:
            message = f"checker '{spec}' on {what}: {result.reason}"
            found.append(Finding(Defect.CHECKER_ERROR, message, q.question_id, q.task_type))
    if reference.status is CheckStatus.OK and not passes(q, reference):
        message = (
            f"checker '{spec}' scores the reference answer {reference.score}, below its "
            "pass threshold" + (f" ({reference.reason})" if reference.reason else "")
        )
        found.append(Finding(Defect.REFERENCE_REJECTED, message, q.question_id, q.task_type))
    if empty.status is CheckStatus.OK and passes(q, empty):
        message = f"checker '{spec}' accepts an empty answer"
        found.append(Finding(Defect.EMPTY_ACCEPTED, message, q.question_id, q.task_type))
    return found
