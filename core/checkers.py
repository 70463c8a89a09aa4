"""Answer checkers (docs/architecture.md#the-data-model): exact after normalisation, numeric,
choice, regex; and what a checker's verdict is (`CheckResult`) for the kinds the harness runs
itself: a user `module:function` (app/harness/rollouts/custom_checkers.py) and `rubric`
(app/harness/rollouts/rubric.py). See docs/checkers.md."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from core.types import CHECKERS, Question

# `answer:` in any case, not glued to a preceding letter or digit ("FINAL_ANSWER:" counts,
# "myanswer:" does not).
ANSWER_MARKER_RE = re.compile(r"(?<![A-Za-z0-9])answer:", re.IGNORECASE)
MAX_REGEX_INPUT = 1000


def extract_answer(text: str) -> str | None:
    """The answer after the last `ANSWER:` marker of a reply, or None when there is none.

    The rule (docs/real-models.md): a marker is `answer:` in any case, anywhere
    on a line, so "... the capital IS Bangkok. ANSWER: Bangkok" gives "Bangkok"; its answer is
    the rest of that line, stripped of spaces and markdown bold (`**ANSWER:** Oslo`). The last
    marker wins. A marker inside a sentence with nothing after it on its line ("Here is my
    answer:" and the answer on the next line) is not one: the reply is left to the benchmark's
    fallbacks. A marker that starts its line counts even when empty (the agent said nothing).
    The price of accepting markers mid-line: prose such as "the answer: is unclear" reads as
    the answer "is unclear", which scores wrong rather than refused.
    """
    text = text or ""
    found: str | None = None
    for marker in ANSWER_MARKER_RE.finditer(text):
        line_start = text.rfind("\n", 0, marker.start()) + 1
        line_end = text.find("\n", marker.end())
        value = text[marker.end() : line_end if line_end >= 0 else len(text)]
        value = value.strip().strip("*").strip()
        if value or not text[line_start : marker.start()].strip(" \t*"):
            found = value
    return found


# Fallbacks a benchmark may declare for replies without an `ANSWER:` line, tried in order.
# `extract` asks the agent model to extract the answer (done by the harness, not here).
ANSWER_FALLBACKS = ("last_number", "choice", "last_line", "extract")
_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])")
_CHOICE_RE = re.compile(r"(?:^|[\s(\[])([A-Ea-e])(?:[).\]:]|\s*$)", re.MULTILINE)
_TAG_RE = re.compile(r"</?[A-Za-z][\w-]{0,30}>")
MAX_FALLBACK_CHARS = 200


def fallback_answer(text: str, method: str) -> str | None:
    """The answer one fallback finds in a reply, or None (`extract` is never handled here)."""
    text = (text or "").strip()
    if not text:
        return None
    if method == "last_number":
        found = _NUMBER_RE.findall(text)
        return found[-1].replace(",", "") if found else None
    if method == "choice":
        found = _CHOICE_RE.findall(text)
        return found[-1].upper() if found else None
    if method == "last_line":  # the last line with words, markup tags such as </answer> aside
        lines = [ln.strip().strip("*`_ ") for ln in _TAG_RE.sub(" ", text).splitlines()]
        lines = [ln for ln in lines if ln]
        last = lines[-1].rstrip(".!") if lines else ""
        return last[:MAX_FALLBACK_CHARS] or None
    return None


def normalise_answer(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).strip().lower()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .`'\"")


def _number(text: str) -> float | None:
    cleaned = normalise_answer(text).replace(",", "").replace("_", "")
    m = re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?", cleaned)
    return float(cleaned) if m else None


# A second option letter right after the first ("A B C D", "a, b", "A or B", "a/b"): a reply that
# names several options names none, or every reply listing all options would be right.
_NEXT_OPTION_RE = re.compile(r"\s*(?:[,/;&.:]\s*|\s(?:and|or)\s+)?\(?([a-z])\)?(?:\b|$)")


def _option_letters(args: dict[str, Any]) -> set[str]:
    options = args.get("options")
    if isinstance(options, list) and options:
        return {str(o).strip().lower()[:1] for o in options if str(o).strip()}
    return set("abcde")


def _names_another_option(rest: str, letters: set[str]) -> bool:
    m = _NEXT_OPTION_RE.match(rest)
    return m is not None and m.group(1) in letters


def check(question: Question, prediction: str) -> bool:
    """A built-in checker's verdict (CHECKERS); any other kind reads as `exact`, so callers
    route custom and rubric checkers elsewhere (app/harness/rollouts/checking.py)."""
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
        text = normalise_answer(prediction)
        m = re.match(r"\(?([A-Za-z])\)?(\b|$)", text)
        if m is None or _names_another_option(text[m.end() :].lstrip(")"), _option_letters(args)):
            return False
        return m.group(1).upper() == question.answer.strip().upper()
    if kind == "regex":
        pattern = args.get("pattern") or re.escape(question.answer)
        text = prediction.strip()
        if len(text) > MAX_REGEX_INPUT:  # too long to be a code; never cut and match a prefix
            return False
        return re.fullmatch(pattern, text) is not None
    return normalise_answer(prediction) == normalise_answer(question.answer)


RUBRIC = "rubric"
REASON_MAX = 500


def is_custom(kind: str) -> bool:
    """A user checker named `module:function` (both parts non-empty)."""
    module, sep, attr = kind.partition(":")
    return bool(sep and module.strip() and attr.strip())


def is_known_checker(kind: str) -> bool:
    return kind in CHECKERS or kind == RUBRIC or is_custom(kind)


class CheckStatus(StrEnum):
    """How checking one answer went (stored in predictions.check_status)."""

    OK = "ok"  # the checker gave a score
    CHECK_ERROR = "check_error"  # the checker failed (raised, hung, died, returned junk)
    INVALID = "invalid"  # every judge reply was unreadable: no verdict at all


@dataclass(frozen=True)
class CheckResult:
    """One answer's verdict. `score` is in [0, 1], or None when there is no verdict
    (INVALID: excluded from accuracy and from the gate's evidence, never scored 0). A
    CHECK_ERROR is a failure: score 0, with its reason."""

    status: CheckStatus
    score: float | None
    reason: str = ""
    invalid_replies: int = 0  # judge replies that did not parse (rubric only)
    valid_replies: int = 0
    samples: tuple[float | None, ...] = ()  # each judge sample's score, None: invalid

    @classmethod
    def scored(cls, score: float, reason: str = "") -> CheckResult:
        return cls(CheckStatus.OK, score, reason[:REASON_MAX])

    @classmethod
    def error(cls, reason: str) -> CheckResult:
        return cls(CheckStatus.CHECK_ERROR, 0.0, reason[:REASON_MAX])


def pass_threshold(question: Question) -> float:
    """A score passes at `checker_args.pass_threshold` (default 1.0: only a full score)."""
    value = question.checker_args.get("pass_threshold", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 1.0
    return min(1.0, max(0.0, float(value)))


def passes(question: Question, result: CheckResult) -> bool:
    return result.score is not None and result.score >= pass_threshold(question)


def coerce_check_value(value: Any) -> CheckResult:
    """A user checker's return value as a CheckResult: a bool, a number in [0, 1], or a dict
    {"score" | "ok", "reason"}. Anything else (NaN, 7, a string, a dict without either key)
    is a CHECK_ERROR naming what came back, never a score."""
    if isinstance(value, bool):
        return CheckResult.scored(1.0 if value else 0.0)
    if isinstance(value, int | float):
        return _score_or_error(value, "")
    if isinstance(value, dict):
        reason = str(value.get("reason", ""))[:REASON_MAX]
        if "score" in value:
            score = value["score"]
            if isinstance(score, bool) or not isinstance(score, int | float):
                return CheckResult.error(f"score is {type(score).__name__}, not a number")
            return _score_or_error(score, reason)
        if isinstance(value.get("ok"), bool):
            return CheckResult.scored(1.0 if value["ok"] else 0.0, reason)
        return CheckResult.error('returned a dict with neither "score" nor a boolean "ok"')
    return CheckResult.error(f"returned {type(value).__name__}, not a bool, number or dict")


def _score_or_error(score: float, reason: str) -> CheckResult:
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        return CheckResult.error(f"score {str(score)[:40]} is not a number in [0, 1]")
    return CheckResult.scored(float(score), reason)


def builtin_result(question: Question, prediction: str) -> CheckResult:
    """A built-in checker's pass/fail as a 0/1 score."""
    return CheckResult.scored(1.0 if check(question, prediction) else 0.0)
