"""Skill activation: did a rollout open the right skill? (skill_mode "progressive" or "tool").

Each prediction's verdict step carries `skills_opened` (the skill files its successful
read_skill calls returned) and `skill_expected` (the file core/evolution/budget.py
resolve_skill_file gives its task type); app/harness/rollouts/inference.py writes both. Per task type T
with expected file F:
- recall    = rollouts of T that opened F / rollouts of T;
- precision = rollouts of T that opened F / rollouts (of any type) that opened F
  (None when nothing opened F).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.harness.workspace.harness_log import HarnessLog


@dataclass(frozen=True)
class Activation:
    task_type: str
    expected: str
    opened: tuple[str, ...]


def from_steps(task_type: str, steps_json: str | None) -> Activation | None:
    """The activation a stored trajectory records, or None (inline mode, damaged row)."""
    try:
        steps = json.loads(steps_json or "[]")
    except (json.JSONDecodeError, RecursionError):
        return None
    verdict = (
        next(
            (s for s in reversed(steps) if isinstance(s, dict) and s.get("type") == "verdict"), None
        )
        if isinstance(steps, list)
        else None
    )
    if not verdict or not isinstance(verdict.get("skill_expected"), str):
        return None
    opened = verdict.get("skills_opened")
    if not isinstance(opened, list):
        return None
    return Activation(
        task_type, verdict["skill_expected"], tuple(str(f) for f in opened if isinstance(f, str))
    )


def summarise(records: Iterable[Activation]) -> dict[str, dict[str, Any]]:
    """{task_type: {n, hits, recall, opened_none, opened_wrong, precision}} plus "*" overall."""
    records = list(records)
    opens: dict[str, int] = {}
    for r in records:
        for f in set(r.opened):
            opens[f] = opens.get(f, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for task_type in sorted({r.task_type for r in records}):
        mine = [r for r in records if r.task_type == task_type]
        expected = mine[0].expected
        hits = sum(expected in r.opened for r in mine)
        opened_f = opens.get(expected, 0)
        out[task_type] = {
            "n": len(mine),
            "hits": hits,
            "recall": hits / len(mine),
            "opened_none": sum(not r.opened for r in mine),
            "opened_wrong": sum(bool(r.opened) and expected not in r.opened for r in mine),
            "precision": hits / opened_f if opened_f else None,
            "skill": expected,
        }
    if records:
        hits = sum(r.expected in r.opened for r in records)
        n_open = sum(len(set(r.opened)) for r in records)
        out["*"] = {
            "n": len(records),
            "hits": hits,
            "recall": hits / len(records),
            "opened_none": sum(not r.opened for r in records),
            "opened_wrong": sum(bool(r.opened) and r.expected not in r.opened for r in records),
            "precision": hits / n_open if n_open else None,
            "skill": "",
        }
    return out


def run_activation(log: HarnessLog, run_id: str) -> dict[str, dict[str, Any]]:
    """Activation of one run's predictions ({} when the run recorded none)."""
    rows = log.trajectories(run_id)
    records = [a for r in rows if (a := from_steps(r.task_type, r.steps_json))]
    return summarise(records)


def failures(
    log: HarnessLog, run_id: str, limit_per_file: int = 12
) -> dict[str, dict[str, list[str]]]:
    """Activation failures of a run, per expected skill file: questions that opened no skill
    (`none`) or another one (`wrong`), and questions of other files that opened this one
    (`stolen`): what a description update learns from."""
    out: dict[str, dict[str, list[str]]] = {}
    for row in log.trajectories(run_id):
        a = from_steps(row.task_type, row.steps_json)
        if a is None or a.expected in a.opened:
            continue
        entry = out.setdefault(a.expected, {"none": [], "wrong": [], "stolen": []})
        kind = "wrong" if a.opened else "none"
        if len(entry[kind]) < limit_per_file:
            entry[kind].append(row.question_id)
        for f in a.opened:
            other = out.setdefault(f, {"none": [], "wrong": [], "stolen": []})
            if len(other["stolen"]) < limit_per_file:
                other["stolen"].append(row.question_id)
    return out
