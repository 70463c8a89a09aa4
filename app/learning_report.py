"""`report`'s "why learning failed": per task type of the latest training run, the counts
core/evolution/learning_failures.py tests, read from the log. Reads only."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.harness.rollouts.benchmark_validation import gate_families
from app.harness.workspace.config import build_config
from app.harness.workspace.log_reader import LogReader
from app.harness.workspace.store import load_benchmark
from core.benchmark_checks import gate_min_families
from core.evolution.gate import GateParams, GateStopReason
from core.evolution.learning_failures import TypeEvidence, explain
from core.types import StopReason

ACCEPTED = ("accept", "accept_provisional")
USABLE = "ok"  # core.evolution.evolve.EvolutionStatus.OK: parsed and changed the file


def learning_failures(root: Path, log: LogReader) -> list[dict[str, Any]]:
    """One entry per task type of the latest training run: its evidence and the reasons found
    (empty when the workspace has no training run)."""
    train = log.latest_run("train")
    if train is None:
        return []
    like = f"{train.run_id}-%"
    context_of = _contexts(root)
    gate = _gate_params(log, train.run_id)
    families = {g.task_type: g for g in _gate_families(root)}
    out = []
    for task_type in sorted(_task_types(log, like) | set(families)):
        fam = families.get(task_type)
        needed = gate_min_families(gate, fam.singletons) if fam else None
        evidence = _evidence(log, like, task_type, context_of, fam.families if fam else 0, needed)
        found = explain(evidence) if evidence.accepted == 0 else ()
        out.append({**asdict(evidence), "reasons": [asdict(x) for x in found]})
    return out


def _gate_params(log: LogReader, run_id: str) -> GateParams:
    """The training run's gate settings as recorded (the defaults if unreadable)."""
    try:
        stored = json.loads((log.run_columns(run_id) or {}).get("config_json") or "{}")
        return build_config(stored, "train run config").gate
    except Exception:  # an older or damaged record: the default gate is the honest guess
        return GateParams()


