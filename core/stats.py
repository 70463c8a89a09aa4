"""Statistics for the gate, probation and rankings (docs/architecture.md#the-gate). Pure Python, no
I/O.

Everything here runs inside the trainer at decision time, so it depends on the standard
library only; scipy and statsmodels serve as oracles in the tests, never at runtime.

Contents:
- `wilson_interval`: a binomial confidence interval that behaves at 0 and n successes.
- `mcnemar_exact`: the exact (binomial) McNemar p-value on discordant counts.
- `min_detectable_difference`: what a paired comparison of size n can hope to see.
- `EProcessPair`: the two test martingales of the gate (improvement and harm) with a fixed
  or an adaptive predictable (KT) bet; `ville_threshold` turns α into the 1/α crossing level.
- `kt_wealth_unclipped`: the textbook KT bettor, kept to check the closed form in tests.
- `bradley_terry`: MAP strengths from pairwise wins by damped Newton steps (warns when not
  converged); with prior 0, the MLE, refused (`IncomparableItemsError`) where it does not
  exist (`win_graph_components`).
- `exact_mcnemar_power`: exact power of the exact McNemar test (the MDD solves it for δ).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist

STRATEGIES = ("fixed", "kt")

# Exact integer sums stay fast up to here; above it we switch to log-space sums, whose
# relative error (~1e-12) is irrelevant next to any decision threshold.
_EXACT_BINOM_MAX_N = 10_000


def _z_upper(tail: float) -> float:
    """z with P(Z > z) = tail, computed from the tail itself (NormalDist keeps scipy out of the
    runtime).

    `inv_cdf(1 - tail)` rounds 1 - tail to 1.0 once tail < 1.1e-16 (and loses digits well before
    that); NormalDist's quantile (Wichura's AS241) is accurate in the far lower tail, so the
    upper quantile is taken as -inv_cdf(tail) by symmetry.
    """
    if not 0.0 < tail < 1.0:
        raise ValueError(f"tail probability must be in (0, 1), got {tail}")
    return -NormalDist().inv_cdf(tail)


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
    z = _z_upper(alpha / 2.0)
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


# The exact power below sums over the number D of discordant units only where P(D = d) is at
# least this (D's law is unimodal, so that is one window of d); the rest of the sum is below
# n·_NEGLIGIBLE_PMF, far under any power anyone asks for.
_NEGLIGIBLE_PMF = 1e-20
# The MDD asks for this much more power than requested, so that rounding in the sums (about
# 1e-13 here, in scipy's oracle too) can never leave the returned δ just short of `power`.
_POWER_SLACK = 1e-10


def min_detectable_difference(
    n: int, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest paired difference δ = P(W) − P(L) a two-sided exact McNemar test at level α
    detects with the given power over n paired units, ψ = P(W) + P(L) (discordance rate).

    Exact for every n: solved by bisection on `exact_mcnemar_power`, the power of the very
    test `mcnemar_exact` runs (power grows with δ). The result is conservative by at most
    _POWER_SLACK in power. At very small n the exact test cannot reject at all (n ≤ 5 at
    α = 0.05); then, and whenever no δ ≤ ψ reaches the requested power, the answer is
    `math.inf`: the comparison is simply not powered. Memoised: the bisection re-uses one
    table of D's law and critical values per (n, ψ, α).
    """
    _check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must be in (0, 1], got {discordance}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return _mdd_exact(n, discordance, alpha, power)


