"""Curation on the harness side: trajectory classes of a ranked fork and the cost-ordered
verifier cascade (`rank --cascade`). The decisions are core/curation.py's; this module reads
branches from the harness log, times verifiers and stores what it found.

What counts as a fault observation (docs/curation.md#trajectory-classes):
- a tool step whose status is not `ok` (bad arguments, unknown tool: the tool said error);
- a tool output the summariser cut (core/trajectory.py's "[... N lines omitted ...]" or
  "bytes omitted" marker): the agent saw a truncated observation;
- a `read_context` call without `section="full"`: by that tool's contract
  (app/harness/rollouts/agent_prompts.py `dispatch`) it returns only the summary line, a
  partial view of the context; this is the simulated world's tool fault;
- an `error` step (the provider failed that turn).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.harness.data.verifiers import (
    Verdict,
    branch_key,
    load_verifier,
    objective_score,
    run_verifier,
)
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.forks import TrajectoryClassRecord, VerdictRecord
from core import curation
from core.curation import BranchTrace, Fault, Stage, Turn
from core.types import Question

CALIBRATION_BRANCHES = 5  # branches timed through every verifier when a cost is not declared
REJECTS_LISTED = 50  # rejected branch ids kept per stage in the report
_CUT_MARKERS = (" lines omitted ...]", " bytes omitted ...]")


def observation_fault(step: Mapping[str, Any]) -> Fault | None:
    if step.get("status") != "ok":
        return Fault.TOOL_ERROR
    if step.get("fault"):  # an injected fault whose tool ran but whose answer was spoiled
        return Fault.TRUNCATED  # (truncated, malformed JSON, empty: app/harness/tools/faults.py)
    output = str(step.get("output") or "")
    if any(marker in output for marker in _CUT_MARKERS):
        return Fault.TRUNCATED
    args = step.get("arguments")
    if step.get("name") == "read_context" and (
        not isinstance(args, dict) or args.get("section", "summary") != "full"
    ):
        return Fault.TRUNCATED
    return None


def turns_from_steps(steps: Sequence[Mapping[str, Any]]) -> tuple[Turn, ...]:
    """Agent turns of a branch's steps: each model step's actions, with the faults of the
    tool results (and provider errors) of the same turn."""
    actions: dict[int, list[str]] = {}
    tools: dict[int, list[str]] = {}
    faults: dict[int, list[Fault]] = {}
    for s in steps:
        turn = s.get("turn")
        if not isinstance(turn, int):
            continue
        kind = s.get("type")
        if kind == "model":
            calls = s.get("tool_calls") or []
            actions[turn] = [_action(c.get("name"), c.get("arguments")) for c in calls] or [
                "answer"
            ]
        elif kind == "tool":
            tools.setdefault(turn, []).append(str(s.get("name")))
            if (fault := observation_fault(s)) is not None:
                faults.setdefault(turn, []).append(fault)
        elif kind == "error":
            actions.setdefault(turn, ["error"])
            faults.setdefault(turn, []).append(Fault.PROVIDER_ERROR)
    return tuple(
        Turn(t, tuple(actions[t]), tuple(faults.get(t, ())), tuple(tools.get(t, ())))
        for t in sorted(actions)
    )


def _action(name: Any, arguments: Any) -> str:
    return f"{name}({json.dumps(arguments, sort_keys=True, default=str)})"


def steps_of(branch: Mapping[str, Any]) -> list[dict[str, Any]]:
    try:
        steps = json.loads(branch.get("steps_json") or "[]")
    except json.JSONDecodeError:
        return []
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def classify_rollout(
    log: HarnessLog,
    rollout_id: str,
    by_q: Mapping[str, Sequence[Mapping[str, Any]]],
    objective: Mapping[tuple[str, int], int],
    winners: Mapping[str, int],
) -> dict[str, Any]:
    """Class every branch (passing = objective score 1), store the classes (replacing an
    earlier ranking's) and return the counts for the rank report."""
    rows: list[TrajectoryClassRecord] = []
    counts = {c.value: 0 for c in curation.TrajectoryClass}
    for qid, branches in by_q.items():
        traces = [
            BranchTrace(
                b["branch_index"],
                objective.get((qid, b["branch_index"]), 0) == 1,
                turns_from_steps(steps_of(b)),
            )
            for b in branches
        ]
        for index, c in curation.classify_question(traces, winners.get(qid)).items():
            counts[c.cls.value] += 1
            rows.append(
                TrajectoryClassRecord(
                    run_id=rollout_id,
                    question_id=qid,
                    branch_index=index,
                    class_=c.cls.value,
                    turns=c.turns,
                    fault_turn=c.fault_turn,
                    remediation_turn=c.remediation_turn,
                    divergence_turn=c.divergence_turn,
                    detail_json=json.dumps(c.to_json(), sort_keys=True),
                )
            )
    log.replace_trajectory_classes(rollout_id, rows)
    total = len(rows)
    return {
        "counts": counts,
        "shares": {k: (v / total if total else 0.0) for k, v in counts.items()},
        "recovery_with_retry": sum(
            1 for r in rows if r.class_ == "recovery" and json.loads(r.detail_json)["retried"]
        ),
    }


def stored_classes(log: HarnessLog, rollout_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The classes `rank` stored; for a fork ranked before classes existed, the same classes
    computed from its rankings (objective scores, best-ranked passing branch), not stored."""
    stored = {key: json.loads(detail) for key, detail in log.class_details(rollout_id).items()}
    return stored or _classes_from_rankings(log, rollout_id)


def _classes_from_rankings(
    log: HarnessLog, rollout_id: str
) -> dict[tuple[str, int], dict[str, Any]]:
    rows = [r.as_dict() for r in log.ranked_branches(rollout_id)]  # steps_of takes a mapping
    by_q: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_q.setdefault(r["question_id"], []).append(r)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for qid, ranked in by_q.items():
        winner = next((b["branch_index"] for b in ranked if b["objective"] == 1), None)
        traces = [
            BranchTrace(b["branch_index"], b["objective"] == 1, turns_from_steps(steps_of(b)))
            for b in ranked
        ]
        for index, c in curation.classify_question(traces, winner).items():
            out[(qid, index)] = c.to_json()
    return out


# -- the cascade ---------------------------------------------------------------------------------
VerifierFn = Callable[[Question, dict[str, Any]], object]


def _timed(
    fn: VerifierFn, question: Question | None, branch: dict[str, Any]
) -> tuple[Verdict, float]:
    started = time.perf_counter()
    verdict = (
        run_verifier(fn, question, branch)
        if question is not None
        else Verdict("unknown", "question no longer in the benchmark")
    )
    return verdict, time.perf_counter() - started


def stage_costs(
    fns: Sequence[tuple[str, VerifierFn]],
    declared: Mapping[str, float],
    sample: Sequence[tuple[Question | None, dict[str, Any]]],
) -> tuple[dict[str, float], dict[str, str]]:
    """Each verifier's mean cost in seconds: declared (`--verifier-cost`, or a `cost_s`
    attribute on the function), else measured on the first branches."""
    costs: dict[str, float] = {}
    basis: dict[str, str] = {}
    for name, fn in fns:
        attr = getattr(fn, "cost_s", None)
        if name in declared:
            costs[name], basis[name] = float(declared[name]), "declared"
        elif isinstance(attr, int | float) and not isinstance(attr, bool) and attr >= 0:
            costs[name], basis[name] = float(attr), "declared by the verifier"
        else:
            times = [_timed(fn, q, b)[1] for q, b in sample]
            costs[name] = sum(times) / len(times) if times else 0.0
            basis[name] = f"measured on {len(times)} branches"
    return costs, basis


def verify_cascade(
    log: HarnessLog,
    rollout_id: str,
    questions: Mapping[str, Question],
    names: Sequence[str],
    declared: Mapping[str, float] | None = None,
) -> tuple[dict[tuple[str, int], int], dict[str, Any]]:
    """The verifiers cheapest first; a branch stops at its first non-pass and the later
    verifiers are recorded `skipped`. Verdicts are stored (replacing earlier ones); returns
    each branch's objective score and the cascade report."""
    fns = [(name, load_verifier(name)) for name in names]
    rows = [b.as_dict() for b in log.branches(rollout_id)]  # a verifier takes a mapping
    sample = [(questions.get(b["question_id"]), b) for b in rows[:CALIBRATION_BRANCHES]]
    costs, basis = stage_costs(fns, declared or {}, sample)
    order = curation.cascade_order(costs, [n for n, _ in fns])
    by_name = dict(fns)
    entered = dict.fromkeys(order, 0)
    passed = dict.fromkeys(order, 0)
    elapsed = dict.fromkeys(order, 0.0)
    rejects: dict[str, list[str]] = {n: [] for n in order}
    scores: dict[tuple[str, int], int] = {}
    out: list[VerdictRecord] = []
    for branch in rows:
        qid, index = branch["question_id"], branch["branch_index"]
        question = questions.get(qid)
        verdicts: list[Verdict] = []
        stopped = False
        for name in order:
            if stopped:
                out.append(_verdict_row(rollout_id, branch, name, Verdict("skipped"), None))
                continue
            v, took = _timed(by_name[name], question, branch)
            entered[name] += 1
            elapsed[name] += took
            verdicts.append(v)
            out.append(_verdict_row(rollout_id, branch, name, v, took))
            if v.passed:
                passed[name] += 1
            else:
                stopped = True
                rejects[name].append(f"{qid}#{index}")
        scores[(qid, index)] = objective_score(verdicts) if not stopped else 0
    log.replace_verdicts(rollout_id, out)
    return scores, cascade_report(order, costs, basis, entered, passed, elapsed, rejects, len(rows))


def cascade_report(
    order: Sequence[str],
    costs: Mapping[str, float],
    basis: Mapping[str, str],
    entered: Mapping[str, int],
    passed: Mapping[str, int],
    elapsed: Mapping[str, float],
    rejects: Mapping[str, Sequence[str]],
    n_branches: int,
) -> dict[str, Any]:
    stages = [Stage(n, costs[n], passed[n] / entered[n] if entered[n] else 0.0) for n in order]
    econ = curation.cascade_economics(stages)
    spent = sum(entered[n] * costs[n] for n in order)
    every = n_branches * sum(costs[n] for n in order)
    return {
        "order": list(order),
        "stages": [
            {
                "verifier": n,
                "entered": entered[n],
                "passed": passed[n],
                "pass_rate": s.pass_rate,
                "mean_cost_s": costs[n],
                "cost_basis": basis[n],
                "measured_mean_s": elapsed[n] / entered[n] if entered[n] else None,
                "rejected": entered[n] - passed[n],
                "rejects": list(rejects[n][:REJECTS_LISTED]),
            }
            for n, s in zip(order, stages, strict=True)
        ],
        "yield_rate": econ.yield_,
        "cost_per_attempt_s": econ.cost_per_attempt,
        "cost_every_stage_s": econ.cost_every_stage,
        "cost_per_accepted_s": econ.cost_per_accepted,
        "cost_spent_s": spent,
        "cost_if_every_verifier_s": every,
        "cost_ratio": spent / every if every else None,
    }


def _verdict_row(
    rollout_id: str, branch: Mapping[str, Any], name: str, v: Verdict, took: float | None
) -> VerdictRecord:
    return VerdictRecord.build(rollout_id, branch_key(branch), name, v.outcome(), took)