def _rows(log: LogReader, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    return log.log.query(sql, params)


def _task_types(log: LogReader, like: str) -> set[str]:
    rows = _rows(
        log,
        "SELECT DISTINCT task_type FROM step_reports WHERE run_id LIKE ? "
        "UNION SELECT DISTINCT task_type FROM diagnoses WHERE run_id LIKE ?",
        (like, like),
    )
    return {str(r["task_type"]) for r in rows if r["task_type"]}


def _contexts(root: Path) -> dict[str, bool]:
    try:
        return {
            q.question_id: bool(q.context) for q in load_benchmark(root / "questions").questions
        }
    except Exception:  # a report never fails on the frozen benchmark: the judge test is skipped
        return {}


def _gate_families(root: Path) -> list[Any]:
    try:
        return gate_families(load_benchmark(root / "questions"))
    except Exception:
        return []


def _evidence(
    log: LogReader,
    like: str,
    task_type: str,
    context_of: dict[str, bool],
    families: int,
    needed: int | None,
) -> TypeEvidence:
    evolutions = _rows(
        log,
        "SELECT status, edits_json FROM evolutions WHERE run_id LIKE ? AND task_type = ?",
        (like, task_type),
    )
    usable = sum(
        1 for e in evolutions if e["status"] == USABLE and json.loads(e["edits_json"] or "[]")
    )
    steps = _rows(
        log,
        "SELECT action, stop_reason, gate_run_id, report_json FROM step_reports "
        "WHERE run_id LIKE ? AND task_type = ?",
        (like, task_type),
    )
    gate_runs = [s["gate_run_id"] for s in steps if s["gate_run_id"]]
    outcomes: Counter[int] = Counter()
    compared = unchanged = 0
    base_answers = _base_answers(log, like, task_type) if gate_runs else {}
    for run_id in gate_runs:
        for r in _rows(
            log,
            "SELECT question_id, prediction, correct, skills_version FROM predictions "
            "WHERE run_id = ?",
            (run_id,),
        ):
            outcomes[int(r["correct"] or 0)] += 1
            version = str(r["skills_version"] or "")
            if r["correct"] or not version.endswith(CANDIDATE_SUFFIX):
                continue
            base = base_answers.get((r["question_id"], version.removesuffix(CANDIDATE_SUFFIX)))
            if base is not None:
                compared += 1
                unchanged += _same_answer(base, r["prediction"])
    judged, contradicted = _judge_counts(log, like, task_type, context_of)
    horizons = [_horizon(s["report_json"]) for s in steps if s["gate_run_id"]]
    seen = [h for h in horizons if h is not None]
    return TypeEvidence(
        task_type=task_type,
        accepted=sum(1 for s in steps if s["action"] in ACCEPTED),
        evolver_replies=len(evolutions),
        usable_replies=usable,
        gated=len(gate_runs),
        candidate_units=outcomes[0] + outcomes[1],
        candidate_failures=outcomes[0],
        insufficient=sum(
            1 for s in steps if s["stop_reason"] == GateStopReason.INSUFFICIENT_EVIDENCE
        ),
        blind_tests=sum(1 for h in seen if needed is not None and h < needed),
        fewest_seen=min(seen) if seen else None,
        gate_families=families,
        families_needed=needed,
        judge_verdicts=judged,
        contradicted=contradicted,
        compared_failures=compared,
        unchanged_failures=unchanged,
    )


CANDIDATE_SUFFIX = "+cand"  # a gate run's skills version: the base version with the candidate
BASELINE_RUN = "baseline"  # app/harness/training/runner.py BASELINE_RUN (not imported: heavy)


def _base_answers(log: LogReader, like: str, task_type: str) -> dict[tuple[str, str], str]:
    """(question, skills version) -> the latest answer a run of that version that is not a
    candidate's gave (the baseline, a rollout, a gate's base run): what the base skill of a
    gate answered the same question. One read per task type, not one per gate unit."""
    rows = _rows(
        log,
        "SELECT question_id, skills_version, prediction FROM predictions WHERE task_type = ? "
        "AND (run_id LIKE ? OR run_id = ?) AND skills_version NOT LIKE ? ORDER BY id",
        (task_type, like, BASELINE_RUN, f"%{CANDIDATE_SUFFIX}"),
    )
    return {
        (str(r["question_id"]), str(r["skills_version"])): str(r["prediction"] or "") for r in rows
    }


def _same_answer(a: str, b: str | None) -> bool:
    return " ".join(a.split()).casefold() == " ".join((b or "").split()).casefold()


def _horizon(report_json: str | None) -> int | None:
    """The families a gate test could see (its report's `horizon`; None if not recorded)."""
    try:
        value = json.loads(report_json or "{}").get("horizon")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _judge_counts(
    log: LogReader, like: str, task_type: str, context_of: dict[str, bool]
) -> tuple[int, int]:
    """(verdicts the judge model made, those whose cause the log contradicts)."""
    who = (
        "COALESCE(d.decided_by, 'judge')" if "decided_by" in log.columns("diagnoses") else "'judge'"
    )
    rows = _rows(
        log,
        f"SELECT d.category, d.question_id, {who} AS decided_by, "
        "(SELECT p.stop_reason FROM predictions p WHERE p.question_id = d.question_id AND "
        "p.run_id = substr(d.run_id, 1, length(d.run_id) - 5) || '-rollout' "
        "ORDER BY p.id DESC LIMIT 1) AS stop "
        "FROM diagnoses d WHERE d.run_id LIKE ? AND d.task_type = ?",
        (like, task_type),
    )
    judged = [r for r in rows if r["decided_by"] == "judge"]
    contradicted = sum(
        1
        for r in judged
        if (r["category"] == "runtime_fault" and r["stop"] == StopReason.FINAL)
        or (r["category"] == "missing_context" and not context_of.get(str(r["question_id"]), True))
    )
    return len(judged), contradicted


def learning_lines(entries: list[dict[str, Any]]) -> list[str]:
    if not entries:
        return []
    lines = ["\nwhy learning failed (latest training run; docs/real-learning.md)"]
    for e in entries:
        if e["accepted"]:
            lines.append(f"  {e['task_type']:<16} learned: {e['accepted']} accepted candidate(s)")
            continue
        reasons = e["reasons"] or [
            {
                "reason": "no reason found",
                "detail": f"{e['gated']} candidate(s) gated, {e['candidate_failures']} of "
                f"{e['candidate_units']} gate units still failed, none accepted",
            }
        ]
        for i, r in enumerate(reasons):
            name = e["task_type"] if i == 0 else ""
            lines.append(f"  {name:<16} {r['reason']}: {r['detail']}")
    return lines
