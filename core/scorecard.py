"""The scorecard of a ranked fork (docs/scorecard.md): pure figures, no I/O.

- loop health per question: p-hat (the share of its branches that pass), the chance that a
  set of N branches at that p-hat is informative (holds a pass and a fail, so a preference
  pair or a winner-vs-loser contrast exists: 1 - p^N - (1 - p)^N), and the distinct
  normalised tool sequences among its branches;
- flakiness: the share of (branch, verifier) verdicts that are not the same across K reruns;
- the yield eta = accepted / generated, with the warning that a yield above 0.5 may mean the
  verifiers accept too much.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# A yield above this suggests verifiers that let too much through (docs/scorecard.md).
LAX_YIELD = 0.5


def pass_at_1_and_n(passed: Mapping[str, Sequence[bool]]) -> tuple[float, float]:
    """(pass@1, pass@N) over questions from each question's branch outcomes. pass@1 is the
    mean over questions of the share of its branches that pass (c/n, the unbiased estimator of
    one sample's pass rate; what Inspect reports for epochs under its default mean reducer),
    never branch 0 alone; pass@N the share of questions with at least one pass. The same
    definition serves `fork`, `rank`, the scorecard and `export --format inspect`."""
    rows = [outcomes for outcomes in passed.values() if outcomes]
    if not rows:
        return 0.0, 0.0
    pass_1 = sum(sum(map(bool, r)) / len(r) for r in rows) / len(rows)
    return pass_1, sum(1 for r in rows if any(r)) / len(rows)


def informative_chance(p_hat: float, n: int) -> float:
    """P(a set of n independent branches holds at least one pass and one fail) at pass rate
    p_hat; 0 for n < 2."""
    if not 0.0 <= p_hat <= 1.0:
        raise ValueError(f"p_hat must be in [0, 1], got {p_hat}")
    if n < 2:
        return 0.0
    return max(0.0, 1.0 - p_hat**n - (1.0 - p_hat) ** n)


def normalise_tool_sequence(names: Sequence[str]) -> str:
    """Tool names in call order, case-folded and stripped, consecutive repeats of one tool
    folded into one (a retry of the same call is the same path); "" for no tool call."""
    out: list[str] = []
    for name in names:
        n = name.strip().lower()
        if n and (not out or out[-1] != n):
            out.append(n)
    return " -> ".join(out)


@dataclass(frozen=True)
class QuestionHealth:
    question_id: str
    branches: int
    passed: int
    p_hat: float
    informative_chance: float
    distinct_tool_sequences: int

    @property
    def informative(self) -> bool:
        """Observed informative: 0 < p-hat < 1."""
        return 0 < self.passed < self.branches


def question_health(
    question_id: str, passes: Sequence[bool], tool_sequences: Sequence[str]
) -> QuestionHealth:
    n = len(passes)
    k = sum(1 for p in passes if p)
    p_hat = k / n if n else 0.0
    return QuestionHealth(
        question_id=question_id,
        branches=n,
        passed=k,
        p_hat=p_hat,
        informative_chance=informative_chance(p_hat, n),
        distinct_tool_sequences=len(set(tool_sequences)),
    )


@dataclass(frozen=True)
class LoopHealth:
    questions: int
    informative_share: float  # observed: questions with 0 < p-hat < 1
    mean_informative_chance: float
    mean_distinct_tool_sequences: float
    all_pass: int
    all_fail: int


def loop_health(rows: Sequence[QuestionHealth]) -> LoopHealth:
    n = len(rows)
    if not n:
        return LoopHealth(0, 0.0, 0.0, 0.0, 0, 0)
    return LoopHealth(
        questions=n,
        informative_share=sum(1 for r in rows if r.informative) / n,
        mean_informative_chance=sum(r.informative_chance for r in rows) / n,
        mean_distinct_tool_sequences=sum(r.distinct_tool_sequences for r in rows) / n,
        all_pass=sum(1 for r in rows if r.branches and r.passed == r.branches),
        all_fail=sum(1 for r in rows if r.passed == 0),
    )


def flake_rate(reruns: Sequence[Sequence[str]]) -> float:
    """Share of items (one per branch and verifier, each the verdict statuses of its K
    reruns) whose status is not the same on every rerun; 0 when there is nothing to rerun."""
    if not reruns:
        return 0.0
    return sum(1 for statuses in reruns if len(set(statuses)) > 1) / len(reruns)


def yield_rate(accepted: int, generated: int) -> float:
    if accepted < 0 or generated < 0 or accepted > generated:
        raise ValueError(f"need 0 <= accepted <= generated, got {accepted}, {generated}")
    return accepted / generated if generated else 0.0


def lax_warning(eta: float) -> str | None:
    if eta > LAX_YIELD:
        return (
            f"yield {eta:.3f} > {LAX_YIELD}: the verifiers accept most branches and may be "
            "too lax to separate good trajectories from bad"
        )
    return None


@dataclass(frozen=True)
class ForkSummary:
    """One fork's outcome for the collapse check: pass@1 (mean p-hat: one branch's expected
    pass rate), pass@N (share of questions with a passing branch) and diversity (mean
    distinct tool sequences per question)."""

    rollout_id: str
    pass_at_1: float
    pass_at_n: float
    diversity: float


def fork_summary(rollout_id: str, rows: Sequence[QuestionHealth]) -> ForkSummary:
    n = len(rows)
    if not n:
        return ForkSummary(rollout_id, 0.0, 0.0, 0.0)
    return ForkSummary(
        rollout_id=rollout_id,
        pass_at_1=sum(r.p_hat for r in rows) / n,
        pass_at_n=sum(1 for r in rows if r.passed) / n,
        diversity=sum(r.distinct_tool_sequences for r in rows) / n,
    )


# pass@N moving less than this (absolute share) counts as flat
FLAT_PASS_AT_N = 0.02


def collapse_warning(before: ForkSummary, after: ForkSummary) -> str | None:
    """The sign of a policy sharpening onto fewer paths: pass@1 up while pass@N stays flat
    and the distinct tool sequences per question go down."""
    up = after.pass_at_1 > before.pass_at_1
    flat = abs(after.pass_at_n - before.pass_at_n) < FLAT_PASS_AT_N
    less_diverse = after.diversity < before.diversity
    if up and flat and less_diverse:
        return (
            f"possible collapse since {before.rollout_id}: pass@1 "
            f"{before.pass_at_1:.3f} -> {after.pass_at_1:.3f} but pass@N flat "
            f"({before.pass_at_n:.3f} -> {after.pass_at_n:.3f}) and tool-sequence diversity "
            f"down ({before.diversity:.2f} -> {after.diversity:.2f} per question)"
        )
    return None
