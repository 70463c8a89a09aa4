"""Ranking a question's branches (best-of-N rollouts, app/harness/data/rank.py): Bradley–Terry
over pairwise judgments plus a weighted sum of reward components, and the honesty statistics
every ranking report carries.

Pure logic, no I/O; app/harness/data/rank.py feeds it from the harness log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.stats import bradley_terry, mcnemar_exact, min_detectable_difference, wilson_interval

DEFAULT_WEIGHTS: dict[str, float] = {"objective": 1.0, "judge": 0.3, "bt": 0.3, "check": 0.5}
# `check` is the score in [0, 1] of a custom or rubric checker (docs/checkers.md): among the
# branches that pass (or fail) its pass line, a higher score ranks first. Built-in checkers
# give no such component (their score is the objective itself), so their rankings are unchanged.
POWERED_MIN_N = 10
POWERED_MAX_HALF_WIDTH = 0.30
NO_DISCORDANCE_PSI = 0.5  # the MDD's ψ when no discordant pair was seen yet


@dataclass(frozen=True)
class Ranked:
    branch_index: int
    rank: int  # 1 = best
    reward: float
    components: dict[str, float] = field(default_factory=dict)


def bt_strengths(
    n_items: int, preferences: Sequence[tuple[int, int, str]], prior: float = 0.1
) -> list[float]:
    """Strengths from (a, b, preferred ∈ {"a", "b", "tie"}); a tie counts one win each way
    (the usual half-win per side, on a doubled scale). With no preferences everyone is 1.
    With prior > 0 (the rank command's) the estimate always exists, also for groups of branches
    never compared both ways; prior 0 raises core.stats.IncomparableItemsError naming them."""
    comparisons: list[tuple[int, int]] = []
    for a, b, pref in preferences:
        if pref == "a":
            comparisons.append((a, b))
        elif pref == "b":
            comparisons.append((b, a))
        else:
            comparisons += [(a, b), (b, a)]
    if n_items == 0:
        return []
    if not comparisons:
        return [1.0] * n_items
    return bradley_terry(n_items, comparisons, prior=prior)


def bt_component(strength: float) -> float:
    """γ as a [0, 1] reward: its win probability against the average (γ = 1) branch."""
    return strength / (1.0 + strength)


def rank(
    components: Mapping[int, Mapping[str, float]], weights: Mapping[str, float] = DEFAULT_WEIGHTS
) -> list[Ranked]:
    """Order branches by Σ weight·component (missing components count 0); ties keep the
    lower branch index first, so the order is deterministic."""
    scored = []
    for index, comp in components.items():
        reward = math.fsum(w * float(comp.get(key, 0.0)) for key, w in weights.items())
        scored.append((reward, index, dict(comp)))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [
        Ranked(index, r + 1, round(reward, 12), comp)
        for r, (reward, index, comp) in enumerate(scored)
    ]


def paired_report(
    chosen: Sequence[bool], baseline: Sequence[bool], alpha: float = 0.05, power: float = 0.8
) -> dict[str, Any]:
    """Statistics for "chosen beats baseline" over n paired units (one per question).

    - `powered`: False when n < 10, or when the Wilson interval of the chosen accuracy is
      30 pp wide or more on either side: then read the ranking as a best-effort estimate.
    - `min_detectable_delta_pp`: core.stats.min_detectable_difference in percentage points,
      at the observed discordance (0.5 before any discordant pair); None when no difference
      is detectable at this n.
    - `mcnemar_p`: exact two-sided McNemar p-value on the discordant pairs (None when n = 0).
    """
    if len(chosen) != len(baseline):
        raise ValueError("chosen and baseline must be paired (same length)")
    n = len(chosen)
    w = sum(1 for c, b in zip(chosen, baseline, strict=True) if c and not b)
    l = sum(1 for c, b in zip(chosen, baseline, strict=True) if b and not c)  # noqa: E741
    correct = sum(chosen)
    lo, hi = wilson_interval(correct, n, alpha) if n else (0.0, 1.0)
    half = (hi - lo) / 2.0
    psi = (w + l) / n if n and (w + l) else NO_DISCORDANCE_PSI
    mdd = min_detectable_difference(n, psi, alpha, power) if n else math.inf
    return {
        "n": n,
        "powered": n >= POWERED_MIN_N and half < POWERED_MAX_HALF_WIDTH,
        "accuracy": correct / n if n else None,
        "baseline_accuracy": sum(baseline) / n if n else None,
        "wilson": [lo, hi],
        "wins": w,
        "losses": l,
        "min_detectable_delta_pp": None if math.isinf(mdd) else round(100.0 * mdd, 2),
        "mcnemar_p": mcnemar_exact(w, l) if n else None,
    }


# -- pairwise judging controls ------------------------------------------------------------------
VERBOSITY_LENGTH_RATIO = 1.5  # two answers "differ in length" when one is 1.5x the other or more
VERBOSITY_WARN_SHARE = 0.8  # warn when the longer answer wins this share of such verdicts...
VERBOSITY_WARN_MIN = 10  # ...over at least this many of them


@dataclass(frozen=True)
class OrderedVerdict:
    """One pairwise judge sample: which answer was shown first ("a" or "b") and which one the
    judge preferred, in the pair's own terms ("a", "b" or "tie"); None when the sample gave no
    verdict (capped, unparsable, a failed call)."""

    sample: int
    shown_first: str
    preferred: str | None


@dataclass(frozen=True)
class PairControl:
    """A pair's samples reconciled across the two orders.

    `preferences` feeds Bradley–Terry: per sample index asked in both orders, the preference
    twice when both orders agree, else one tie (one win each way: the same weight); a sample
    with a verdict in one order only is left out, since nothing controls its position."""

    preferences: tuple[str, ...]
    reconciled: tuple[str, ...]  # one verdict per sample index asked in both orders
    both_orders: int  # sample indices with a verdict in each order
    disagreements: int  # ... whose two orders preferred opposite answers: a tie
    one_order_only: int  # sample indices left out
    first_shown_wins: int  # decisive verdicts for whichever answer was shown first
    decisive: int  # decisive verdicts (either order)


def control_position(verdicts: Sequence[OrderedVerdict]) -> PairControl:
    """Position-bias control: a preference counts only when it survives swapping the order.
    A judge that always picks the first answer shown disagrees with itself on every pair, so
    it moves no strength."""
    by_sample: dict[int, dict[str, str]] = {}
    first_wins = decisive = 0
    for v in verdicts:
        if v.preferred is None:
            continue
        by_sample.setdefault(v.sample, {})[v.shown_first] = v.preferred
        if v.preferred in ("a", "b"):
            decisive += 1
            first_wins += int(v.preferred == v.shown_first)
    prefs: list[str] = []
    reconciled: list[str] = []
    flips = single = 0
    for orders in by_sample.values():
        if len(orders) < 2:
            single += 1
            continue
        ab, ba = orders["a"], orders["b"]
        verdict = ab if ab == ba else "tie"
        flips += int({ab, ba} == {"a", "b"})
        reconciled.append(verdict)
        prefs += [verdict, verdict] if verdict != "tie" else ["tie"]
    return PairControl(
        tuple(prefs), tuple(reconciled), len(reconciled), flips, single, first_wins, decisive
    )


def longer_preferred(preferred: str, len_a: int, len_b: int) -> bool | None:
    """Whether a decisive preference went to the longer of two answers whose lengths differ
    (by VERBOSITY_LENGTH_RATIO or more); None when it is a tie or the lengths are close."""
    if preferred not in ("a", "b"):
        return None
    short, long_ = sorted((max(len_a, 1), max(len_b, 1)))
    if long_ < VERBOSITY_LENGTH_RATIO * short:
        return None
    return (len_a > len_b) == (preferred == "a")


def pairwise_report(
    controls: Sequence[PairControl], longer: Sequence[bool | None]
) -> dict[str, Any]:
    """The rank report's bias figures: how often the two orders disagreed (position bias),
    how often the first-shown answer won a decisive verdict (0.5 for an unbiased judge), and
    how often the longer answer won a reconciled verdict between answers of different length
    (verbosity), with a warning when that share is high over enough verdicts."""
    both = sum(c.both_orders for c in controls)
    flips = sum(c.disagreements for c in controls)
    decisive = sum(c.decisive for c in controls)
    counted = [x for x in longer if x is not None]
    share = sum(counted) / len(counted) if counted else None
    return {
        "pairs_both_orders": both,
        "order_disagreements": flips,
        "order_disagreement_rate": flips / both if both else None,
        "one_order_only": sum(c.one_order_only for c in controls),
        "first_shown_win_rate": (
            sum(c.first_shown_wins for c in controls) / decisive if decisive else None
        ),
        "length_mismatched_verdicts": len(counted),
        "longer_preferred_share": share,
        "verbosity_warning": share is not None
        and len(counted) >= VERBOSITY_WARN_MIN
        and share >= VERBOSITY_WARN_SHARE,
    }
