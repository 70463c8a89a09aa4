"""Training checkers for tests/app/rollouts/test_custom_checkers.py: well-behaved and hostile ones.
Each is called as f(question, prediction) in a checker worker process."""

from __future__ import annotations

import os
import sys
import time

from core.types import Question


def exact(question: Question, prediction: str) -> bool:
    return prediction.strip() == question.answer


def partial(question: Question, prediction: str) -> dict:
    return {"score": 0.6, "reason": "close enough"}


def ok_dict(question: Question, prediction: str) -> dict:
    return {"ok": True, "reason": "fine"}


def raises(question: Question, prediction: str) -> bool:
    raise RuntimeError("checker blew up")


def hangs(question: Question, prediction: str) -> bool:
    time.sleep(600)
    return True


def prints_megabytes(question: Question, prediction: str) -> bool:
    chunk = "x" * 1_000_000
    for _ in range(8):
        print(chunk)
        sys.stderr.write(chunk)
        os.write(1, chunk.encode())
    return True


def returns_nan(question: Question, prediction: str) -> float:
    return float("nan")


def returns_seven(question: Question, prediction: str) -> int:
    return 7


def returns_huge_reason(question: Question, prediction: str) -> dict:
    return {"score": 1.0, "reason": "r" * 5_000_000}


def exits(question: Question, prediction: str) -> bool:
    os._exit(3)


def raises_system_exit(question: Question, prediction: str) -> bool:
    raise SystemExit(4)
