"""Statistics for the gate, probation and rankings (DESIGN §6.6, §11). Pure Python, no I/O.

Everything here runs inside the trainer at decision time, so it depends on the standard
library only; scipy and statsmodels serve as oracles in the tests, never at runtime.

Contents:
- `wilson_interval`: a binomial confidence interval that behaves at 0 and n successes.
- `mcnemar_exact`: the exact (binomial) McNemar p-value on discordant counts.
- `min_detectable_difference`: what a paired comparison of size n can hope to see.
- `EProcessPair`: the two test martingales of the gate (improvement and harm) with a fixed
  or an adaptive predictable (KT) bet; `ville_threshold` turns α into the 1/α crossing level.
- `kt_wealth_unclipped`: the textbook KT bettor, kept to check the closed form in tests.
- `bradley_terry`: strengths from pairwise wins by Hunter's MM algorithm.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

STRATEGIES = ("fixed", "kt")

# Exact integer sums stay fast up to here; above it we switch to log-space sums, whose
# relative error (~1e-12) is irrelevant next to any decision threshold.
_EXACT_BINOM_MAX_N = 10_000


def _z(p: float) -> float:
    """Standard normal quantile; NormalDist keeps scipy out of the runtime."""
    return NormalDist().inv_cdf(p)


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


# --------------------------------------------------------------------------- intervals


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided Wilson score interval for a binomial proportion.

    Preferred over the Wald interval because it never collapses to a zero-width interval at
    0 or n successes, which is exactly where small per-task-type pools live. n = 0 carries no
    information, so the interval is the whole of [0, 1].
    """
    _check_alpha(alpha)
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    z = _z(1.0 - alpha / 2.0)
    z2 = z * z
    p = successes / n
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


# --------------------------------------------------------------------------- McNemar


def _binom_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exact for moderate n."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= _EXACT_BINOM_MAX_N:
        total, term = 0, 1  # term = comb(n, i), built incrementally to avoid n calls to comb
        for i in range(k + 1):
            total += term
            term = term * (n - i) // (i + 1)
        return total / (1 << n)  # int / int is correctly rounded in Python
    return _binom_half_cdf_log(k, n)


def _binom_half_cdf_log(k: int, n: int) -> float:
    """Log-space version of `_binom_half_cdf` for large n (log-sum-exp over lgamma terms)."""
    log_terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)
    ]
    top = max(log_terms)
    log_sum = top + math.log(math.fsum(math.exp(t - top) for t in log_terms))
    return min(1.0, math.exp(log_sum - n * math.log(2.0)))


def mcnemar_exact(w: int, l: int, alternative: str = "two-sided") -> float:  # noqa: E741 - W and L are the design's names
    """Exact McNemar p-value from the discordant counts W and L.

    Conditional on the number of discordant pairs, W ~ Binomial(W + L, 1/2) under "no
    difference", so the test is a sign test on discordant units; ties carry no evidence.
    "two-sided" doubles the smaller tail (capped at 1), matching statsmodels' `mcnemar(exact=
    True)`; "greater" tests W > L (candidate better), "less" tests W < L.
    """
    if w < 0 or l < 0:
        raise ValueError(f"counts must be >= 0, got w={w}, l={l}")
    n = w + l
    if alternative == "greater":
        # P(X >= w) = P(X <= n - w) by symmetry; avoids 1 - cdf cancelling away small p-values
        return _binom_half_cdf(n - w, n)
    if alternative == "less":
        return _binom_half_cdf(w, n)
    if alternative == "two-sided":
        return min(1.0, 2.0 * _binom_half_cdf(min(w, l), n))
    raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")


