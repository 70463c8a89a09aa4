"""The branches view's data (app/tui/screens/branches.py): a fork's questions, each question's
branches with verdicts, judge scores and rank, one branch's reasoning and trajectory. The
queries are `LogReader`'s (app/harness/workspace/harness_log/reader.py); each function here takes a reader
(WorkspaceData.reader, None when there is no log yet), runs in a worker and returns the rows
the tables render by column key."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from app.harness.workspace.harness_log.reader import LogReader


def fork_runs(log: LogReader | None) -> list[dict[str, Any]]:
    return [asdict(r) for r in log.forks.runs()] if log is not None else []


def fork_questions(log: LogReader | None, rollout_id: str) -> list[dict[str, Any]]:
    """One row per question: branches, right ones, and whether the ranker's top is right."""
    return [asdict(r) for r in log.forks.questions(rollout_id)] if log is not None else []


def question_branches(
    log: LogReader | None, rollout_id: str, question_id: str
) -> list[dict[str, Any]]:
    """The branches with their verifier verdicts and the judge's mean score; branches with
    the same answer (up to case and spacing) share the score of the first of them."""
    if log is None:
        return []
    rows = [asdict(r) for r in log.forks.branches(rollout_id, question_id)]
    verdicts: dict[int, list[str]] = {}
    for v in log.forks.verdicts(rollout_id, question_id):
        verdicts.setdefault(v.branch_index, []).append(f"{v.verifier}:{v.status}")
    scores: dict[int, list[float]] = {}
    for branch, score in log.forks.scalar_scores(rollout_id, question_id):
        scores.setdefault(branch, []).append(score)
    answer_rep: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: r["branch_index"]):
        answer_rep.setdefault(" ".join((r["prediction"] or "").split()).lower(), r["branch_index"])
    for r in rows:
        rep = answer_rep[" ".join((r["prediction"] or "").split()).lower()]
        judged = scores.get(rep, [])
        r["judge"] = sum(judged) / len(judged) if judged else None
        r["verdicts"] = " ".join(verdicts.get(r["branch_index"], []))
    return rows


def branch_detail(log: LogReader | None, branch_id: int) -> dict[str, Any] | None:
    detail = log.forks.branch(branch_id) if log is not None else None
    if detail is None:
        return None
    b = dict(detail.columns)
    b["steps"] = _steps(b.get("steps_json"))
    b["reasoning"] = detail.reasoning
    b["verdict_rows"] = detail.verdicts
    return b


def _steps(text: str | None) -> list[dict[str, Any]]:
    try:
        steps = json.loads(text or "[]")
    except ValueError:
        return []
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
