"""Judge quality: does a rubric judge land where a trustworthy one must? (docs/checkers.md)

Pure: labelled cases in, figures out. A case is an answer to a question under a rubric with
the band [low, high] a trustworthy judge's score (in [0, 1]) must land in; `kind` says what
it probes: a `reference` answer (should score high), a `known_bad` one (should score low), a
`control` (an empty or off-topic answer: must score low whatever the rubric). Figures:
- agreement: the share of cases with a verdict whose score lands in its band;
- band misses: the cases outside it, with how far;
- leniency: the mean signed distance to the band (> 0: scores above the band, too lenient;
  < 0: too harsh), over every case with a verdict;
- verbosity bias: the mean score change when the same answer is padded with neutral filler
  (a trustworthy judge does not reward length), over cases with a verdict both ways;
- invalid: cases whose judge replies were all unreadable (no verdict: never counted as a miss
  or a hit, reported on their own).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from enum import StrEnum

# Neutral filler appended to an answer for the verbosity probe: says nothing about the task.
VERBOSE_PAD = (
    "\n\nAdditional notes: this answer was written with care and reviewed in detail; every "
    "consideration that could matter was weighed before it was given."
)
DEFAULT_PASS_LINE = 0.9


class CaseKind(StrEnum):
    REFERENCE = "reference"
    KNOWN_BAD = "known_bad"
    CONTROL = "control"


@dataclass(frozen=True)
class JudgeCase:
    case_id: str
    question: str
    rubric: str
    answer: str
    low: float
    high: float
    kind: CaseKind = CaseKind.REFERENCE

    def __post_init__(self) -> None:
        if not (0.0 <= self.low <= self.high <= 1.0):
            raise ValueError(f"band [{self.low}, {self.high}] is not inside [0, 1]")


@dataclass(frozen=True)
class CaseScore:
    """The judge's scores for one case: plain and padded (None: no verdict)."""

    case_id: str
    score: float | None
    padded: float | None
    invalid_replies: int = 0


@dataclass(frozen=True)
class BandMiss:
    case_id: str
    kind: CaseKind
    score: float
    low: float
    high: float

    @property
    def distance(self) -> float:
        return band_distance(self.score, self.low, self.high)


@dataclass(frozen=True)
class JudgeQuality:
    cases: int
    judged: int  # cases with a verdict
    agreement: float  # in-band share of judged cases (0 when none was judged)
    misses: tuple[BandMiss, ...]
    leniency: float
    verbosity_bias: float
    invalid_cases: int
    invalid_replies: int
    by_kind: dict[str, float]  # kind -> agreement
    pass_line: float

    @property
    def passed(self) -> bool:
        return self.judged > 0 and self.agreement >= self.pass_line


def band_distance(score: float, low: float, high: float) -> float:
    """Signed distance from the band: > 0 above it, < 0 below it, 0 inside."""
    if score > high:
        return score - high
    if score < low:
        return score - low
    return 0.0


def assess(
    cases: list[JudgeCase], scores: dict[str, CaseScore], pass_line: float = DEFAULT_PASS_LINE
) -> JudgeQuality:
    judged: list[tuple[JudgeCase, float]] = []
    misses: list[BandMiss] = []
    pads: list[float] = []
    invalid_cases = invalid_replies = 0
    per_kind: dict[str, list[bool]] = {}
    for case in cases:
        s = scores.get(case.case_id)
        if s is None:
            continue
        invalid_replies += s.invalid_replies
        if s.score is None or not math.isfinite(s.score):
            invalid_cases += 1
            continue
        judged.append((case, s.score))
        inside = band_distance(s.score, case.low, case.high) == 0.0
        per_kind.setdefault(case.kind, []).append(inside)
        if not inside:
            misses.append(BandMiss(case.case_id, case.kind, s.score, case.low, case.high))
        if s.padded is not None:
            pads.append(s.padded - s.score)
    n = len(judged)
    return JudgeQuality(
        cases=len(cases),
        judged=n,
        agreement=(n - len(misses)) / n if n else 0.0,
        misses=tuple(misses),
        leniency=sum(band_distance(v, c.low, c.high) for c, v in judged) / n if n else 0.0,
        verbosity_bias=sum(pads) / len(pads) if pads else 0.0,
        invalid_cases=invalid_cases,
        invalid_replies=invalid_replies,
        by_kind={k: sum(v) / len(v) for k, v in sorted(per_kind.items())},
        pass_line=pass_line,
    )


def rubric_key(rubric: str) -> str:
    """What a recorded check is keyed by: the rubric's text, whitespace-normalised."""
    return hashlib.sha256(" ".join(rubric.split()).encode()).hexdigest()[:16]
