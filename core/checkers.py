"""Answer checkers (DESIGN §3): exact after normalisation, numeric, choice, regex."""

from __future__ import annotations

import math
import re
import unicodedata

from core.types import Question

ANSWER_RE = re.compile(r"^\s*ANSWER:\s*(.*?)\s*$", re.MULTILINE | re.IGNORECASE)
MAX_REGEX_INPUT = 1000


def extract_answer(text: str) -> str | None:
    """The last `ANSWER: ...` line of a reply, or None."""
    found = ANSWER_RE.findall(text or "")
    return found[-1] if found else None


def normalise_answer(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).strip().lower()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .`'\"")


def _number(text: str) -> float | None:
    cleaned = normalise_answer(text).replace(",", "").replace("_", "")
    m = re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?", cleaned)
    return float(cleaned) if m else None


def check(question: Question, prediction: str) -> bool:
    if not prediction:
        return False
    kind = question.checker
    args = question.checker_args
    if kind == "numeric":
        got, want = _number(prediction), _number(question.answer)
        if got is None or want is None:
            return False
        tol = max(float(args.get("abs_tol", 1e-9)), float(args.get("rel_tol", 0)) * abs(want))
        return math.isclose(got, want, abs_tol=tol, rel_tol=0)
    if kind == "choice":
        m = re.match(r"\(?([A-Za-z])\)?(\b|$)", normalise_answer(prediction))
        return bool(m) and m.group(1).upper() == question.answer.strip().upper()
    if kind == "regex":
        pattern = args.get("pattern") or re.escape(question.answer)
        text = prediction.strip()
        if len(text) > MAX_REGEX_INPUT:  # too long to be a code; never cut and match a prefix
            return False
        return re.fullmatch(pattern, text) is not None
    return normalise_answer(prediction) == normalise_answer(question.answer)
