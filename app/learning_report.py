"""`report`'s "why learning failed": per task type of the latest training run, the counts
core/evolution/learning_failures.py tests, read from the log. Reads only."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from app.harness.rollouts.benchmark_validation import gate_families
from app.harness.training.vocabulary import BASELINE_RUN
from app.harness.workspace.config import build_config
from app.harness.workspace.harness_log.predictions import PredictionAnswer
from app.harness.workspace.harness_log.reader import LogReader
from app.harness.workspace.store import load_benchmark
from core.benchmark_checks import (
    families_at_mean_effect,
    gate_families_at_effect,
    gate_min_families,
)
from core.evolution.gate import GateParams, GateStopReason, unit_difference
from core.evolution.learning_failures import TypeEvidence, addresses, explain, rule_terms
from core.types import Question, StopReason

ACCEPTED = ("accept", "accept_provisional")
USABLE = "ok"  # core.evolution.evolve.EvolutionStatus.OK: parsed and changed the file


def learning_failures(root: Path, log: LogReader) -> list[dict[str, Any]]:
    """One entry per task type of the latest training run: its evidence and the reasons found
    (empty when the workspace has no training run)."""
    train = log.latest_run("train")
    if train is None:
        return []
    like = f"{train.run_id}-%"
    questions = _questions(root)
    context_of = {q.question_id: bool(q.context) for q in questions}
    gate = _gate_params(log, train.run_id)
    families = {g.task_type: g for g in _gate_families(root)}
    out = []
    for task_type in sorted(_task_types(log, like) | set(families)):
        fam = families.get(task_type)
        of_type = [q for q in questions if q.task_type == task_type]
        evidence, horizons = _evidence(log, like, task_type, context_of, of_type)
        needed = _families_needed(gate, fam.singletons, evidence) if fam else None
        evidence = replace(
            evidence,
            gate_families=fam.families if fam else 0,
            families_needed=needed,
            blind_tests=sum(1 for h in horizons if needed is not None and h < needed),
        )
        found = explain(evidence) if evidence.accepted == 0 else ()
        out.append({**asdict(evidence), "reasons": [asdict(x) for x in found]})
    return out


def _families_needed(gate: GateParams, singletons: bool, e: TypeEvidence) -> int | None:
    """The families the gate needs to accept at the effect the type's gate tests observed:
    their summed W and L for single-question families, whose signs the gate counts; the mean
    d of the families they saw otherwise, which the gate bets on (a family of 3 that one rule
    moves by 1/3 needs 18, not the 7 an all-won count says). All won when none was positive."""
    if singletons:
        at_effect = gate_families_at_effect(
            gate, e.effect_wins, e.effect_losses, e.effect_families, singletons
        )
    else:
        mean = e.effect_sum / e.effect_families if e.effect_families else 0.0
        at_effect = families_at_mean_effect(gate, mean)
    return at_effect if at_effect is not None else gate_min_families(gate, singletons)


def _gate_params(log: LogReader, run_id: str) -> GateParams:
    """The training run's gate settings as recorded (the defaults if unreadable)."""
    try:
        stored = json.loads(log.run_config(run_id) or "{}")
        return build_config(stored, "train run config").gate
    except Exception:  # an older or damaged record: the default gate is the honest guess
        return GateParams()


def _task_types(log: LogReader, like: str) -> set[str]:
    return log.tables.reported_task_types(like)


def _questions(root: Path) -> list[Question]:
    """The frozen benchmark's questions, each in the family the gate counted it in (its own
    unit when the benchmark declares a family's units independent, `family_units`)."""
    try:
        bench = load_benchmark(root / "questions")
    except Exception:  # a report never fails on the frozen benchmark: its tests are skipped
        return []
    if bench.independent_units:
        return [replace(q, family=q.unit_id) for q in bench.questions]
    return list(bench.questions)


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
    questions: list[Question],
) -> tuple[TypeEvidence, list[int]]:
    """The type's counts (gate families, families needed and blind tests are left for the
    caller, which knows the gate) and the horizons of its gate tests."""
    evolutions = log.tables.evolution_edits(like, task_type)
    usable = sum(1 for e in evolutions if e.status == USABLE and json.loads(e.edits_json or "[]"))
    steps = log.tables.step_outcomes(like, task_type)
    gated = [s for s in steps if s.gate_run_id]
    units = _GateUnits(log, like, task_type, questions) if gated else None
    for s in gated:
        assert units is not None  # built whenever a step was gated
        units.add(str(s.gate_run_id), s.report_json)
    judged, contradicted = _judge_counts(log, like, task_type, context_of)
    horizons = [_horizon(s.report_json) for s in gated]
    seen = [h for h in horizons if h is not None]
    evidence = TypeEvidence(
        task_type=task_type,
        accepted=sum(1 for s in steps if s.action in ACCEPTED),
        evolver_replies=len(evolutions),
        usable_replies=usable,
        gated=len(gated),
        candidate_units=units.addressed if units else 0,
        candidate_failures=units.still_failed if units else 0,
        insufficient=sum(1 for s in steps if s.stop_reason == GateStopReason.INSUFFICIENT_EVIDENCE),
        blind_tests=0,
        fewest_seen=min(seen) if seen else None,
        gate_families=0,
        families_needed=None,
        judge_verdicts=judged,
        contradicted=contradicted,
        compared_failures=units.compared if units else 0,
        unchanged_failures=units.unchanged if units else 0,
        control_units=units.control if units else 0,
        control_fixed=units.control_fixed if units else 0,
        effect_wins=sum(int(s.w or 0) for s in gated),
        effect_losses=sum(int(s.l or 0) for s in gated),
        effect_families=sum(int(s.n_used or 0) for s in gated),
        effect_sum=units.effect_sum if units else 0.0,
    )
    return evidence, seen