@functools.lru_cache(maxsize=1024)
def _mdd_exact(n: int, psi: float, alpha: float, power: float) -> float:
    target = min(1.0, power + _POWER_SLACK)
    if exact_mcnemar_power(n, psi, psi, alpha) < target:
        return math.inf
    if exact_mcnemar_power(n, psi, 0.0, alpha) >= target:
        return 0.0
    lo, hi = 0.0, psi
    while hi - lo > 1e-13 * psi:
        mid = (lo + hi) / 2.0
        if exact_mcnemar_power(n, psi, mid, alpha) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def exact_mcnemar_power(n: int, discordance: float, delta: float, alpha: float) -> float:
    """Exact power of the two-sided `mcnemar_exact` test at level α over n paired units with
    P(W) = (ψ + δ)/2 and P(L) = (ψ − δ)/2: Σ_d P(D = d)·P(reject | d), D ~ Binomial(n, ψ).

    Given d discordant units the test rejects when min(W, L) ≤ c_d (`_critical_values`), and
    W ~ Binomial(d, q) with q = P(W | discordant). Both tails are carried from d to d + 1 by
    P(S_{d+1} ≤ c) = P(S_d ≤ c) − q·P(S_d = c), so one evaluation costs O(1) per d of the
    window where P(D = d) matters (about 20·√(nψ(1 − ψ)) values of d).
    """
    if not 0.0 < discordance <= 1.0 or not 0.0 <= delta <= discordance:
        raise ValueError(
            f"need 0 < discordance <= 1 and 0 <= delta <= discordance, got {discordance}, {delta}"
        )
    law = _discordant_law(n, discordance, alpha)
    q = (discordance + delta) / (2.0 * discordance)  # P(W | discordant)
    rejects = _reject_given_d(law, q)
    return min(1.0, max(0.0, math.fsum(w * r for w, r in zip(law.weights, rejects, strict=True))))


def _reject_given_d(law: _DiscordantLaw, q: float) -> list[float]:
    """P(min(W, L) ≤ c_d | D = d) over the window, W ~ Binomial(d, q): the lower tail
    P(S_d ≤ c_d) plus the upper tail P(S_d ≥ d − c_d) (disjoint: c_d < d/2)."""
    if q >= 1.0:  # W = d always: rejected whenever the test can reject at all
        return [1.0 if c >= 0 else 0.0 for c in law.critical]
    log_q, log_r = math.log(q), math.log1p(-q)
    d, c = law.first, law.critical[0]
    lower = _binom_tail_le(c, d, log_q, log_r)
    upper = 1.0 - _binom_tail_le(d - c - 1, d, log_q, log_r)
    out = [lower + upper]
    for c_next in law.critical[1:]:
        lower -= q * _binom_pmf(c, d, log_q, log_r)  # now P(S_{d+1} <= c)
        upper += q * _binom_pmf(d - c - 1, d, log_q, log_r)  # now P(S_{d+1} >= d - c)
        d += 1
        if c_next > c:  # the lower threshold moves up, the upper one stays at d - c_next
            lower += _binom_pmf(c_next, d, log_q, log_r)
        else:  # the upper threshold moves up with d
            upper -= _binom_pmf(d - c - 1, d, log_q, log_r)
        c = c_next
        out.append(lower + upper)
    return out


@dataclass(frozen=True)
class _DiscordantLaw:
    """D ~ Binomial(n, ψ) on the window of d where it matters, with the test's critical values."""

    first: int  # the smallest d of the window
    weights: tuple[float, ...]  # P(D = first + k)
    critical: tuple[int, ...]  # c_{first + k}: reject when min(W, L) <= c; -1: never


@functools.lru_cache(maxsize=256)
def _discordant_law(n: int, psi: float, alpha: float) -> _DiscordantLaw:
    if psi >= 1.0:
        return _DiscordantLaw(n, (1.0,), _critical_values(n, n, alpha))
    log_p, log_r = math.log(psi), math.log1p(-psi)
    floor = math.log(_NEGLIGIBLE_PMF)
    lo = hi = min(n, int((n + 1) * psi))  # the mode
    while lo > 0 and _binom_log_pmf(lo - 1, n, log_p, log_r) >= floor:
        lo -= 1
    while hi < n and _binom_log_pmf(hi + 1, n, log_p, log_r) >= floor:
        hi += 1
    weights = tuple(math.exp(_binom_log_pmf(d, n, log_p, log_r)) for d in range(lo, hi + 1))
    return _DiscordantLaw(lo, weights, _critical_values(lo, hi, alpha))


