"""Units: a pair of questions folds into one unit, right only when both members are right."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.types import CHECKERS, Question, QuestionUnit


def build_units(questions: Iterable[Question]) -> list[QuestionUnit]:
    """Units in first-appearance order; members keep their input order."""
    members: dict[str, list[Question]] = {}
    for q in questions:
        members.setdefault(q.unit_id, []).append(q)
    return [
        QuestionUnit(unit_id=uid, task_type=qs[0].task_type, questions=tuple(qs))
        for uid, qs in members.items()
    ]


def unit_correctness_view(
    units: Iterable[QuestionUnit], correctness: Mapping[str, bool]
) -> dict[str, bool]:
    """unit_id -> correct, for units whose every member has a result."""
    view = {}
    for unit in units:
        ids = unit.question_ids
        if all(qid in correctness for qid in ids):
            view[unit.unit_id] = all(correctness[qid] for qid in ids)
    return view


def unit_accuracy(units: Iterable[QuestionUnit], correctness: Mapping[str, bool]) -> float:
    view = unit_correctness_view(units, correctness)
    return sum(view.values()) / len(view) if view else 0.0


def is_scored(unit: QuestionUnit) -> bool:
    """A unit whose checker gives a score, not only pass/fail (a user `module:function` or
    `rubric`, docs/checkers.md): the gate compares its scores."""
    return any(q.checker not in CHECKERS for q in unit.questions)


def unit_outcome_view(
    units: Iterable[QuestionUnit], correctness: Mapping[str, bool], scores: Mapping[str, float]
) -> dict[str, bool | float | None]:
    """unit_id -> the outcome the gate compares (core/evolution/gate.py `Outcome`): for a
    pass/fail unit its correctness, exactly `unit_correctness_view`; for a scored unit the
    lowest score of its members (a pair is as good as its worse half; for 0/1 scores that is
    "both right"), or None when a member has no verdict (left out of the gate's evidence)."""
    units = list(units)
    view: dict[str, bool | float | None] = dict(
        unit_correctness_view([u for u in units if not is_scored(u)], correctness)
    )
    for unit in units:
        if is_scored(unit):
            found = [scores.get(qid) for qid in unit.question_ids]
            scores_found = [s for s in found if s is not None]
            complete = len(scores_found) == len(found)
            view[unit.unit_id] = min(scores_found) if complete and scores_found else None
    return view