def min_detectable_difference(
    n: int, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest paired difference δ = (W − L)/n a two-sided McNemar test detects at this n.

    Uses the usual normal approximation to McNemar's power (Connor 1987):
        n = (z_{1−α/2}·√ψ + z_{power}·√(ψ − δ²))² / δ²,   ψ = discordance rate,
    solved for δ (a quadratic; the root on the side of z_{power}'s sign). It ignores the far
    rejection tail and is optimistic at small n, so read it as "at best". Returns `math.inf`
    when no δ ≤ ψ reaches the requested power: then the comparison is simply not powered.
    """
    _check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must be in (0, 1], got {discordance}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    a = _z(1.0 - alpha / 2.0) * math.sqrt(discordance)
    b = _z(power)
    disc = discordance * (n + b * b) - a * a
    if disc < 0.0:
        return math.inf
    delta = (a * math.sqrt(n) + b * math.sqrt(disc)) / (n + b * b)
    return delta if delta <= discordance else math.inf


# --------------------------------------------------------------------------- e-processes


def ville_threshold(alpha: float) -> float:
    """Crossing level for a test martingale started at 1: P(sup_t E_t ≥ 1/α) ≤ α (Ville)."""
    _check_alpha(alpha)
    return 1.0 / alpha


def _check_outcome(g: int) -> None:
    if g not in (-1, 0, 1):
        raise ValueError(f"paired outcome must be -1, 0 or +1, got {g!r}")


def _clip(x: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, x))


class EProcessPair:
    """The gate's two wealth processes on paired outcomes g ∈ {+1 (W), −1 (L), 0 (tie)}.

    improvement: E_win  = Π (1 + λ_t·g_t)      harm: E_harm = Π (1 − μ_t·g_t)

    Both bets are chosen before g_t is seen (predictable), so under "no difference"
    (P(W) = P(L) given the past) every factor has conditional mean 1 and both are test
    martingales; Ville's inequality then lets the gate look after every unit.

    Strategies:
    - "fixed": λ_t = μ_t = lambda_dir.
    - "kt": plug-in from past discordant outcomes, p̂ = (W + ½)/(W + L + 1) (the
      Krichevsky–Trofimov estimate); λ_t = clip(2p̂ − 1, 0, λ_max) and
      μ_t = clip(1 − 2p̂, 0, λ_max). Clipping at 0 keeps each process betting only in its own
      direction; clipping at λ_max bounds the loss from one unlucky unit.
    """

    def __init__(
        self, strategy: str = "fixed", lambda_dir: float = 0.3, lambda_max: float = 0.5
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        for name, value in (("lambda_dir", lambda_dir), ("lambda_max", lambda_max)):
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        self.strategy = strategy
        self.lambda_dir = lambda_dir
        self.lambda_max = lambda_max
        self.wins = 0
        self.losses = 0
        self.e_win = 1.0
        self.e_harm = 1.0

    def bets(self) -> tuple[float, float]:
        """(λ, μ) for the next outcome; depends only on outcomes already seen."""
        if self.strategy == "fixed":
            return (self.lambda_dir, self.lambda_dir)
        p_hat = (self.wins + 0.5) / (self.wins + self.losses + 1.0)
        lam = _clip(2.0 * p_hat - 1.0, 0.0, self.lambda_max)
        mu = _clip(1.0 - 2.0 * p_hat, 0.0, self.lambda_max)
        return (lam, mu)

    def update(self, g: int) -> tuple[float, float]:
        """Fold in one outcome and return the new (e_win, e_harm)."""
        _check_outcome(g)
        lam, mu = self.bets()
        self.e_win *= 1.0 + lam * g
        self.e_harm *= 1.0 - mu * g
        if g == 1:
            self.wins += 1
        elif g == -1:
            self.losses += 1
        return (self.e_win, self.e_harm)

    def update_many(self, outcomes: Iterable[int]) -> tuple[float, float]:
        for g in outcomes:
            self.update(g)
        return (self.e_win, self.e_harm)


def kt_wealth_unclipped(outcomes: Iterable[int]) -> float:
    """Wealth of the unclipped KT bettor λ_t = 2p̂ − 1 on the improvement side.

    Not used by the gate (it may bet against its own direction); kept because its wealth has
    the closed form 2^n·B(W + ½, L + ½)/B(½, ½) with n = W + L, independent of order, which
    pins down the KT plug-in the gate's "kt" strategy is built on.
    """
    wins = losses = 0
    wealth = 1.0
    for g in outcomes:
        _check_outcome(g)
        p_hat = (wins + 0.5) / (wins + losses + 1.0)
        wealth *= 1.0 + (2.0 * p_hat - 1.0) * g
        wins += g == 1
        losses += g == -1
    return wealth


# --------------------------------------------------------------------------- Bradley-Terry


def bradley_terry(
    n_items: int,
    comparisons: Sequence[tuple[int, int]],
    iters: int = 10_000,
    tol: float = 1e-10,
    prior: float = 0.1,
) -> list[float]:
    """Bradley–Terry strengths γ (P(i beats j) = γ_i/(γ_i + γ_j)) by MM (Hunter 2004).

    comparisons: (winner, loser) index pairs. The result is normalised to geometric mean 1.

    The plain MLE does not exist when an item never wins (its γ runs to 0) or the comparison
    graph is not strongly connected. `prior` adds, for every item, `prior` virtual wins and
    `prior` virtual losses against a fixed reference of strength 1: a MAP estimate that always
    exists, leaves items with no comparisons at the reference, and fades as real data grows.
    `prior=0` gives the plain MLE and raises when an item has no wins or no losses (a
    necessary condition for the MLE; strong connectivity is the caller's business).
    """
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}")
    if prior < 0.0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    wins, pair_counts = _bt_counts(n_items, comparisons)
    if prior == 0.0:
        _require_mle_exists(n_items, comparisons)
    gamma = [1.0] * n_items
    for _ in range(iters):
        new = _bt_mm_step(gamma, wins, pair_counts, prior)
        if prior == 0.0:
            new = _normalise_geo(new)  # no anchor: fix the free scale each step
        delta = max(abs(math.log(a / b)) for a, b in zip(new, gamma, strict=True))
        gamma = new
        if delta < tol:
            break
    return _normalise_geo(gamma)


def _bt_counts(
    n_items: int, comparisons: Sequence[tuple[int, int]]
) -> tuple[list[int], dict[tuple[int, int], int]]:
    wins = [0] * n_items
    pair_counts: dict[tuple[int, int], int] = {}
    for winner, loser in comparisons:
        if not (0 <= winner < n_items and 0 <= loser < n_items) or winner == loser:
            raise ValueError(f"bad comparison ({winner}, {loser}) for {n_items} items")
        wins[winner] += 1
        key = (min(winner, loser), max(winner, loser))
        pair_counts[key] = pair_counts.get(key, 0) + 1
    return wins, pair_counts


def _require_mle_exists(n_items: int, comparisons: Sequence[tuple[int, int]]) -> None:
    won = {w for w, _ in comparisons}
    lost = {lo for _, lo in comparisons}
    for i in range(n_items):
        if i not in won or i not in lost:
            raise ValueError(
                f"item {i} has no wins or no losses: the MLE does not exist; use prior > 0"
            )


def _bt_mm_step(
    gamma: list[float],
    wins: list[int],
    pair_counts: dict[tuple[int, int], int],
    prior: float,
) -> list[float]:
    """One MM update: γ_i ← (W_i + a) / (Σ_j n_ij/(γ_i + γ_j) + 2a/(γ_i + 1))."""
    denom = [2.0 * prior / (g + 1.0) for g in gamma]
    for (i, j), n_ij in pair_counts.items():
        share = n_ij / (gamma[i] + gamma[j])
        denom[i] += share
        denom[j] += share
    return [(wins[i] + prior) / denom[i] for i in range(len(gamma))]


def _normalise_geo(gamma: list[float]) -> list[float]:
    log_mean = math.fsum(math.log(g) for g in gamma) / len(gamma)
    scale = math.exp(log_mean)
    return [g / scale for g in gamma]


# --------------------------------------------------------------------------- mixture e-values

# The gate's default bet: a two-point mixture of fixed bets. The cautious bet (0.35) carries
# moderate effects over long ladders; the bold one (0.9) lets a short ladder of clean wins
# (no losses) reach a decision. Chosen with exact power computations in bench/gate_validity.py.
MIXTURE_BETS: tuple[tuple[float, float], ...] = ((0.35, 0.85), (0.9, 0.15))  # (λ, weight)


def mixture_e(wins: int, losses: int,
              bets: Sequence[tuple[float, float]] = MIXTURE_BETS) -> float:
    """E = Σ_k w_k (1 + λ_k)^W (1 − λ_k)^L: a mixture of test martingales on ±1 outcomes.

    Under "no improvement" (P(W) ≤ P(L) given the past) each component is a test
    supermartingale, so their weighted average is one too. It depends on the counts only, not
    on their order, which is what makes `calibrated_threshold` an exact computation. The harm
    side is `mixture_e(losses, wins)`.
    """
    total = math.fsum(w for _, w in bets)
    return math.fsum(w * math.exp(wins * math.log1p(lam) + losses * math.log1p(-lam))
                     for lam, w in bets) / total


def _crossing_probability(horizon: int, crosses) -> float:
    """P(some prefix of `horizon` fair ±1 steps reaches a (W, L) where `crosses(W, L)`)."""
    alive = {(0, 0): 1.0}
    hit = 0.0
    for _ in range(horizon):
        nxt: dict[tuple[int, int], float] = {}
        for (wins, losses), p in alive.items():
            for state in ((wins + 1, losses), (wins, losses + 1)):
                if crosses(*state):
                    hit += p / 2
                else:
                    nxt[state] = nxt.get(state, 0.0) + p / 2
        alive = nxt
    return hit


CALIBRATION_MAX_HORIZON = 400


@functools.lru_cache(maxsize=256)
def calibrated_threshold(horizon: int, alpha: float,
                         bets: tuple[tuple[float, float], ...] = MIXTURE_BETS) -> float:
    """The smallest level c ≤ 1/α such that, under "no improvement", the probability that
    `mixture_e` ever reaches c within `horizon` observations is ≤ α, computed exactly.

    Why it is exact and valid: W and L only move on discordant observations; under the null
    each discordant one is a W with probability ≤ ½ whatever happened before, and the crossing
    event is monotone in W, so the worst case is a fair coin on every one of the `horizon`
    observations (ties only shorten the walk). Ville's inequality gives 1/α for an unbounded
    horizon; a known finite horizon allows a lower, still exact, level. Horizons above
    CALIBRATION_MAX_HORIZON (slow to compute) use Ville's 1/α.
    """
    _check_alpha(alpha)
    ville = 1.0 / alpha
    if horizon < 1 or horizon > CALIBRATION_MAX_HORIZON:
        return ville
    levels = sorted({e for wins in range(horizon + 1) for losses in range(horizon + 1 - wins)
                     if 1.0 < (e := mixture_e(wins, losses, bets)) <= ville} | {ville})
    lo, hi, best = 0, len(levels) - 1, ville
    while lo <= hi:
        mid = (lo + hi) // 2
        level = levels[mid] * (1 - 1e-12)

        def crosses(wins: int, losses: int, level: float = level) -> bool:
            return mixture_e(wins, losses, bets) >= level

        if _crossing_probability(horizon, crosses) <= alpha:
            best, hi = levels[mid], mid - 1
        else:
            lo = mid + 1
    return best