def _critical_values(d_lo: int, d_hi: int, alpha: float) -> tuple[int, ...]:
    """c_d for d = d_lo..d_hi: the largest c with min(1, 2·P(S_d ≤ c)) ≤ α, S_d ~ Bin(d, ½),
    or -1: exactly `mcnemar_exact`'s rule (its exact integer sums up to _EXACT_BINOM_MAX_N,
    floats above, as there). P(S_d ≤ c) falls as d grows and P(S_{d+1} ≤ c + 2) ≥
    P(S_d ≤ c + 1), so c_{d+1} is c_d or c_d + 1: one comparison per d."""
    exact_hi = min(d_hi, _EXACT_BINOM_MAX_N)
    values = _critical_exact(d_lo, exact_hi, alpha) if d_lo <= exact_hi else []
    if d_hi > _EXACT_BINOM_MAX_N:
        values += _critical_float(max(d_lo, _EXACT_BINOM_MAX_N + 1), d_hi, alpha)
    return tuple(values)


def _rejects(count: int, d: int, alpha: float) -> bool:
    """Whether Σ_{i ≤ c} C(d, i) = count makes `mcnemar_exact` reject (same float steps)."""
    return min(1.0, 2.0 * (count / (1 << d))) <= alpha


def _critical_exact(d_lo: int, d_hi: int, alpha: float) -> list[int]:
    # cum = Σ_{i ≤ c} C(d, i), top = C(d, c) (0 for c = -1), nxt = C(d, c + 1)
    d, c, cum, top, nxt = d_lo, -1, 0, 0, 1
    while c + 1 < d and _rejects(cum + nxt, d, alpha):
        c, cum, top = c + 1, cum + nxt, nxt
        nxt = top * (d - c) // (c + 1)
    values = [c]
    for d in range(d_lo + 1, d_hi + 1):  # Pascal's rule carries the sums from d - 1 to d
        cum, nxt, top = 2 * cum - top, nxt + top, top * d // (d - c)
        if c + 1 < d and _rejects(cum + nxt, d, alpha):
            c, cum, top = c + 1, cum + nxt, nxt
            nxt = top * (d - c) // (c + 1)
        values.append(c)
    return values


def _critical_float(d_lo: int, d_hi: int, alpha: float) -> list[int]:
    half = math.log(0.5)
    c, lower = -1, 0.0  # lower = P(S_d <= c)
    while lower + _binom_pmf(c + 1, d_lo, half, half) <= alpha / 2.0:
        c, lower = c + 1, lower + _binom_pmf(c + 1, d_lo, half, half)
    values = [c]
    for d in range(d_lo + 1, d_hi + 1):
        lower -= 0.5 * _binom_pmf(c, d - 1, half, half)
        step = _binom_pmf(c + 1, d, half, half)
        if lower + step <= alpha / 2.0:
            c, lower = c + 1, lower + step
        values.append(c)
    return values


def _binom_log_pmf(k: int, d: int, log_q: float, log_r: float) -> float:
    """log P(S = k), S ~ Binomial(d, q), from log q and log(1 − q) (both finite)."""
    if not 0 <= k <= d:
        return -math.inf
    return (
        math.lgamma(d + 1)
        - math.lgamma(k + 1)
        - math.lgamma(d - k + 1)
        + k * log_q
        + (d - k) * log_r
    )


def _binom_pmf(k: int, d: int, log_q: float, log_r: float) -> float:
    return math.exp(_binom_log_pmf(k, d, log_q, log_r))


def _binom_tail_le(k: int, d: int, log_q: float, log_r: float) -> float:
    """P(S ≤ k), S ~ Binomial(d, q), summing from k away from the mode (where the terms shrink)
    until they no longer count; above the mode as 1 − P(S > k)."""
    if k < 0:
        return 0.0
    if k >= d:
        return 1.0
    below_mode = k < int((d + 1) * math.exp(log_q))
    total = 0.0
    for i in range(k, -1, -1) if below_mode else range(k + 1, d + 1):
        term = _binom_pmf(i, d, log_q, log_r)
        if term == 0.0 or term < 1e-18 * total:
            break
        total += term
    return total if below_mode else 1.0 - total


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


class ConvergenceWarning(RuntimeWarning):
    """An iterative estimate stopped at its iteration cap before reaching its tolerance."""


