"""Read-only queries behind the branches view (app/tui/screens/branches.py): a fork's
questions, each question's branches with verdicts, judge scores and rank, one branch's reasoning and
trajectory. Each takes a read-only HarnessLog (WorkspaceData.reader) and runs in a worker."""

from __future__ import annotations

import json
from typing import Any

from app.harness.log import HarnessLog


def fork_runs(log: HarnessLog | None) -> list[dict[str, Any]]:
    if log is None:
        return []
    return log.query(
        "SELECT run_id, status, summary_json FROM _runs WHERE kind = 'fork' ORDER BY seq DESC"
    )


def fork_questions(log: HarnessLog | None, rollout_id: str) -> list[dict[str, Any]]:
    """One row per question: branches, right ones, and whether the ranker's top is right."""
    if log is None:
        return []
    return log.query(
        "SELECT b.question_id, MAX(b.task_type) AS task_type, COUNT(*) AS branches, "
        "SUM(b.correct) AS correct, MAX(CASE WHEN r.rank = 1 THEN r.objective END) AS top_ok "
        "FROM branches b LEFT JOIN rankings r ON r.run_id = b.run_id AND "
        "r.question_id = b.question_id AND r.branch_index = b.branch_index "
        "WHERE b.run_id = ? GROUP BY b.question_id ORDER BY b.question_id",
        (rollout_id,),
    )


def question_branches(
    log: HarnessLog | None, rollout_id: str, question_id: str
) -> list[dict[str, Any]]:
    if log is None:
        return []
    rows = log.query(
        "SELECT b.id, b.branch_index, b.temperature, b.prediction, b.correct, b.stop_reason, "
        "r.rank, r.reward, r.objective, r.bt FROM branches b LEFT JOIN rankings r ON "
        "r.run_id = b.run_id AND r.question_id = b.question_id AND "
        "r.branch_index = b.branch_index WHERE b.run_id = ? AND b.question_id = ? "
        "ORDER BY COALESCE(r.rank, 1000000), b.branch_index",
        (rollout_id, question_id),
    )
    verdicts: dict[int, list[str]] = {}
    for v in log.query(
        "SELECT branch_index, verifier, status FROM verdicts WHERE run_id = ? "
        "AND question_id = ? ORDER BY id",
        (rollout_id, question_id),
    ):
        verdicts.setdefault(v["branch_index"], []).append(f"{v['verifier']}:{v['status']}")
    scores: dict[int, list[float]] = {}
    for j in log.query(
        "SELECT branch_a, score FROM judgments WHERE run_id = ? AND "
        "question_id = ? AND kind = 'scalar' AND capped = 0 AND "
        "parse_error IS NULL",
        (rollout_id, question_id),
    ):
        scores.setdefault(j["branch_a"], []).append(j["score"])
    answer_rep: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: r["branch_index"]):
        answer_rep.setdefault(" ".join((r["prediction"] or "").split()).lower(), r["branch_index"])
    for r in rows:
        rep = answer_rep[" ".join((r["prediction"] or "").split()).lower()]
        judged = scores.get(rep, [])
        r["judge"] = sum(judged) / len(judged) if judged else None
        r["verdicts"] = " ".join(verdicts.get(r["branch_index"], []))
    return rows


def branch_detail(log: HarnessLog | None, branch_id: int) -> dict[str, Any] | None:
    if log is None:
        return None
    rows = log.query("SELECT * FROM branches WHERE id = ?", (branch_id,))
    if not rows:
        return None
    b = rows[0]
    b["steps"] = _steps(b.get("steps_json"))
    b["reasoning"] = log.query(
        "SELECT kind, branch_a, branch_b, shown_first, sample, score, preferred, capped, "
        "reasoning FROM judgments WHERE run_id = ? AND question_id = ? AND (branch_a = ? OR "
        "branch_b = ?) ORDER BY id LIMIT 40",
        (b["run_id"], b["question_id"], b["branch_index"], b["branch_index"]),
    )
    b["verdict_rows"] = log.query(
        "SELECT verifier, status, reason, cost_usd FROM verdicts WHERE run_id = ? AND "
        "question_id = ? AND branch_index = ? ORDER BY id",
        (b["run_id"], b["question_id"], b["branch_index"]),
    )
    return b


def _steps(text: str | None) -> list[dict[str, Any]]:
    try:
        steps = json.loads(text or "[]")
    except ValueError:
        return []
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
