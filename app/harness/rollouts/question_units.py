"""Units: a pair of questions folds into one unit, right only when both members are right."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.types import Question, QuestionUnit


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