class IncomparableItemsError(ValueError):
    """The plain Bradley–Terry MLE (`bradley_terry(prior=0)`) does not exist: the win graph is
    not strongly connected. `components` are its strongly connected components in the order
    of `win_graph_components` (no item of a later group ever beat one of an earlier group), so
    strengths across groups are not estimable; within a group they may be."""

    def __init__(self, components: tuple[tuple[int, ...], ...]) -> None:
        self.components = components
        shown = " > ".join("{" + ", ".join(map(str, c)) + "}" for c in components[:8])
        more = f" and {len(components) - 8} more" if len(components) > 8 else ""
        super().__init__(
            f"the Bradley-Terry MLE does not exist: the items fall into {len(components)} groups "
            f"that are not comparable both ways ({shown}{more}; no item of a later group ever "
            "beat one of an earlier group); use prior > 0"
        )


def bradley_terry(
    n_items: int,
    comparisons: Sequence[tuple[int, int]],
    iters: int = 200,
    tol: float = 1e-10,
    prior: float = 0.1,
) -> list[float]:
    """Bradley–Terry strengths γ (P(i beats j) = γ_i/(γ_i + γ_j)), maximum a posteriori.

    comparisons: (winner, loser) index pairs. The result is normalised to geometric mean 1.

    The plain MLE does not exist when an item never wins (its γ runs to 0) or the comparison
    graph is not strongly connected. `prior` adds, for every item, `prior` virtual wins and
    `prior` virtual losses against a fixed reference of strength 1: a MAP estimate that always
    exists, leaves items with no comparisons at the reference, and fades as real data grows.
    `prior=0` gives the plain MLE and raises IncomparableItemsError, naming the groups, when
    the win graph is not strongly connected (an item with no wins or no losses is the
    simplest case): then the MLE does not exist and any iterate would be arbitrary.

    Solved by damped Newton steps on θ = log γ: the log-posterior is strictly concave (with
    prior > 0; with prior = 0 after pinning θ_0, given a strongly connected graph), so the
    steps converge quadratically. Hunter's MM iteration, used before, contracts at a rate
    set by the data and, with the prior, often stopped at its cap far from the optimum.
    Convergence means max |∂ℓ/∂θ_i| < tol·(1 + comparisons of i); if `iters` steps do not get
    there a ConvergenceWarning says so (the last iterate is returned).
    """
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}")
    if prior < 0.0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    wins, pair_counts = _bt_counts(n_items, comparisons)
    if prior == 0.0:
        _require_mle_exists(n_items, comparisons)
    theta = [0.0] * n_items
    free = list(range(n_items)) if prior > 0.0 else list(range(1, n_items))
    scale = [1.0 + 2.0 * prior] * n_items
    for (i, j), n_ij in pair_counts.items():
        scale[i] += n_ij
        scale[j] += n_ij
    value = _bt_loglik(theta, wins, pair_counts, prior)
    converged = not free
    for _ in range(iters):
        grad, hess = _bt_grad_hess(theta, wins, pair_counts, prior)
        if max(abs(grad[i]) / scale[i] for i in free) < tol:
            converged = True
            break
        step = _solve([[-hess[i][j] for j in free] for i in free], [grad[i] for i in free])
        t = 1.0
        while True:  # backtracking: the Newton step is an ascent direction
            trial = theta[:]
            for k, i in enumerate(free):
                trial[i] += t * step[k]
            trial_value = _bt_loglik(trial, wins, pair_counts, prior)
            if trial_value >= value - 1e-12 * abs(value) or t < 1e-10:
                break
            t /= 2.0
        theta, value = trial, trial_value
    if not converged:
        warnings.warn(
            f"bradley_terry: not converged after {iters} Newton steps "
            f"({n_items} items, {len(comparisons)} comparisons, prior {prior})",
            ConvergenceWarning,
            stacklevel=2,
        )
    return _normalise_geo([math.exp(t) for t in theta])


