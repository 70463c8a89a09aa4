"""Distillation's figures: the probe's paired family gap and verdict, units from questions,
gap closed, promotion and cost per 1,000 questions (app/harness/training/distill.py runs them).

Pure: the bootstrap draws from a seeded `random.Random`, so a verdict is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.stats import mcnemar_exact, wilson_interval


class Verdict(StrEnum):
    DISTILL = "distill"
    NOT_WORTH_IT = "not_worth_it"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"


# Exit codes of `distill` (2 is every command's bad input, 1 a failed run).
EXIT_CODES = {
    Verdict.DISTILL: 0,
    Verdict.NOT_WORTH_IT: 3,
    Verdict.INSUFFICIENT_EVIDENCE: 4,
}
MIN_FAMILIES = 8  # fewer paired families than this: no interval is trusted


@dataclass(frozen=True)
class ProbeResult:
    verdict: Verdict
    families: int
    teacher_accuracy: float
    student_accuracy: float
    gap: float  # mean over families of (teacher - student) accuracy
    interval: tuple[float, float]  # percentile bootstrap over families, 1 - alpha
    min_gap: float
    reason: str


def family_differences(
    teacher: Mapping[str, bool], student: Mapping[str, bool], family_of: Mapping[str, str]
) -> list[tuple[float, float]]:
    """(teacher, student) accuracy per family, over the questions both answered with a verdict:
    a family is one observation, as it is for the gate (near-duplicates are not independent)."""
    sums: dict[str, list[int]] = {}
    for qid in sorted(set(teacher) & set(student)):
        s = sums.setdefault(family_of.get(qid, qid), [0, 0, 0])
        s[0] += int(teacher[qid])
        s[1] += int(student[qid])
        s[2] += 1
    return [(t / n, u / n) for t, u, n in (sums[f] for f in sorted(sums))]


def bootstrap_interval(
    diffs: Sequence[float], alpha: float, resamples: int, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired differences."""
    if not diffs:
        return (0.0, 0.0)
    rng = random.Random(f"distill-bootstrap:{seed}")
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    lo_i = max(0, math.floor(alpha / 2 * resamples))
    hi_i = min(resamples - 1, math.ceil((1 - alpha / 2) * resamples) - 1)
    return means[lo_i], means[hi_i]


def probe(
    pairs: Sequence[tuple[float, float]],
    min_gap: float,
    alpha: float,
    resamples: int,
    seed: int = 0,
) -> ProbeResult:
    """`distill` when the gap reaches `min_gap` and its interval excludes zero; `not_worth_it`
    when the whole interval lies below `min_gap` (the teacher is surely not enough better);
    otherwise, or with fewer than MIN_FAMILIES families, `insufficient_evidence`."""
    n = len(pairs)
    t_acc = sum(t for t, _ in pairs) / n if n else 0.0
    s_acc = sum(s for _, s in pairs) / n if n else 0.0
    diffs = [t - s for t, s in pairs]
    gap = t_acc - s_acc
    interval = bootstrap_interval(diffs, alpha, resamples, seed)
    lo, hi = interval
    if n < MIN_FAMILIES:
        verdict, why = Verdict.INSUFFICIENT_EVIDENCE, f"{n} paired families (< {MIN_FAMILIES})"
    elif gap >= min_gap and lo > 0:
        verdict, why = Verdict.DISTILL, f"gap {gap:.3f} >= {min_gap} and interval excludes 0"
    elif hi < min_gap:
        verdict, why = Verdict.NOT_WORTH_IT, f"interval lies below the minimum gap {min_gap}"
    else:
        verdict, why = Verdict.INSUFFICIENT_EVIDENCE, "interval holds 0 or the minimum gap"
    return ProbeResult(verdict, n, t_acc, s_acc, gap, interval, min_gap, why)


def unit_correctness(
    correctness: Mapping[str, bool], unit_of: Mapping[str, str]
) -> dict[str, bool]:
    """Question verdicts to unit verdicts: a pair is right only when both members are."""
    units: dict[str, bool] = {}
    for qid, ok in correctness.items():
        unit = unit_of.get(qid, qid)
        units[unit] = units.get(unit, True) and ok
    return units


@dataclass(frozen=True)
class Accuracy:
    correct: int
    total: int
    interval: tuple[float, float]  # Wilson, 1 - alpha

    @property
    def value(self) -> float:
        return self.correct / self.total if self.total else 0.0


def accuracy(units: Mapping[str, bool], alpha: float = 0.05) -> Accuracy:
    correct, total = sum(units.values()), len(units)
    return Accuracy(correct, total, wilson_interval(correct, total, alpha))


def paired_mcnemar(before: Mapping[str, bool], after: Mapping[str, bool]) -> tuple[int, int, float]:
    """(units only after got right, units only before got right, exact two-sided p)."""
    common = set(before) & set(after)
    wins = sum(1 for u in common if after[u] and not before[u])
    losses = sum(1 for u in common if before[u] and not after[u])
    return wins, losses, mcnemar_exact(wins, losses)


def gap_closed(teacher: float, before: float, after: float) -> float | None:
    """Share of the teacher-student gap the training closed; None when there was no gap."""
    if teacher <= before:
        return None
    return (after - before) / (teacher - before)


def promoted(student: float, teacher: float, share: float) -> bool:
    """Whether the student reaches `share` of the teacher (a float product's last bit is not
    a miss: 0.72 reaches 0.9 x 0.8)."""
    return student >= share * teacher - 1e-12


def per_thousand(cost_usd: float, questions: int) -> float | None:
    return cost_usd / questions * 1000 if questions else None
