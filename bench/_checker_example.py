"""A trivial training checker for bench/judged.py's worker-latency figure (not a bench: the
leading underscore keeps bench/run_all.py from running it)."""

from __future__ import annotations

from core.types import Question


def exact(question: Question, prediction: str) -> bool:
    return prediction.strip() == question.answer
