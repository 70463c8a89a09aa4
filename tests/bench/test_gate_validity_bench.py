"""Checks of bench/gate_validity.py's exact computations against brute force and oracles.

The bench's figures are only as good as its dynamic programme and its McNemar power, so both
are checked against full enumeration of small cases, run through the real gate code. The
gate's final look accepts one win short on the test's coin (`GateParams.final_look_coin`);
the DP averages over that coin, so the enumeration does too: each path weighted by the
probability over a uniform coin that the real gate accepts it.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from core.evolution.gate import GateParams, SequentialGate
from core.stats import mcnemar_exact

_PATH = Path(__file__).resolve().parents[2] / "bench" / "gate_validity.py"


@pytest.fixture(scope="module")
def gv():
    spec = importlib.util.spec_from_file_location("bench_gate_validity", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


COINS = (None, 0.0, 0.3, 0.7, 0.99)  # a gate given no coin, and coins low to high


def _enumerate(gv, params: GateParams, horizon: int, d: float, p: float, outcomes, real: bool):
    """Every path of family outcomes with its probability: the rates by brute force, the coin
    averaged over. A path's accept probability over a uniform coin u: 1 if the gate accepts it
    with no coin (then at every coin), else γ of its end if the gate accepts it at u = 0 (an
    accept one win short: u < γ), else 0. Units are those of the test at coin 0, the DP's (an
    upper bound on a test at a higher coin, which may curtail sooner). With `real`, every
    path also goes through the real gate at each of COINS and must match `replay` there."""
    probs = {1: d * p, -1: d * (1 - p), 0: 1 - d}
    rates = {"accept": 0.0, "prov": 0.0, "keep": 0.0, "gate_units": 0.0, "test_units": 0.0}
    s1 = gv.stage1_of(horizon)
    for path in itertools.product(outcomes, repeat=horizon):
        weight = float(np.prod([probs[g] for g in path]))
        if weight == 0.0:
            continue
        row = list(path)
        if real:
            fams = [(f"f{i}", [(f"u{i}", *gv._PAIR[g])]) for i, g in enumerate(row)]
            runs = {c: gv.run_real(fams, params, horizon, s1, c) for c in COINS}
            for coin, result in runs.items():
                assert result == gv.replay(row, params, horizon, coin), (row, coin)
        else:
            runs = {c: gv.replay(row, params, horizon, c) for c in COINS}
        verdict, gate_n, test_n = runs[0.0]
        if verdict == "accept" and runs[None][0] != "accept":  # accepted on the coin only
            wins, losses = row.count(1), row.count(-1)
            gate = SequentialGate(params, horizon=horizon, singletons=True)
            chance = gate.final_look_chance(wins, losses)
            assert gate_n == horizon and 0.0 < chance < 1.0
        else:
            chance = float(verdict == "accept")
        rates["accept"] += weight * chance
        rates["prov"] += weight * (verdict in ("keep", "rollback"))
        rates["keep"] += weight * (verdict == "keep")
        rates["gate_units"] += weight * float(gv.chunked(gate_n, horizon))
        rates["test_units"] += weight * float(gv.chunked(test_n, horizon))
    return rates


@pytest.mark.parametrize(
    ("horizon", "d", "p", "outcomes", "real"),
    [
        (12, 1.0, 0.5, (1, -1), True),
        (12, 1.0, 0.7, (1, -1), True),
        (9, 0.6, 0.65, (1, -1, 0), False),
    ],
)
@pytest.mark.parametrize(("final_look", "coin"), [(True, True), (True, False), (False, True)])
def test_dp_equals_brute_force_through_the_real_gate(
    gv, horizon, d, p, outcomes, real, final_look, coin
):
    params = GateParams(final_look=final_look, final_look_coin=coin)
    exact = gv.exact_cell(params, horizon, d, p)
    brute = _enumerate(gv, params, horizon, d, p, outcomes, real)
    assert exact.final == pytest.approx(brute["accept"], abs=1e-12)
    assert exact.prov == pytest.approx(brute["prov"], abs=1e-12)
    assert exact.kept == pytest.approx(brute["keep"], abs=1e-12)
    assert exact.gate_units == pytest.approx(brute["gate_units"], abs=1e-9)
    assert exact.test_units == pytest.approx(brute["test_units"], abs=1e-9)


def test_the_brute_force_cases_reach_every_branch(gv):
    """The enumeration above is only a check if accepts, provisionals and keeps all occur
    (without the final look), and if the final look accepts what the threshold alone does
    not (with it)."""
    e = gv.exact_cell(GateParams(final_look=False), 12, 1.0, 0.7)
    assert e.final > 0 and e.prov > 0 and e.kept > 0
    no_stop = GateParams(final_look=False, futility_share=0.0)
    assert (
        gv.exact_cell(GateParams(), 12, 1.0, 0.7).final > gv.exact_cell(no_stop, 12, 1.0, 0.7).final
    )


def test_the_brute_force_cases_reach_the_coin(gv):
    """The coin's branches occur in the enumerated cases: it adds accepts one win short, and
    a test whose coin is above every chance still reachable curtails sooner than the DP."""
    no_coin = GateParams(final_look_coin=False)
    for horizon, d, p in ((12, 1.0, 0.7), (9, 0.6, 0.65)):
        assert gv.exact_cell(GateParams(), horizon, d, p).final > (
            gv.exact_cell(no_coin, horizon, d, p).final
        )
    paths = itertools.product((1, -1), repeat=12)
    stops = {
        (gv.replay(list(row), GateParams(), 12, 0.0)[1], gv.replay(list(row), GateParams(), 12)[1])
        for row in paths
    }
    assert any(at_zero > with_none for at_zero, with_none in stops)


def test_monte_carlo_agrees_with_replay_at_each_reps_coin(gv):
    """`mc_families` draws each rep's coin (`harness_coin`) and checks the real gate against
    the DP rule at that coin: every rep agrees, and the coin is drawn only when it is on."""
    for horizon, d in ((20, 1.0), (60, 0.3)):
        m, agree = gv.mc_families(np.random.default_rng(3), 400, GateParams(), horizon, d, 0.5, 1)
        assert agree == m.reps == 400
    assert gv.harness_coin(np.random.default_rng(1), GateParams(final_look_coin=False)) is None


def test_null_test_rate_is_at_most_alpha(gv):
    for params in (GateParams(), GateParams(final_look_coin=False)):
        for horizon in (20, 60):
            for d in (0.3, 1.0):
                assert gv.exact_cell(params, horizon, d, 0.5).test <= params.alpha + 1e-12


@pytest.mark.parametrize(("w", "l"), [(0, 0), (3, 0), (7, 2), (12, 5), (4, 9), (30, 18)])
def test_mcnemar_exact_against_statsmodels_and_scipy(w, l):  # noqa: E741 - W and L
    table = [[0, l], [w, 0]]
    assert mcnemar_exact(w, l) == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)
    if w + l:
        assert mcnemar_exact(w, l, "greater") == pytest.approx(
            binomtest(w, w + l, 0.5, alternative="greater").pvalue, abs=1e-12
        )


@pytest.mark.parametrize(("n", "d", "p"), [(10, 0.6, 0.7), (14, 0.3, 0.8), (9, 1.0, 0.5)])
def test_mcnemar_power_against_enumeration(gv, n, d, p):
    pw, pl = d * p, d * (1 - p)
    brute = 0.0
    for w in range(n + 1):
        for l in range(n + 1 - w):  # noqa: E741 - W and L
            if mcnemar_exact(w, l, "greater") <= 0.05:
                ties = n - w - l
                coef = math.comb(n, w) * math.comb(n - w, l)
                brute += coef * pw**w * pl**l * (1 - d) ** ties
    assert gv.mcnemar_power(n, d, p) == pytest.approx(brute, abs=1e-12)


def test_ladder_case_runs_on_the_current_ladder_code(gv):
    params = GateParams()
    world = gv.ladder_world(20, seed=1)
    for warm in (False, True):
        m, horizon, exact = gv.mc_ladder(np.random.default_rng(1), 30, params, world, warm)
        assert m.reps == 30 and 0 < horizon <= 20
        assert 0.0 <= m.kept <= m.prov <= 1.0
        # warm ladders get the exact conditional rate (the real rule decided as its DP on
        # every rep); cold ones, chosen by the compared baseline's outcomes, do not
        assert (exact is not None) == warm
        assert exact is None or 0.0 < exact <= params.alpha + 1e-12


def test_poisson_binomial_against_enumeration(gv):
    probs = [0.1, 0.5, 0.35, 0.9, 0.0, 1.0, 0.42]
    brute = np.zeros(len(probs) + 1)
    for bits in itertools.product((0, 1), repeat=len(probs)):
        brute[sum(bits)] += np.prod([q if b else 1 - q for q, b in zip(probs, bits, strict=True)])
    assert gv.poisson_binomial(probs) == pytest.approx(brute, abs=1e-15)


@pytest.mark.parametrize("horizon", [12, 20])
@pytest.mark.parametrize(
    "params", [GateParams(), GateParams(final_look_coin=False), GateParams(coin_min_wins=1)]
)
def test_the_one_walk_rates_equal_a_walk_per_count(gv, params, horizon):
    """`accept_given_discordant` walks the D discordant families once for every D; each a[D]
    equals `exact_sequence` over D discordant families then the ties."""
    a = gv.accept_given_discordant(params, horizon)
    for d in range(horizon + 1):
        ds = [1.0] * d + [0.0] * (horizon - d)
        assert a[d] == pytest.approx(sum(gv.exact_sequence(params, horizon, ds)), abs=1e-15)
    assert a[horizon] > 0


@pytest.mark.parametrize("params", [GateParams(), GateParams(final_look_coin=False)])
def test_a_null_tests_rate_depends_on_its_ladder_only_through_the_discordant_count(gv, params):
    """The identity behind case 2's exact column: for families of any discordances, in any
    order, the gate accepts a null edit with probability sum_D PB(D) a[D]. Checked against
    every path of 9 families through the real gate at the coins of COINS (the coin averaged
    as `_enumerate` does) and against the DP walked in the ladder's order."""
    horizon = 9
    ds = [0.9, 0.0, 0.3, 1.0, 0.55, 0.2, 1.0, 0.7, 0.05]
    a = gv.accept_given_discordant(params, horizon)
    assert a.max() <= params.alpha + 1e-12
    by_count = float(gv.poisson_binomial(ds) @ a)
    assert by_count == pytest.approx(sum(gv.exact_sequence(params, horizon, ds)), abs=1e-12)
    brute = 0.0
    for path in itertools.product((1, -1, 0), repeat=horizon):
        weight = float(np.prod([d / 2 if g else 1 - d for d, g in zip(ds, path, strict=True)]))
        if weight == 0.0:
            continue
        fams = [(f"f{i}", [(f"u{i}", *gv._PAIR[g])]) for i, g in enumerate(path)]
        runs = {c: gv.run_real(fams, params, horizon, gv.stage1_of(horizon), c) for c in COINS}
        if runs[None][0] == "accept":
            brute += weight
        elif runs[0.0][0] == "accept":  # accepted on the coin only: with probability γ
            gate = SequentialGate(params, horizon=horizon, singletons=True)
            brute += weight * gate.final_look_chance(path.count(1), path.count(-1))
    assert by_count == pytest.approx(brute, abs=1e-12)
    assert brute > 0  # the path sum reaches accepts, so the check can fail