def _log_sum_exp2(x: float, y: float) -> float:
    top = max(x, y)
    return top + math.log(math.exp(x - top) + math.exp(y - top))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _bt_loglik(
    theta: list[float], wins: list[int], pair_counts: dict[tuple[int, int], int], prior: float
) -> float:
    """Σ_i (W_i + a)·θ_i − Σ_{i<j} n_ij·log(e^θi + e^θj) − 2a·Σ_i log(e^θi + 1)."""
    total = math.fsum((wins[i] + prior) * t for i, t in enumerate(theta))
    total -= math.fsum(n * _log_sum_exp2(theta[i], theta[j]) for (i, j), n in pair_counts.items())
    if prior > 0.0:
        total -= 2.0 * prior * math.fsum(_log_sum_exp2(t, 0.0) for t in theta)
    return total


def _bt_grad_hess(
    theta: list[float], wins: list[int], pair_counts: dict[tuple[int, int], int], prior: float
) -> tuple[list[float], list[list[float]]]:
    n = len(theta)
    grad = [wins[i] + prior for i in range(n)]
    hess = [[0.0] * n for _ in range(n)]
    for (i, j), n_ij in pair_counts.items():
        p = _sigmoid(theta[i] - theta[j])  # P(i beats j)
        grad[i] -= n_ij * p
        grad[j] -= n_ij * (1.0 - p)
        w = n_ij * p * (1.0 - p)
        hess[i][i] -= w
        hess[j][j] -= w
        hess[i][j] += w
        hess[j][i] += w
    if prior > 0.0:
        for i in range(n):
            s = _sigmoid(theta[i])
            grad[i] -= 2.0 * prior * s
            hess[i][i] -= 2.0 * prior * s * (1.0 - s)
    return grad, hess


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the matrices here are small and SPD)."""
    n = len(rhs)
    a = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-300:
            raise ValueError("bradley_terry: singular system (comparison graph not connected?)")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            if f:
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - math.fsum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


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
    components = win_graph_components(n_items, comparisons)
    if len(components) > 1:
        raise IncomparableItemsError(tuple(components))


def win_graph_components(
    n_items: int, comparisons: Sequence[tuple[int, int]]
) -> list[tuple[int, ...]]:
    """Strongly connected components of the win graph (an edge winner → loser per comparison),
    each sorted, in a topological order: no item of a later component ever beat one of an
    earlier component. One component means the Bradley–Terry MLE exists (Zermelo 1929; Ford
    1957). Tarjan's algorithm, iterative, so deep graphs do not hit Python's recursion limit;
    it finds components sinks first, hence the reversal at the end."""
    beats: list[set[int]] = [set() for _ in range(n_items)]
    for winner, loser in comparisons:
        beats[winner].add(loser)
    succ = [sorted(b) for b in beats]
    index, low, on_stack = [-1] * n_items, [0] * n_items, [False] * n_items
    stack: list[int] = []
    work: list[tuple[int, int]] = []  # the DFS path: (node, next successor to look at)
    components: list[tuple[int, ...]] = []
    order = itertools.count()

    def enter(v: int) -> None:
        index[v] = low[v] = next(order)
        stack.append(v)
        on_stack[v] = True
        work.append((v, 0))

    for root in range(n_items):
        if index[root] >= 0:
            continue
        enter(root)
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if index[w] < 0:
                    enter(w)
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                components.append(_pop_component(stack, on_stack, v))
    components.reverse()
    return components


def _pop_component(stack: list[int], on_stack: list[bool], root: int) -> tuple[int, ...]:
    members = []
    while True:
        w = stack.pop()
        on_stack[w] = False
        members.append(w)
        if w == root:
            return tuple(sorted(members))


def _normalise_geo(gamma: list[float]) -> list[float]:
    log_mean = math.fsum(math.log(g) for g in gamma) / len(gamma)
    scale = math.exp(log_mean)
    return [g / scale for g in gamma]


# --------------------------------------------------------------------------- mixture e-values

# The gate's default bet: an equal mixture of three fixed bets. The cautious one (0.35)
# carries moderate effects over long ladders; the bold one (0.95) lets a short ladder of clean
# wins reach a decision (6 straight wins cross 20, where (0.35, 0.85) / (0.9, 0.15), the
# mixture before, needed 7 and families of 3 won by one unit each 18 instead of 14). What it
# costs and buys: bench/gate_validity.py (power at n_max 200, d 0.3, p 0.7: 0.77, was 0.83)
# and bench/acceptance.py (final test at 72 units, default setting: 0.722 with it, 0.570
# without, the rest of the gate as it is).
MIXTURE_BETS: tuple[tuple[float, float], ...] = (
    (0.35, 1 / 3),
    (0.65, 1 / 3),
    (0.95, 1 / 3),
)  # (λ, weight)


def mixture_e(wins: int, losses: int, bets: Sequence[tuple[float, float]] = MIXTURE_BETS) -> float:
    """E = Σ_k w_k (1 + λ_k)^W (1 − λ_k)^L: a mixture of test martingales on ±1 outcomes.

    Under "no improvement" (P(W) ≤ P(L) given the past) each component is a test
    supermartingale, so their weighted average is one too. It depends on the counts only, not
    on their order, which is what makes `calibrated_threshold` an exact computation. The harm
    side is `mixture_e(losses, wins)`.
    """
    total = math.fsum(w for _, w in bets)
    return (
        math.fsum(
            w * math.exp(wins * math.log1p(lam) + losses * math.log1p(-lam)) for lam, w in bets
        )
        / total
    )


def _fair_walk(horizon: int, first_crossing: Sequence[int]) -> Iterator[tuple[list[float], float]]:
    """After each of `horizon` fair ±1 steps: (alive, hit), `alive[w]` the probability of
    standing at (w, n - w) without having reached a (W, L) with W >= first_crossing[L], `hit`
    the probability of having reached one.

    The crossing set of a level is an up-set in W and a down-set in L (`mixture_e` grows with
    W and shrinks with L), so one threshold per L describes it.
    """
    alive = [1.0]
    hit = 0.0
    for n in range(horizon):
        nxt = [0.0] * (n + 2)
        for wins, p in enumerate(alive):
            if not p:
                continue
            losses = n - wins
            half = p / 2
            if wins + 1 >= first_crossing[losses]:
                hit += half
            else:
                nxt[wins + 1] += half
            if wins >= first_crossing[losses + 1]:
                hit += half
            else:
                nxt[wins] += half
        alive = nxt
        yield alive, hit


def _crossing_probability(horizon: int, first_crossing: Sequence[int]) -> float:
    """P(some prefix of `horizon` fair ±1 steps reaches a (W, L) with W >= first_crossing[L])."""
    hits = [hit for _, hit in _fair_walk(horizon, first_crossing)]
    return hits[-1] if hits else 0.0


@functools.lru_cache(maxsize=4)
def _e_values(size: int, bets: tuple[tuple[float, float], ...]) -> tuple[tuple[float, ...], ...]:
    """`mixture_e(W, L, bets)` for every W + L <= size, as rows by W: computed once, so each
    level tried below compares numbers instead of recomputing the mixture."""
    return tuple(
        tuple(mixture_e(wins, losses, bets) for losses in range(size + 1 - wins))
        for wins in range(size + 1)
    )


def _first_crossings(grid: tuple[tuple[float, ...], ...], horizon: int, level: float) -> list[int]:
    """For each L in 0..horizon, the fewest W with mixture_e(W, L) >= level (horizon + 1:
    none within the horizon). Non-decreasing in L, so one pointer walks it."""
    first: list[int] = []
    wins = 0
    for losses in range(horizon + 1):
        while wins <= horizon - losses and grid[wins][losses] < level:
            wins += 1
        first.append(wins if wins <= horizon - losses else horizon + 1)
    return first


CALIBRATION_MAX_HORIZON = 400


def final_look_levels(
    level: float, alpha: float, size: int, bets: tuple[tuple[float, float], ...] = MIXTURE_BETS
) -> tuple[int, ...]:
    """For each D in 0..size, the fewest wins W a walk of D discordant outcomes must end on
    for a final look to accept, jointly with the sequential accept at `level` (D + 1: none).

    The sequential gate accepts once `mixture_e(W, L)` reaches `level`. A final look at the
    end of a test that used its whole ladder also accepts when W ≥ c(D), D = W + L. c(D) is
    the smallest count with P(the walk crosses `level` within D steps, or ends with W ≥ c(D))
    ≤ α for D fair ±1 steps, computed exactly by a dynamic programme over the paths that have
    not crossed. Why it is valid: when families are independent of each other, given which
    of them are discordant (D of them) their signs are independent, each a W with probability
    ≤ ½ under "no improvement"; both events grow with W, so the fair coin is the worst case
    and P(accept | D) ≤ α for every D. It is McNemar's exact conditioning, paid for by the
    mass the sequential accepts already spent: at the level of a 48-family ladder, c(D) is
    the one-sided exact McNemar level at α, or one win more, for every D ≤ 43 (two at D = 44;
    at 200 families the gap reaches 7 near D = 190, where the threshold itself accepts most).
    """
    return _final_look(level, alpha, size, bets)[0]


def final_look_chances(
    level: float, alpha: float, size: int, bets: tuple[tuple[float, float], ...] = MIXTURE_BETS
) -> tuple[float, ...]:
    """For each D in 0..size, the probability γ(D) with which a final look accepts a walk of D
    discordant outcomes that ends one win short of `final_look_levels`' c(D), W = c(D) − 1,
    without having crossed `level`: the γ that makes

        P(crossed within D steps) + P(not crossed, W ≥ c(D)) + γ · P(not crossed, W = c(D) − 1)

    equal α for D fair ±1 steps (0 when nothing is left, or no such walk exists), computed by
    the same exact dynamic programme. A test that accepts those walks with probability γ,
    with a coin drawn independently of the outcomes, spends α exactly on every D: the
    randomized form of McNemar's exact test, the most powerful test of its null for a given
    D (Neyman-Pearson). The acceptance probability still grows with W (0, γ, 1), so the fair
    coin stays the worst case, and P(accept | D) ≤ α holds as for c(D) alone."""
    return _final_look(level, alpha, size, bets)[1]


@functools.lru_cache(maxsize=64)
def _final_look(
    level: float, alpha: float, size: int, bets: tuple[tuple[float, float], ...]
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(`final_look_levels`, `final_look_chances`): one pass of the dynamic programme over the
    fair walks that have not crossed `level`."""
    _check_alpha(alpha)
    grid = _e_values(size, bets)
    first = _first_crossings(grid, size, level * (1 - 1e-12))
    levels = [1]  # D = 0: the empty walk ends on W = 0, which never accepts
    chances = [0.0]
    for steps, (alive, crossed) in enumerate(_fair_walk(size, first), start=1):
        tail, critical = crossed, steps + 1
        for wins in range(steps, -1, -1):
            if tail + alive[wins] > alpha * (1 + 1e-12):
                break
            tail += alive[wins]
            critical = wins
        levels.append(critical)
        spent = crossed + sum(alive[critical:])
        short = alive[critical - 1] if critical >= 1 else 0.0
        left = alpha - spent
        # a hair below the exact γ, so float rounding never spends more than α
        chances.append(min(1.0, left / short * (1 - 1e-9)) if short > 0 and left > 0 else 0.0)
    return tuple(levels), tuple(chances)


@functools.lru_cache(maxsize=512)
def calibrated_threshold(
    horizon: int, alpha: float, bets: tuple[tuple[float, float], ...] = MIXTURE_BETS
) -> float:
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
    # one grid serves every horizon up to the next power of two (rows by W, W + L <= size)
    grid = _e_values(min(CALIBRATION_MAX_HORIZON, 1 << (horizon - 1).bit_length()), bets)
    levels = sorted(
        {
            e
            for wins in range(horizon + 1)
            for e in grid[wins][: horizon + 1 - wins]
            if 1.0 < e <= ville
        }
        | {ville}
    )
    lo, hi, best = 0, len(levels) - 1, ville
    while lo <= hi:
        mid = (lo + hi) // 2
        first = _first_crossings(grid, horizon, levels[mid] * (1 - 1e-12))
        if _crossing_probability(horizon, first) <= alpha:
            best, hi = levels[mid], mid - 1
        else:
            lo = mid + 1
    return best
