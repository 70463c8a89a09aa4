"""Loop health of forks (docs/scorecard.md#loop-health): per question p-hat, the chance a
branch set is informative and the distinct tool sequences (core/scorecard.py), the collapse
check between two forks, and the questions `fork --select informative` takes.

A branch passes when `rank` gave it objective 1; a fork that was never ranked falls back to
the branch's own `correct` (the answer checker), so a fresh fork can still be selected from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.forks import BranchRecord
from core.scorecard import (
    ForkSummary,
    QuestionHealth,
    fork_summary,
    normalise_tool_sequence,
    question_health,
)


def tool_names(tool_calls_json: str | None) -> list[str]:
    try:
        calls = json.loads(tool_calls_json or "[]")
    except ValueError:
        return []
    if not isinstance(calls, list):
        return []
    return [str(c.get("name", "?"))[:40] for c in calls if isinstance(c, dict)]


def passes(
    log: HarnessLog, rollout_id: str, branches: Sequence[BranchRecord]
) -> dict[tuple[str, int], bool]:
    """(question, branch) -> passed: rank's objective, else the branch's `correct`."""
    ranked = log.objectives(rollout_id)
    if ranked:
        return {key: objective == 1 for key, objective in ranked.items()}
    return {(b.question_id, b.branch_index): bool(b.correct) for b in branches}


def health_rows(
    branches: Sequence[BranchRecord], passed: dict[tuple[str, int], bool]
) -> list[QuestionHealth]:
    by_q: dict[str, list[BranchRecord]] = defaultdict(list)
    for b in branches:
        by_q[b.question_id].append(b)
    return [
        question_health(
            qid,
            [passed.get((qid, b.branch_index), False) for b in rows],
            [normalise_tool_sequence(tool_names(b.tool_calls_json)) for b in rows],
        )
        for qid, rows in sorted(by_q.items())
    ]


def rollout_health(log: HarnessLog, rollout_id: str) -> list[QuestionHealth]:
    branches = log.branches(rollout_id)
    return health_rows(branches, passes(log, rollout_id, branches))


def fork_ids(log: HarnessLog) -> list[str]:
    """Fork rollouts that have branches, oldest first."""
    return log.fork_run_ids_with_branches()


def previous_fork(log: HarnessLog, rollout_id: str) -> str | None:
    ids = fork_ids(log)
    if rollout_id not in ids:
        return None
    at = ids.index(rollout_id)
    return ids[at - 1] if at else None


def summary(log: HarnessLog, rollout_id: str) -> ForkSummary:
    return fork_summary(rollout_id, rollout_health(log, rollout_id))


def informative_questions(log: HarnessLog) -> tuple[str | None, list[str]]:
    """(the latest fork, its questions with 0 < p-hat < 1): those whose branches disagree,
    the only ones that give a winner and a loser to learn from."""
    ids = fork_ids(log)
    if not ids:
        return None, []
    last = ids[-1]
    return last, [h.question_id for h in rollout_health(log, last) if h.informative]
