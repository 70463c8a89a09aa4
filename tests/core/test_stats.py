"""core.stats against independent oracles (statsmodels, scipy, closed forms, exact enumeration)."""

from __future__ import annotations

import copy
import itertools
import math
import random

import numpy as np
import pytest
from scipy import optimize, special
from scipy.stats import binom, binomtest, norm
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from core import stats
from core.stats import (
    EProcessPair,
    bradley_terry,
    calibrated_threshold,
    final_look_chances,
    final_look_levels,
    kt_wealth_unclipped,
    mcnemar_exact,
    min_detectable_difference,
    mixture_e,
    ville_threshold,
    wilson_interval,
)

# --------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("successes", "n", "alpha"),
    [
        (0, 1, 0.05),
        (1, 1, 0.05),
        (0, 10, 0.05),
        (10, 10, 0.05),
        (3, 10, 0.05),
        (7, 13, 0.1),
        (50, 100, 0.01),
        (1, 200, 0.05),
        (199, 200, 0.2),
        (37, 61, 0.05),
    ],
)
def test_wilson_matches_statsmodels(successes: int, n: int, alpha: float) -> None:
    lo, hi = proportion_confint(successes, n, alpha=alpha, method="wilson")
    assert wilson_interval(successes, n, alpha) == pytest.approx((lo, hi), abs=1e-12)


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0
    lo, hi = wilson_interval(4, 9)
    assert 0.0 < lo < 4 / 9 < hi < 1.0
    # More data narrows the interval; a smaller alpha widens it.
    assert np.diff(wilson_interval(40, 90)) < np.diff(wilson_interval(4, 9))
    assert np.diff(wilson_interval(4, 9, 0.01)) > np.diff(wilson_interval(4, 9, 0.05))


@pytest.mark.parametrize(
    ("successes", "n", "alpha"),
    [(3, 2, 0.05), (-1, 4, 0.05), (1, 4, 0.0), (1, 4, 1.0), (0, -1, 0.05)],
)
def test_wilson_rejects_bad_input(successes: int, n: int, alpha: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n, alpha)


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_two_sided_matches_statsmodels_grid() -> None:
    for w in range(0, 26):
        for l in range(0, 26):  # noqa: E741
            # The concordant cells must not matter: only discordant units carry evidence.
            table = [[7 + w, w], [l, 3 + l]]
            expected = mcnemar(table, exact=True).pvalue
            assert mcnemar_exact(w, l) == pytest.approx(expected, rel=1e-12, abs=1e-300), (w, l)


@pytest.mark.parametrize(
    ("w", "l"),
    [
        (0, 0),
        (1, 0),
        (0, 1),
        (9, 2),
        (2, 9),
        (15, 15),
        (30, 12),
        (3, 40),
        (120, 95),
        (70, 1),
        (0, 90),
    ],
)
def test_mcnemar_one_sided_matches_binomtest(w: int, l: int) -> None:  # noqa: E741
    n = w + l
    for alt in ("greater", "less"):
        expected = binomtest(w, n, 0.5, alternative=alt).pvalue if n else 1.0
        assert mcnemar_exact(w, l, alt) == pytest.approx(expected, rel=1e-12), (w, l, alt)


def test_mcnemar_large_n_uses_log_path_and_stays_accurate() -> None:
    # n = 10_200 is above the exact-integer cut-off; both tails reach far-out p-values.
    for w, l in [(5_300, 4_900), (4_900, 5_300), (5_050, 5_150)]:  # noqa: E741
        assert w + l > stats._EXACT_BINOM_MAX_N
        for alt in ("greater", "less", "two-sided"):
            expected = binomtest(w, w + l, 0.5, alternative=alt).pvalue
            assert mcnemar_exact(w, l, alt) == pytest.approx(expected, rel=1e-8), (w, l, alt)


def test_binom_log_path_agrees_with_exact_path() -> None:
    for n, k in [(10, 3), (100, 40), (999, 480), (4000, 1900)]:
        exact = stats._binom_half_cdf(k, n)
        assert stats._binom_half_cdf_log(k, n) == pytest.approx(exact, rel=1e-9)
        assert exact == pytest.approx(binom.cdf(k, n, 0.5), rel=1e-10)