def test_the_run_level_dp_matches_runs_through_the_real_gate(gv) -> None:
    """`run_error_rates` against seeded runs of 4 tests through the real SequentialGate and
    ProbationTest, each at the LOND level `lond_level` gives it from the accepts so far: the
    mean accepts agree within 4 standard errors, and the DP's FDR is at most α."""
    from core.evolution.run_level import lond_level

    params, horizon, tests, reps, spread_over = GateParams(), 36, 4, 300, 2
    useful = gv.RUN_PATTERNS["useful first half"]
    fdr, _, mean_accepts = gv.run_error_rates(params, horizon, tests, useful, True, spread_over)
    rng = np.random.default_rng(7)
    counts = []
    for r in range(reps):
        found = 0
        for t in range(1, tests + 1):
            level = lond_level(params.alpha, t, found, spread_over)
            p = gv.RUN_P_TRUE if useful(t, tests) else 0.5
            row = gv.draw_outcomes(rng, 1, horizon, gv.RUN_D, p)[0]
            fams = [
                (f"r{r}t{t}f{i}", [(f"r{r}t{t}u{i}", *gv._PAIR[int(g)])]) for i, g in enumerate(row)
            ]
            coin = gv.harness_coin(rng, params)  # each fresh test its coin, as the harness
            verdict = gv.run_real(
                fams, gv.replace(params, e_confirm=1 / level), horizon, gv.stage1_of(horizon), coin
            )
            found += verdict[0] in ("accept", "keep")
        counts.append(found)
    se = np.std(counts) / math.sqrt(reps)
    assert 0.3 < mean_accepts < 1.7  # some useful tests pass, so later levels do move
    assert abs(np.mean(counts) - mean_accepts) < 4 * se, (np.mean(counts), mean_accepts, se)
    assert fdr <= params.alpha


def test_bundle_with_decoy_parts_split_the_candidate(gv):
    """The gate keeps a bundle, decoy and all, far more often than the decoy's own test
    accepts it, which stays within the gate's level; the line check drops the decoy of part of
    those bundles; a candidate with neither edit is all ties, never kept."""
    params = GateParams()
    reps, horizon = 300, 48

    def rate(parts, seed):
        return gv.bundle_with_decoy(np.random.default_rng(seed), reps, params, horizon, parts)

    (bundle, checked), (decoy_alone, decoy_alone_kept) = (
        rate((True, True), 1),
        rate((False, True), 2),
    )
    assert rate((False, False), 3) == (0.0, 0.0)
    assert decoy_alone <= 0.05 and decoy_alone_kept == decoy_alone  # one edit: never checked
    assert bundle > decoy_alone + 0.15
    assert 0.0 < checked < bundle - 0.1
    useful_alone, no_decoy = rate((True, False), 4)
    assert useful_alone > 0.5 and no_decoy == 0.0