def _outcome(stored: object) -> bool | float | None:
    """A stored gate outcome as the gate compared it: 0/1 as pass/fail, a score as itself."""
    if stored is None:
        return None
    if isinstance(stored, int):
        return bool(stored)
    return float(stored) if isinstance(stored, float) else None


def _right(outcome: object) -> bool:
    """A gate unit's stored outcome (core/evolution/gate.py `_stored`: a bool, or a score in
    [0, 1] for scored checkers) read as right or wrong."""
    return isinstance(outcome, int | float) and float(outcome) >= 0.5


class _GateUnits:
    """One task type's gate units over its gate tests: of those the base skill got wrong, the
    ones each test's edit addresses (core/evolution/learning_failures.py `rule_terms`) and the
    rest, with what the candidate made of them, and the candidate's wrong answers compared
    with the base skill's."""

    def __init__(self, log: LogReader, like: str, task_type: str, questions: list[Question]):
        self.log = log
        self.texts = [q.question for q in questions]
        self.of_unit: dict[str, list[Question]] = {}
        for q in questions:
            self.of_unit.setdefault(q.unit_id, []).append(q)
        self.base_answers = _base_answers(log, like, task_type)
        self.has_evidence = log.has_table("gate_evidence")
        self.addressed = self.still_failed = self.control = self.control_fixed = 0
        self.compared = self.unchanged = 0
        self.effect_sum = 0.0  # Σ over the families the tests used of d (family_mean)
        family_of = {q.unit_id: q.family for q in questions}
        sizes = Counter(family_of.values())
        self.share = {u: 1 / sizes[f] for u, f in family_of.items()}  # a unit's weight in d

    def add(self, gate_run_id: str, report_json: str | None) -> None:
        if not self.has_evidence:
            return
        terms = rule_terms(_added_text(report_json), self.texts)
        cand_answers = {
            str(r.question_id): r
            for r in self.log.tables.candidate_answers(gate_run_id, CANDIDATE_SUFFIX)
        }
        for r in self.log.tables.unit_outcomes(gate_run_id):
            self.effect_sum += self.share.get(str(r.unit_id), 1.0) * unit_difference(
                _outcome(r.base), _outcome(r.cand)
            )
            if _right(r.base):
                continue  # right before the edit: no failure for the edit to address
            members = self.of_unit.get(str(r.unit_id), [])
            fixed = _right(r.cand)
            if terms and not any(addresses(terms, q.question) for q in members):
                self.control += 1
                self.control_fixed += fixed
                continue
            self.addressed += 1
            if not fixed:
                self.still_failed += 1
                for q in members:
                    self._compare(cand_answers.get(q.question_id))

    def _compare(self, row: PredictionAnswer | None) -> None:
        if row is None or row.correct:
            return
        version = str(row.skills_version or "")
        base = self.base_answers.get((str(row.question_id), version.removesuffix(CANDIDATE_SUFFIX)))
        if base is not None:
            self.compared += 1
            self.unchanged += _same_answer(base, row.prediction)


def _added_text(report_json: str | None) -> str:
    """The text a gate test's edits added (the applied ones, by the step report's
    `apply_report`; every edit when it has none)."""
    try:
        report = json.loads(report_json or "{}")
    except ValueError:
        return ""
    edits = report.get("edits") if isinstance(report, dict) else None
    if not isinstance(edits, list):
        return ""
    applied = report.get("apply_report")
    if isinstance(applied, list) and applied:
        keep = {a.get("index") for a in applied if isinstance(a, dict) and a.get("applied")}
        edits = [e for i, e in enumerate(edits) if i in keep]
    return "\n".join(
        str(e.get(k) or "") for e in edits if isinstance(e, dict) for k in ("content", "new")
    )


CANDIDATE_SUFFIX = "+cand"  # a gate run's skills version: the base version with the candidate


def _base_answers(log: LogReader, like: str, task_type: str) -> dict[tuple[str, str], str]:
    """(question, skills version) -> the latest answer a run of that version that is not a
    candidate's gave (the baseline, a rollout, a gate's base run): what the base skill of a
    gate answered the same question. One read per task type, not one per gate unit."""
    rows = log.tables.base_answers(task_type, like, BASELINE_RUN, CANDIDATE_SUFFIX)
    return {(str(r.question_id), str(r.skills_version)): str(r.prediction or "") for r in rows}


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
    judged = [r for r in log.tables.judged_failures(like, task_type) if r.decided_by == "judge"]
    contradicted = sum(
        1
        for r in judged
        if (r.category == "runtime_fault" and r.stop_reason == StopReason.FINAL)
        or (r.category == "missing_context" and not context_of.get(str(r.question_id), True))
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
                "detail": f"{e['gated']} candidate(s) gated (W={e['effect_wins']} "
                f"L={e['effect_losses']} over {e['effect_families']} families), "
                f"{e['candidate_failures']} of the {e['candidate_units']} gate units failed "
                "before that the edits address still failed, none accepted",
            }
        ]
        for i, r in enumerate(reasons):
            name = e["task_type"] if i == 0 else ""
            lines.append(f"  {name:<16} {r['reason']}: {r['detail']}")
    return lines