def test_mcnemar_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)
    with pytest.raises(ValueError):
        mcnemar_exact(3, 2, alternative="bigger")


# --------------------------------------------------------------------------- MDD


def _exact_power(delta: float, n: int, psi: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test (sum over the number of discordant)."""
    p_w = (psi + delta) / 2
    q = p_w / psi  # P(W | discordant)
    power = 0.0
    for d in range(n + 1):
        w = np.arange(d + 1)
        reject = np.minimum(1.0, 2 * binom.cdf(np.minimum(w, d - w), d, 0.5)) <= alpha
        power += binom.pmf(d, n, psi) * binom.pmf(w, d, q)[reject].sum()
    return power


def _windowed_exact_power(delta: float, n: int, psi: float, alpha: float) -> float:
    """Exact power as `_exact_power`, vectorised over d with scipy's quantile for the critical
    value, and over the d with P(D = d) >= 1e-20 only (the rest weighs < n·1e-20), so the
    oracle stays fast for n in the tens of thousands."""
    d = np.arange(n + 1)
    p_d = binom.pmf(d, n, psi)
    d, p_d = d[p_d >= 1e-20], p_d[p_d >= 1e-20]
    c = binom.ppf(alpha / 2, d, 0.5)  # smallest c with P(S_d <= c) >= α/2; step back if over
    c = np.where(np.minimum(1.0, 2 * binom.cdf(c, d, 0.5)) <= alpha, c, c - 1)
    q = (psi + delta) / (2 * psi)
    tails = np.where(c >= 0, binom.cdf(c, d, q) + binom.sf(d - c - 1, d, q), 0.0)
    return float(np.sum(p_d * tails))


@pytest.mark.parametrize("n", [6, 20, 50, 51, 60, 80, 120, 247, 500, 1000])
@pytest.mark.parametrize(
    ("psi", "alpha", "power"),
    [(0.3, 0.05, 0.8), (0.5, 0.05, 0.9), (0.1, 0.01, 0.8), (0.62, 0.05, 0.8), (0.96, 0.05, 0.3)],
)
def test_mdd_reaches_the_power_it_claims_and_is_the_smallest_for_every_n(
    n: int, psi: float, alpha: float, power: float
) -> None:
    delta = min_detectable_difference(n, psi, alpha, power)
    if delta == math.inf:
        assert _windowed_exact_power(psi, n, psi, alpha) < power
        return
    assert 0.0 < delta <= psi
    assert _windowed_exact_power(delta, n, psi, alpha) >= power
    assert _windowed_exact_power(delta - 1e-6, n, psi, alpha) < power


def test_exact_power_beyond_exact_integer_sums_matches_scipy() -> None:
    n, psi = 20_000, 0.6  # discordant counts above _EXACT_BINOM_MAX_N: the float path
    assert n * psi > stats._EXACT_BINOM_MAX_N
    for delta in (0.0, 0.01, 0.03):
        assert stats.exact_mcnemar_power(n, psi, delta, 0.05) == pytest.approx(
            _windowed_exact_power(delta, n, psi, 0.05), abs=1e-9
        )


@pytest.mark.parametrize("alpha", [0.05, 0.0625, 0.01, 1e-6])
def test_critical_values_are_the_rule_mcnemar_exact_applies(alpha: float) -> None:
    """c_d = the largest min(W, L) that `mcnemar_exact` rejects at α, found by bisection on
    its p-value; 0.0625 = 2·2^-5 is hit exactly at d = 5, where rounding would show."""

    def brute(d: int) -> int:
        lo, hi = -1, (d - 1) // 2  # p-values grow with min(W, L); find the last rejected
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if mcnemar_exact(mid, d - mid) <= alpha else (lo, mid - 1)
        return lo

    for d_lo, d_hi in ((0, 300), (9_998, 10_003)):
        got = stats._critical_values(d_lo, d_hi, alpha)
        assert list(got) == [brute(d) for d in range(d_lo, d_hi + 1)]


def test_mdd_is_fast_and_memoised_for_large_n() -> None:
    import time

    started = time.perf_counter()
    first = min_detectable_difference(5_000, 0.4, 0.05, 0.8)
    assert time.perf_counter() - started < 5.0
    started = time.perf_counter()
    assert min_detectable_difference(5_000, 0.4, 0.05, 0.8) == first
    assert time.perf_counter() - started < 0.01


def test_mdd_shrinks_with_n_and_is_inf_when_unpowered() -> None:
    values = [min_detectable_difference(n, 0.3) for n in (30, 60, 120, 480, 1920)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))
    # Quadrupling n roughly halves the MDD (the 1/√n law) once n is large.
    assert values[-2] / values[-1] == pytest.approx(2.0, rel=0.05)
    assert min_detectable_difference(5, 0.3) == math.inf
    with pytest.raises(ValueError):
        min_detectable_difference(0, 0.3)
    with pytest.raises(ValueError):
        min_detectable_difference(10, 0.0)


# --------------------------------------------------------------------------- e-processes


def _kt_closed_form(w: int, l: int) -> float:  # noqa: E741
    log_value = (w + l) * math.log(2) + special.betaln(w + 0.5, l + 0.5) - special.betaln(0.5, 0.5)
    return math.exp(log_value)


def test_kt_unclipped_matches_closed_form_in_any_order() -> None:
    rng = random.Random(7)
    for wins, losses, ties in [
        (0, 0, 3),
        (1, 0, 0),
        (0, 1, 2),
        (5, 2, 4),
        (3, 11, 0),
        (20, 20, 10),
        (40, 7, 30),
    ]:
        base = [1] * wins + [-1] * losses + [0] * ties
        for _ in range(5):
            rng.shuffle(base)
            expected = _kt_closed_form(wins, losses)
            assert kt_wealth_unclipped(base) == pytest.approx(expected, rel=1e-10)


def test_fixed_bet_wealth_closed_form() -> None:
    outcomes = [1, 0, -1, 1, 1, 0, -1, 1, 0, 1]
    eproc = EProcessPair("fixed", lambda_dir=0.3)
    e_win, e_harm = eproc.update_many(outcomes)
    w, l = outcomes.count(1), outcomes.count(-1)  # noqa: E741
    assert e_win == pytest.approx(1.3**w * 0.7**l)
    assert e_harm == pytest.approx(0.7**w * 1.3**l)
    assert (eproc.wins, eproc.losses) == (w, l)


def test_kt_bets_are_predictable_and_clipped() -> None:
    eproc = EProcessPair("kt", lambda_max=0.5)
    assert eproc.bets() == (0.0, 0.0)  # p̂ = ½ before any evidence: no bet either way
    assert eproc.update(0) == (1.0, 1.0)  # ties move nothing, not even the plug-in
    assert eproc.bets() == (0.0, 0.0)
    assert eproc.update(1) == (1.0, 1.0)  # the first W was bet with λ = 0
    assert eproc.bets() == pytest.approx((0.5, 0.0))  # p̂ = 1.5/2 -> 2p̂ − 1 = 0.5
    eproc.update(1)
    assert eproc.bets() == pytest.approx((0.5, 0.0))  # 2·(2.5/3) − 1 = 0.667, clipped to 0.5
    eproc.update_many([-1, -1, -1, -1])  # p̂ = 2.5/7
    assert eproc.bets() == pytest.approx((0.0, 1 - 2 * 2.5 / 7))


def test_eprocess_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="strategy"):
        EProcessPair("kelly")
    with pytest.raises(ValueError, match="lambda_dir"):
        EProcessPair("fixed", lambda_dir=1.0)
    with pytest.raises(ValueError, match="lambda_max"):
        EProcessPair("kt", lambda_max=0.0)
    with pytest.raises(ValueError):
        EProcessPair().update(2)
    assert ville_threshold(0.05) == pytest.approx(20.0)


class _PeekingBet(EProcessPair):
    """A cheating bettor that sees the outcome before betting: must fail the martingale check."""

    def update(self, g: int) -> tuple[float, float]:
        self.e_win *= 1.0 + 0.5 * max(g, 0)
        return (self.e_win, self.e_harm)


def _max_factor_bias(eproc: EProcessPair, depth: int, p_w: float, p_l: float) -> float:
    """Largest |E[factor | past] − 1| over every history up to `depth`, for both processes."""
    probs = {1: p_w, -1: p_l, 0: 1.0 - p_w - p_l}
    worst = 0.0
    children = {}
    for g in probs:
        child = copy.deepcopy(eproc)
        child.update(g)
        children[g] = child
    for attr in ("e_win", "e_harm"):
        mean = sum(p * getattr(children[g], attr) for g, p in probs.items()) / getattr(eproc, attr)
        worst = max(worst, abs(mean - 1.0))
    if depth > 1:
        for child in children.values():
            worst = max(worst, _max_factor_bias(child, depth - 1, p_w, p_l))
    return worst


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
@pytest.mark.parametrize("p_disc", [0.2, 0.6, 1.0])
def test_martingale_property_under_null(strategy: str, p_disc: float) -> None:
    eproc = EProcessPair(strategy, lambda_dir=0.4, lambda_max=0.6)
    assert _max_factor_bias(eproc, 7, p_disc / 2, p_disc / 2) < 1e-12


def test_martingale_check_can_fail() -> None:
    # Under an alternative the improvement process must grow on average...
    eproc = EProcessPair("fixed", lambda_dir=0.3)
    assert _max_factor_bias(eproc, 3, 0.3, 0.1) > 0.05
    # ...and a bettor who peeks at the outcome breaks the property even under the null.
    assert _max_factor_bias(_PeekingBet(), 3, 0.25, 0.25) > 0.05


# Monte Carlo check of Ville's inequality: the share of null paths whose wealth EVER reaches
# 1/α within the horizon must not exceed α. Tolerance: 0.006 is ~3.5 binomial standard errors
# at α = 0.05 with 20k paths (SE ≈ 0.0015); both bets actually sit well below α.
N_PATHS, HORIZON, TOL = 20_000, 200, 0.006


def _null_outcomes(rng: np.random.Generator, p_w: float, p_l: float) -> np.ndarray:
    u = rng.random((N_PATHS, HORIZON))
    return np.where(u < p_w, 1, np.where(u < p_w + p_l, -1, 0)).astype(np.int8)


def _log_wealth_paths(g: np.ndarray, strategy: str, lam: float, lam_max: float) -> np.ndarray:
    """Vectorised (win, harm) log-wealth paths; the bet at t uses outcomes before t only."""
    if strategy == "fixed":
        lam_t = mu_t = np.full(g.shape, lam)
    else:
        wins_before = np.cumsum(g == 1, axis=1) - (g == 1)
        disc_before = np.cumsum(g != 0, axis=1) - (g != 0)
        p_hat = (wins_before + 0.5) / (disc_before + 1.0)
        lam_t = np.clip(2 * p_hat - 1, 0.0, lam_max)
        mu_t = np.clip(1 - 2 * p_hat, 0.0, lam_max)
    log_win = np.cumsum(np.log1p(lam_t * g), axis=1)
    log_harm = np.cumsum(np.log1p(-mu_t * g), axis=1)
    return np.stack([log_win, log_harm])


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
def test_vectorised_paths_match_eprocess(strategy: str) -> None:
    rng = np.random.default_rng(3)
    u = rng.random((20, 60))
    g = np.where(u < 0.2, 1, np.where(u < 0.4, -1, 0))
    paths = np.exp(_log_wealth_paths(g, strategy, 0.3, 0.5))
    for i in range(g.shape[0]):
        eproc = EProcessPair(strategy, 0.3, 0.5)
        for t in range(g.shape[1]):
            e_win, e_harm = eproc.update(int(g[i, t]))
            assert (e_win, e_harm) == pytest.approx((paths[0, i, t], paths[1, i, t]), rel=1e-9)


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
def test_ville_crossing_rate_under_null(strategy: str) -> None:
    rng = np.random.default_rng(20240611)
    g = _null_outcomes(rng, 0.3, 0.3)  # 40% ties
    log_paths = _log_wealth_paths(g, strategy, 0.3, 0.5)
    for alpha in (0.05, 0.1):
        ever = (log_paths.max(axis=2) >= math.log(ville_threshold(alpha))).mean(axis=1)
        assert ever[0] <= alpha + TOL, ("win", alpha, ever[0])
        assert ever[1] <= alpha + TOL, ("harm", alpha, ever[1])


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
def test_ville_check_has_power_under_alternative(strategy: str) -> None:
    # Guards the test above against a simulation that can never cross.
    rng = np.random.default_rng(11)
    g = _null_outcomes(rng, 0.4, 0.2)
    log_paths = _log_wealth_paths(g, strategy, 0.3, 0.5)
    crossed = (log_paths.max(axis=2) >= math.log(20.0)).mean(axis=1)
    assert crossed[0] > 0.5
    assert crossed[1] < 0.01


# --------------------------------------------------------------------------- Bradley-Terry


def _bt_brute_force(n_items: int, comparisons: list[tuple[int, int]], prior: float) -> np.ndarray:
    """Maximise the (penalised) log-likelihood directly over log-strengths with scipy."""

    def neg_log_lik(theta: np.ndarray) -> float:
        total = sum(theta[w] - np.logaddexp(theta[w], theta[lo]) for w, lo in comparisons)
        # `prior` virtual wins and `prior` virtual losses per item against a reference at θ = 0
        total += prior * np.sum(theta - 2 * np.logaddexp(theta, 0.0))
        return -total

    res = optimize.minimize(neg_log_lik, np.zeros(n_items), method="BFGS", options={"gtol": 1e-10})
    theta = res.x - res.x.mean()
    return np.exp(theta)


COMPARISONS = [
    (0, 1),
    (0, 1),
    (1, 0),
    (1, 2),
    (2, 1),
    (1, 2),
    (2, 3),
    (3, 2),
    (2, 3),
    (0, 3),
    (3, 0),
    (0, 2),
    (2, 0),
    (3, 1),
    (1, 3),
    (0, 3),
]


def test_bradley_terry_matches_brute_force_mle() -> None:
    scores = bradley_terry(4, COMPARISONS, prior=0.0)
    assert scores == pytest.approx(list(_bt_brute_force(4, COMPARISONS, 0.0)), rel=1e-5)
    assert math.prod(scores) == pytest.approx(1.0)


def test_bradley_terry_with_prior_matches_brute_force_map() -> None:
    comps = [*COMPARISONS, (0, 4), (1, 4)]  # item 4 never wins: the MLE would not exist
    scores = bradley_terry(5, comps, prior=0.1)
    assert scores == pytest.approx(list(_bt_brute_force(5, comps, 0.1)), rel=1e-5)
    assert 0 < scores[4] < min(scores[:4])


def test_bradley_terry_prior_edge_cases() -> None:
    with pytest.raises(ValueError, match="MLE"):
        bradley_terry(3, [(0, 1), (0, 2), (1, 2)], prior=0.0)
    with pytest.raises(ValueError):
        bradley_terry(2, [(0, 0)])
    # An item with no comparisons sits at the reference; the others around it.
    scores = bradley_terry(3, [(0, 1), (0, 1), (1, 0)], prior=0.1)
    assert scores[0] > scores[2] > scores[1]


def test_bradley_terry_recovers_known_strengths() -> None:
    rng = random.Random(5)
    truth = [4.0, 2.0, 1.0, 0.5]
    comps = []
    for _ in range(4000):
        i, j = rng.sample(range(4), 2)
        winner = i if rng.random() < truth[i] / (truth[i] + truth[j]) else j
        comps.append((winner, j if winner == i else i))
    scores = bradley_terry(4, comps, prior=0.1)
    geo = math.prod(truth) ** 0.25
    assert scores == pytest.approx([t / geo for t in truth], rel=0.12)


# ------------------------------------------------ Bradley–Terry against choix (core/ranking.py)


def _choix_map(n_items: int, comparisons: list[tuple[int, int]], repeat: int) -> np.ndarray:
    """The MAP of `bradley_terry(prior=1/repeat)` as a plain MLE that choix computes: every
    real comparison `repeat` times plus one win and one loss of each item against an extra
    reference item (same maximiser: the objective is scaled by `repeat`), normalised so the
    reference sits at strength 1, then geometric mean 1 over the real items."""
    import choix

    ref = n_items
    data = [c for c in comparisons for _ in range(repeat)]
    data += [(i, ref) for i in range(n_items)] + [(ref, i) for i in range(n_items)]
    theta = choix.ilsr_pairwise(n_items + 1, data, alpha=0.0, tol=1e-13, max_iter=10_000)
    theta = theta[:n_items] - theta[ref]
    return np.exp(theta - theta.mean())


def _random_bt_case(rng: random.Random) -> tuple[int, list[tuple[int, int]]]:
    n_items = rng.randint(2, 8)
    comps = []
    for _ in range(rng.randint(1, 40)):
        i, j = rng.sample(range(n_items), 2)
        comps.append((i, j))
    return n_items, comps


def test_bradley_terry_with_prior_converges_and_matches_choix_on_40_random_cases() -> None:
    import warnings

    rng = random.Random(14)
    for case in range(40):
        n_items, comps = _random_bt_case(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error", stats.ConvergenceWarning)
            scores = bradley_terry(n_items, comps, prior=0.1)
        oracle = _choix_map(n_items, comps, repeat=10)
        assert np.log(scores) == pytest.approx(np.log(oracle), abs=1e-6), case
        # the rank order agrees wherever the oracle separates items
        order = sorted(range(n_items), key=lambda i: -oracle[i])
        for a, b in zip(order, order[1:], strict=False):
            if oracle[a] - oracle[b] > 1e-6:
                assert scores[a] > scores[b], case


def test_bradley_terry_mle_matches_choix() -> None:
    import choix

    theta = choix.ilsr_pairwise(4, COMPARISONS, alpha=0.0, tol=1e-13, max_iter=10_000)
    expected = np.exp(theta - theta.mean())
    assert np.log(bradley_terry(4, COMPARISONS, prior=0.0)) == pytest.approx(
        np.log(expected), abs=1e-6
    )


def test_bradley_terry_mle_refuses_a_win_graph_that_is_not_strongly_connected() -> None:
    # every item wins and loses, yet nothing in {2, 3} ever beat anything in {0, 1}
    comps = [(0, 1), (1, 0), (2, 3), (3, 2), (0, 2), (1, 3)]
    with pytest.raises(stats.IncomparableItemsError, match=r"2 groups .*\{0, 1\} > \{2, 3\}") as e:
        bradley_terry(4, comps, prior=0.0)
    assert e.value.components == ((0, 1), (2, 3))
    assert bradley_terry(4, [*comps, (3, 0)], prior=0.0)  # one loss back joins the groups


def _mutual_reachability_classes(
    n_items: int, comps: list[tuple[int, int]]
) -> tuple[list[set[int]], list[set[int]]]:
    """Brute force: who reaches whom in the win graph, and the classes of mutual reach."""
    reach = [{i} for i in range(n_items)]
    changed = True
    while changed:
        changed = False
        for winner, loser in comps:
            if not reach[loser] <= reach[winner]:
                reach[winner] |= reach[loser]
                changed = True
    classes = {frozenset(j for j in reach[i] if i in reach[j]) for i in range(n_items)}
    return [set(c) for c in classes], reach


def _tiered_bt_case(rng: random.Random) -> tuple[int, list[tuple[int, int]]]:
    """Items in 2-3 tiers, each tier a cycle of wins (so every item wins and loses), plus
    random comparisons where across tiers the higher tier wins but for rare upsets: the cases
    where checking wins and losses per item is not enough."""
    sizes = [rng.randint(2, 3) for _ in range(rng.randint(2, 3))]
    n_items = sum(sizes)
    labels = rng.sample(range(n_items), n_items)  # tiers are not runs of indices
    tiers = [labels[sum(sizes[:k]) : sum(sizes[: k + 1])] for k in range(len(sizes))]
    tier_of = {i: k for k, t in enumerate(tiers) for i in t}
    comps = [(t[k], t[(k + 1) % len(t)]) for t in tiers for k in range(len(t))]
    for _ in range(rng.randint(1, 12)):
        i, j = rng.sample(range(n_items), 2)
        upset = rng.random() < 0.1
        i_wins = (
            (tier_of[i] < tier_of[j]) != upset if tier_of[i] != tier_of[j] else rng.random() < 0.5
        )
        comps.append((i, j) if i_wins else (j, i))
    return n_items, comps


def test_bradley_terry_mle_matches_choix_or_names_the_groups_on_300_random_cases() -> None:
    import choix

    rng = random.Random(11)
    counts = {"connected": 0, "refused": 0}
    for case in range(300):
        n_items, comps = _tiered_bt_case(rng) if case % 2 else _random_bt_case(rng)
        everyone = set(range(n_items))
        if {w for w, _ in comps} != everyone or {lo for _, lo in comps} != everyone:
            continue  # keep the hard cases: every item has a win and a loss
        classes, reach = _mutual_reachability_classes(n_items, comps)
        if len(classes) == 1:
            counts["connected"] += 1
            theta = choix.ilsr_pairwise(n_items, comps, alpha=0.0, tol=1e-13, max_iter=100_000)
            got = np.log(bradley_terry(n_items, comps, prior=0.0))
            assert got == pytest.approx(theta - theta.mean(), abs=1e-6), case
            continue
        counts["refused"] += 1
        with pytest.raises(stats.IncomparableItemsError) as e:
            bradley_terry(n_items, comps, prior=0.0)
        groups = e.value.components
        assert sorted(map(set, groups), key=min) == sorted(classes, key=min), case
        for a, later in enumerate(groups):  # topological: no later group reaches an earlier one
            for earlier in groups[:a]:
                assert not set(earlier) & reach[later[0]], case
    assert counts["connected"] >= 50 and counts["refused"] >= 50, counts  # both kinds occur


def test_win_graph_components_handle_long_chains_without_recursion() -> None:
    n = 5_000
    cycle = [(i, (i + 1) % n) for i in range(n)]
    assert stats.win_graph_components(n, cycle) == [tuple(range(n))]
    chain = [(i, i + 1) for i in range(n - 1)]
    assert stats.win_graph_components(n, chain) == [(i,) for i in range(n)]


def test_bradley_terry_warns_when_the_cap_is_hit() -> None:
    with pytest.warns(stats.ConvergenceWarning, match="not converged"):
        bradley_terry(4, COMPARISONS, prior=0.1, iters=1)


def test_mdd_has_no_false_root_at_small_n() -> None:
    # the audit's case: the old formula returned 0.9585, whose real power is 0.10
    assert min_detectable_difference(3, 0.96, 0.05, 0.9) == math.inf
    for n in range(1, 6):  # the exact test cannot reject at all with <= 5 units at 5%
        assert min_detectable_difference(n, 1.0, 0.05, 0.8) == math.inf


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 20, 35, 50])
@pytest.mark.parametrize(
    ("psi", "alpha", "power"),
    [(0.96, 0.05, 0.9), (1.0, 0.05, 0.8), (0.6, 0.05, 0.8), (0.3, 0.1, 0.5), (0.8, 0.01, 0.8)],
)
def test_mdd_matches_exact_power_oracle(n: int, psi: float, alpha: float, power: float) -> None:
    delta = min_detectable_difference(n, psi, alpha, power)
    if delta == math.inf:
        assert _exact_power(psi, n, psi, alpha) < power
    else:
        assert 0.0 < delta <= psi
        assert _exact_power(delta, n, psi, alpha) == pytest.approx(power, abs=1e-6)
        # and it is the smallest such δ (power is increasing in δ)
        assert _exact_power(max(0.0, delta - 1e-4), n, psi, alpha) < power


def test_exact_mcnemar_power_matches_scipy() -> None:
    for n, psi, delta, alpha in [(6, 1.0, 0.8, 0.05), (20, 0.5, 0.3, 0.05), (40, 0.3, 0.1, 0.01)]:
        assert stats.exact_mcnemar_power(n, psi, delta, alpha) == pytest.approx(
            _exact_power(delta, n, psi, alpha), abs=1e-9
        )


@pytest.mark.parametrize("alpha", [0.05, 1e-6, 1e-12, 1e-16, 1e-17, 1e-40, 1e-300])
def test_wilson_z_precise_for_tiny_alpha(alpha: float) -> None:
    z = stats._z_upper(alpha / 2)
    assert z == pytest.approx(norm.isf(alpha / 2), rel=1e-9)
    lo, hi = wilson_interval(7, 10, alpha)
    zz = norm.isf(alpha / 2)
    p, n = 0.7, 10
    centre = (p + zz**2 / (2 * n)) / (1 + zz**2 / n)
    half = zz * math.sqrt(p * (1 - p) / n + zz**2 / (4 * n * n)) / (1 + zz**2 / n)
    assert (lo, hi) == pytest.approx((max(0.0, centre - half), min(1.0, centre + half)), abs=1e-9)


# --------------------------------------------------------------------------- final look


def _joint_rate_by_enumeration(level: float, d: int, critical: int, chance: float = 0.0) -> float:
    """P(a fair walk of d steps crosses `level`, or ends with W >= critical, or ends with
    W = critical - 1 without crossing and wins a coin of `chance`), every path."""
    total = 0.0
    for path in itertools.product((1, -1), repeat=d):
        wins = losses = 0
        crossed = False
        for g in path:
            wins, losses = wins + (g == 1), losses + (g == -1)
            crossed = crossed or mixture_e(wins, losses) >= level * (1 - 1e-12)
        total += 1.0 if crossed or wins >= critical else chance * (wins == critical - 1)
    return total / 2**d


@pytest.mark.parametrize("horizon", [12, 48])
def test_final_look_levels_are_the_smallest_valid_by_enumeration(horizon: int) -> None:
    """c(D) keeps P(cross or end with W >= c(D)) <= α, and c(D) − 1 would not, every path."""
    level = calibrated_threshold(horizon, 0.05)
    levels = final_look_levels(level, 0.05, horizon)
    for d in range(1, 13):
        c = levels[d]
        assert _joint_rate_by_enumeration(level, d, c) <= 0.05
        if c <= d:
            assert _joint_rate_by_enumeration(level, d, c - 1) > 0.05


def test_final_look_levels_sit_within_one_win_of_the_exact_mcnemar_level() -> None:
    """scipy's one-sided exact binomial test: never below McNemar's level (the sequential
    accepts spend part of α first), and at most one win above it for D ≤ 43 at a 48-family
    ladder's level (the figure core.stats.final_look_levels states)."""
    for horizon in (48, 200):
        levels = final_look_levels(calibrated_threshold(horizon, 0.05), 0.05, horizon)
        for d in range(1, horizon + 1):
            ok = [w for w in range(d + 1) if binomtest(w, d, 0.5, "greater").pvalue <= 0.05]
            mcnemar = ok[0] if ok else d + 1
            assert levels[d] >= mcnemar
            if d <= 43:
                assert levels[d] <= mcnemar + 1


@pytest.mark.parametrize("horizon", [12, 48])
def test_final_look_chances_spend_alpha_exactly_by_enumeration(horizon: int) -> None:
    """With γ(D) one win short of c(D), P(accept | D) is α to the float, every path: the
    randomized test spends its whole level on every D, where c(D) alone leaves some unspent."""
    level = calibrated_threshold(horizon, 0.05)
    levels = final_look_levels(level, 0.05, horizon)
    chances = final_look_chances(level, 0.05, horizon)
    assert chances[0] == 0.0 and all(0.0 <= g <= 1.0 for g in chances)
    for d in range(1, 13):
        rate = _joint_rate_by_enumeration(level, d, levels[d], chances[d])
        assert rate == pytest.approx(0.05, rel=1e-8) and rate <= 0.05


def test_final_look_chances_are_the_randomized_exact_binomial_test_before_any_crossing() -> None:
    """On walks too short to cross the threshold, (c(D), γ(D)) is the textbook randomized
    one-sided exact binomial test at α (scipy): the most powerful test of p <= 1/2 given D."""
    horizon = 200
    level = calibrated_threshold(horizon, 0.05)
    shortest = next(w for w in range(1, 50) if mixture_e(w, 0) >= level)
    levels = final_look_levels(level, 0.05, horizon)
    chances = final_look_chances(level, 0.05, horizon)
    for d in range(1, shortest):
        c = next(w for w in range(d + 2) if w > d or binom.sf(w - 1, d, 0.5) <= 0.05)
        gamma = (0.05 - binom.sf(c - 1, d, 0.5)) / binom.pmf(c - 1, d, 0.5)
        assert levels[d] == c
        assert chances[d] == pytest.approx(min(1.0, gamma), rel=1e-6)
    assert chances[4] == pytest.approx(0.8, rel=1e-6)  # 4 wins of 4: 0.05 / (1/16)
