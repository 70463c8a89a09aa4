"""Is the sequential gate valid in the situations the Runner creates, and how strong is it?

A benchmark, not a test: no model calls, it prints figures. Everything uses the real
`GateParams()` defaults and the real `mixture_e` / `accept_level` / `SequentialGate` code.

Exact where possible. With the default "mixture" bet the gate's decision after n families
depends only on (W, L, n): E_win = mixture_e(W, L), E_harm = mixture_e(L, W); accept at
E_win >= params.accept_level(horizon), reject ("harm") at E_harm >= e_rollback, reject
("curtailed") once no accept is reachable (never changes a decision, only the units), and
with the final look (`GateParams.final_look`, default) accept at n = H when W >= c(W + L)
(`core.stats.final_look_levels`), and on the test's coin (`GateParams.final_look_coin`,
default) with probability γ(W + L) when W = c(W + L) − 1 >= `coin_min_wins`
(`core.stats.final_look_chances`); without it, reject ("no_signal") when W <= L once
`params.no_signal_after(H)` families are in, and at the end of stage 1 a provisional accept
(E_win >= e_provisional, W - L >= w_net_min, (W - L)/(n + shrink_k) >= delta_min) whose test
goes on over stage 2 (probation, `ProbationTest`): kept only if it crosses the same level
there. So a dynamic programme over the
(W, L) states, one step per family with P(W) = d·p, P(L) = d·(1 − p), P(tie) = 1 − d, gives the
exact probabilities of every outcome and the distribution of the stopping time.

The coin. The harness draws every fresh eprocess test a uniform coin u before any outcome
(app/harness/training/step.py `gate_spec`), and the final look accepts an end one win short on
u < γ. The DP averages over u: such an end is accepted with weight γ and rejected with 1 − γ,
so every accept probability is exactly the harness's gate's over its coin. Curtailment, which
never changes a decision, stops a state in the DP once no reachable end has a chance > 0 (a
test at coin 0); the real test at coin u stops once none has a chance above u, so with the
coin the DP's unit counts are an upper bound. Every Monte Carlo case that runs a fresh test
over its whole ladder, as the harness does, gives it a coin from the rep's seeded rng
(`harness_coin`, checked rep by rep against `replay` at that coin); resumed tests, probations
and the segments of a cut ladder get none, as in the harness.

Stage split modelled here: horizon H = n_max families, stage 1 = the first round(2H/3), stage 2 =
the last third (the Runner's split is diagnosis-pool vs validation-pool families, 2:1 in the
default benchmark split 0.5 / 0.25 / test 0.25).

Cases (d = discordance = P(a family is a W or an L); p = P(W | discordant)):
1. independent null (p = 0.5), d x n_max grid: exact DP.
2. null through the project's real ladder code (`GatePools.build` fed a noisy baseline run,
   whose outcomes are then the cached baseline the candidate is compared with; cold, and warm
   after `GatePools.update` with another noisy round): seeded Monte Carlo of the real gate;
   warm, also its exact rate given each rep's ladder and p_u (`accept_given_discordant`).
3. families of 3 and of 10 whose members share their outcomes, fed through `observe_family`:
   seeded Monte Carlo of the real gate (and ProbationTest for the continuation).
2b. a null edit through a relevance-ordered ladder (`[gate] ladder_order = "relevance"`), the
   families most relevant to the edit also the most often discordant: seeded Monte Carlo of
   the real relevance scores, ladder and gate.
4. slightly harmful candidates, p = 0.45: exact DP.
5. the harness's rules, through its code: (a) a null provisional edit while a good later edit
   of the same type is proposed (`step.on_probation` decides whether it waits; before, it
   landed and the probation compared both edits with the file before the first), H 200; (b) a
   test cut by n_max that goes on over fresh families in later steps
   (app/harness/training/continuation.py): P(a null edit accepted in any segment), at the
   level for the whole ladder and, for contrast, at one segment's level.
7. missing verdicts: a null edit whose failing answers lose their verdict (a judge's unreadable
   replies) at 30% and 60%, horizons 60 and 200: seeded Monte Carlo of the real gate, and of
   the former rule (such units left out) on the same draws.
6. consistency only: the candidate has the baseline's per-unit accuracy but a family's units
   are all right or all wrong together (families of 3 and 5, horizon 60, accuracy 0.7 and 0.5):
   seeded Monte Carlo of the real gate, and of the old sign-of-the-net rule on the same draws.
8. the unit null (`family_units = "independent"`) declared falsely, and a decoy bundled with a
   useful rule; 8b. `[gate] draws`: a null edit with 2 and 3 draws of every question through
   the real ladder and case pack, each draw answered afresh (the assumption) or a copy of the
   first (the price of an agent that ignores the sample index): seeded Monte Carlo.
The final look's coin: the null grid of case 1 and the power at n_max 20 / 60 / 200, d 0.3,
p 0.7, with and without the coin, exact DP.
Run level: the false discovery rate of a run of tests at the per-test level and at LOND's
(`[gate] run_control = "fdr"`, core/evolution/run_level.py): an exact DP over the run.
Also: power of the two family evidences (`GateParams.family_evidence`) on families of 1, 3, 5,
and what the "no net win" stop's setting costs in power and buys in units.
Then power (p in 0.6 / 0.7 / 0.8) and mean units, against a fixed one-sided exact McNemar test
at alpha = 0.05 on n = round(mean units of the gate's whole test) singleton units.

Definitions. "final" = accepted at the gate ("accept", confirmed). "kept" = provisional at the
stage-1 end AND the continuation crosses the level over stage 2 (the edit survives probation).
"test" = final + kept = P(the whole test crosses the level): this is what Ville / the exact
calibration bound by alpha = 1/e_confirm. Power = test; "confirmed power" = final alone.
Units are counted as the Validator spends them, in chunks of 8 (singleton families): a test that
ends after n families used min(ceil(n/8)·8, H) units. "gate units" stop at the gate's decision
(a provisional accept stops there); "test units" include the probation continuation (conservative
for the comparison: McNemar gets that many units).

Targets (each RESULT line's `target`; bench/README.md): final FA <= 0.05 in every validity
case (MC s.e. <= 0.005), kept-provisional FA <= 0.05, power >= 0.85 at n_max 200 / d 0.3 /
p 0.7, power >= McNemar's at equal units.

    .venv/bin/python bench/gate_validity.py [--reps 2500] [--seed 20240611]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
from scipy.stats import binom

# this checkout's core/ and app/, whatever the installed package points at (as bench/acceptance.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.evolution.acceptance import RuleSetup, make_rule, run_rule
from core.evolution.gate import (
    AcceptanceStrategy,
    GateParams,
    GateState,
    ProbationTest,
    SequentialGate,
    family_outcome,
)
from core.evolution.run_level import DEFAULT_RUN_TESTS, lond_level
from core.stats import CALIBRATION_MAX_HORIZON, mixture_e

DISCORDANCE = (0.02, 0.05, 0.15, 0.3, 0.6, 1.0)
N_MAX = (20, 60, 200)
POWER_P = (0.6, 0.7, 0.8)
HARM_P = 0.45
# Case 3's Monte Carlo cells (n_max, d): d = 1.0 is where the null rate is highest at every
# n_max (case 1); d = 0.3 where runs are long, but n_max 200 there costs ~25 s per family size
# and adds nothing the per-rep agreement with the DP does not already show.
FAMILY_CELLS = ((20, 0.3), (20, 1.0), (60, 0.3), (60, 1.0), (200, 1.0))
CHUNK = 8
ALPHA = 0.05
TARGET_FA = 0.05
TARGET_SE = 0.005
TINY_REPS = 20  # --tiny (tests/bench/test_bench_tiny.py)
TINY_RUN_TESTS = 6  # --tiny: the run-level DP over this many tests
_REL_SLACK = 1e-9  # the gate's own slack in accept_reachable
_PAIR = {1: (False, True), -1: (True, False), 0: (True, True)}  # g -> (base, cand)


def stage1_of(horizon: int) -> int:
    return round(2 * horizon / 3)


def chunked(n: np.ndarray | int, horizon: int) -> np.ndarray:
    return np.minimum(np.ceil(np.asarray(n) / CHUNK) * CHUNK, horizon)


# --------------------------------------------------------------------------- exact DP


@dataclass(frozen=True)
class Exact:
    final: float  # accepted at the gate
    prov: float  # provisional at the stage-1 end
    kept: float  # provisional and the continuation crossed
    gate_units: float  # mean, chunked, up to the gate's decision
    test_units: float  # mean, chunked, up to the end of the whole test
    families: float  # mean families of the whole test, unchunked

    @property
    def test(self) -> float:
        return self.final + self.kept


@cache
def _mixture_table(size: int) -> np.ndarray:
    """M[w, l] = mixture_e(w, l) from the real function (bit-identical comparisons)."""
    return np.array([[mixture_e(w, k) for k in range(size + 1)] for w in range(2 * size + 1)])


def _final_look_ends(params: GateParams, H: int, level: float) -> np.ndarray | None:
    """The final look's acceptance chance at every end (W, L) of a whole ladder of H, from the
    real `SequentialGate.final_look_chance`: 1 at W >= c(W + L), γ(W + L) one win short (the
    coin, `GateParams.final_look_coin`), 0 elsewhere; None for a test that takes no final look.
    Rows run to W = 2H so `accept_reachable`'s "k more wins" can be read off a slice. Cells
    with W + L > H are no state of the test (they carry no mass); they keep the value the
    boolean version of this bench gave them (c = H + 2 past the ladder), so with the coin off
    every mask, and so every float sum over one, is the same as before the coin."""
    gate = SequentialGate(params, horizon=H, singletons=True)
    if not gate.final_look:
        return None
    assert gate.threshold == level, (gate.threshold, level)  # the level the DP walks at
    w = np.arange(2 * H + 1)[:, None]
    l_ = np.arange(H + 1)[None, :]
    ends = np.where(w >= H + 2, 1.0, 0.0) * np.ones_like(l_)
    for D in range(H + 1):
        for wins in range(D + 1):
            ends[wins, D - wins] = gate.final_look_chance(wins, D - wins)
    return ends


@dataclass(frozen=True)
class StepRule:
    """The gate's decision at one step n, over the (W, L) grid, in its order of checks."""

    acc: np.ndarray  # accepted for sure: the threshold, or at n = H W >= c(W + L)
    reject: np.ndarray  # harm, futility, no signal, or curtailed with the coin averaged
    prov: np.ndarray  # provisional accept at the stage-1 end
    # n = H: the chance γ a state one win short of c(W + L) is accepted on the coin (0 where
    # acc or nothing); None when no state has one (no final look, or the coin off)
    chance: np.ndarray | None = None
    # n < H: states the DP goes on with only because an end with chance in (0, 1) is still
    # reachable: a test whose coin is at or above that chance curtails them (`replay`)
    on_coin: np.ndarray | None = None


@dataclass(frozen=True)
class DPRule:
    per_n: dict[int, StepRule]  # n = 1..H
    ends: np.ndarray | None  # `_final_look_ends`


@cache
def _masks(params: GateParams, horizon: int, stage1: int) -> DPRule:
    """Per step n (1..H) the gate's decision rule over the (W, L) grid (`StepRule`).

    The final look's coin (`GateParams.final_look_coin`) is averaged over: at n = H a state one
    win short of c(W + L) is accepted with its chance γ (`StepRule.chance`, the expectation over
    a uniform coin), and curtailment stops a state only once no reachable end has a chance > 0
    (what the real gate does at coin 0). Curtailment never changes a decision, so every accept
    probability is exact for the coin-averaged gate; its unit counts are an upper bound: the
    real test, at coin u, curtails once no reachable end has a chance above u."""
    M = _mixture_table(max(N_MAX + (horizon,)))
    H = horizon
    w = np.arange(H + 1)[:, None]
    l_ = np.arange(H + 1)[None, :]
    e_win = M[: H + 1, : H + 1]
    e_harm = M[: H + 1, : H + 1].T
    level = params.accept_level(H, singletons=True)  # the DP walks ±1/0 outcomes: the lattice
    ends = _final_look_ends(params, H, level)
    looks = ends is not None
    # reach_any[rem] / reach_sure[rem]: with rem families left, some end with a chance > 0 /
    # of 1 is reachable by k more wins and the rest ties (`accept_reachable`; a loss never
    # helps), built up one rem at a time
    reach_any: list[np.ndarray] = []
    reach_sure: list[np.ndarray] = []
    if looks:
        assert ends is not None
        reach_any, reach_sure = [ends[: H + 1] > 0], [ends[: H + 1] >= 1]
        for rem in range(1, H):
            reach_any.append(reach_any[-1] | (ends[rem : rem + H + 1] > 0))
            reach_sure.append(reach_sure[-1] | (ends[rem : rem + H + 1] >= 1))
    crossed = e_win >= level
    per_n = {}
    for n in range(1, H + 1):
        acc = crossed | reach_sure[0] if looks and n == H else crossed
        chance = None
        if looks and n == H:
            assert ends is not None
            coin = np.where(acc, 0.0, ends[: H + 1])
            chance = coin if coin.any() else None
        harm = ~acc & (e_harm >= params.e_rollback)
        fut = np.zeros_like(acc)
        if params.e_futility is not None:
            fut = ~acc & ~harm & (e_harm >= params.e_futility)
        free = ~(acc | harm | fut)
        rem = H - n
        curt = np.zeros_like(acc)
        on_coin = None
        if params.curtail and n < H:
            best = M[rem : rem + H + 1, : H + 1]  # mixture_e(W + rem, L)
            reach = best * (1.0 + _REL_SLACK) >= level
            curt = free & ~(reach | reach_any[rem] if looks else reach)
            if looks:
                open_on_coin = free & ~(reach | reach_sure[rem]) & reach_any[rem]
                on_coin = open_on_coin if open_on_coin.any() else None
        prov = np.zeros_like(acc)
        if n == stage1 < H and not looks:
            net = w - l_
            prov = (
                free
                & ~curt
                & (e_win >= params.e_provisional)
                & (net >= params.w_net_min)
                & (net / (n + params.shrink_k) >= params.delta_min)
            )
        nosig = np.zeros_like(acc)
        after = params.no_signal_after(H)
        if after is not None and after <= n < H and not looks:
            nosig = free & (w <= l_)
        per_n[n] = StepRule(acc, harm | fut | curt | nosig, prov & ~nosig, chance, on_coin)
    return DPRule(per_n, ends)


def _accept_on_coin(P: np.ndarray, rule: StepRule) -> tuple[float, np.ndarray]:
    """The mass the final look's coin accepts at this step, averaged over the coin (γ of each
    state one win short), and what is left of P: the (1 − γ) rest goes on to the rejects."""
    if rule.chance is None:
        return 0.0, P
    on_coin = P * rule.chance
    return float(on_coin.sum()), P - on_coin


def _step(P: np.ndarray, pw: float, pl: float, pt: float) -> np.ndarray:
    out = pt * P
    out[1:, :] += pw * P[:-1, :]
    out[:, 1:] += pl * P[:, :-1]
    return out


def exact_cell(params: GateParams, horizon: int, d: float, p: float) -> Exact:
    """Every outcome's exact probability, the final look's coin averaged over (`_masks`: the
    accept rates are exact, the unit counts an upper bound when the coin is on)."""
    H, s1 = horizon, stage1_of(horizon)
    per_n = _masks(params, H, s1).per_n
    pw, pl, pt = d * p, d * (1 - p), 1 - d
    P = np.zeros((H + 1, H + 1))
    P[0, 0] = 1.0
    Q = np.zeros_like(P)  # provisional accepts in their continuation
    gate_end = np.zeros(H + 1)  # mass whose gate decision falls at n
    test_end = np.zeros(H + 1)  # mass whose whole test ends at n
    final = prov_total = kept = 0.0
    for n in range(1, H + 1):
        P = _step(P, pw, pl, pt)
        rule = per_n[n]
        acc, stop_rej, prov = rule.acc, rule.reject, rule.prov
        on_coin, P = _accept_on_coin(P, rule)
        a = P[acc].sum() + on_coin
        r = P[stop_rej].sum()
        final += a
        gate_end[n] += a + r
        test_end[n] += a + r
        P[acc | stop_rej] = 0.0
        if n > s1:
            # a provisional accept's probation is a resumed test: no final look, no coin
            Q = _step(Q, pw, pl, pt)
            k = Q[acc].sum()
            rb = Q[stop_rej].sum()
            kept += k
            test_end[n] += k + rb
            Q[acc | stop_rej] = 0.0
        if prov.any():
            moved = np.where(prov, P, 0.0)
            pv = moved.sum()
            prov_total += pv
            gate_end[n] += pv
            Q = moved
            P = np.where(prov, 0.0, P)
    rest_p, rest_q = P.sum(), Q.sum()
    gate_end[H] += rest_p
    test_end[H] += rest_p + rest_q
    ns = np.arange(H + 1)
    return Exact(
        final=float(final),
        prov=float(prov_total),
        kept=float(kept),
        gate_units=float(gate_end @ chunked(ns, H)),
        test_units=float(test_end @ chunked(ns, H)),
        families=float(test_end @ ns),
    )


# --------------------------------------------------------------------------- fixed McNemar


@cache
def mcnemar_power(n: int, d: float, p: float, alpha: float = ALPHA) -> float:
    """Power of the one-sided exact McNemar test (W > L) on n paired units, exactly:
    D ~ Bin(n, d) discordant, W | D ~ Bin(D, p), reject when P(Bin(D, 1/2) >= W) <= alpha."""
    if n <= 0:
        return 0.0
    total = 0.0
    pmf_d = binom.pmf(np.arange(n + 1), n, d)
    for D in range(1, n + 1):
        w = np.arange(D + 1)
        pval = binom.sf(w - 1, D, 0.5)
        ok = w[pval <= alpha]
        if ok.size:
            total += pmf_d[D] * binom.sf(ok[0] - 1, D, p)
    return float(total)


# --------------------------------------------------------------------------- Monte Carlo


@dataclass(frozen=True)
class MC:
    reps: int
    final: float
    prov: float
    kept: float
    gate_units: float
    test_units: float
    gate_families: float  # mean, unchunked

    @property
    def se_final(self) -> float:
        return se(self.final, self.reps)

    @property
    def se_kept(self) -> float:
        return se(self.kept, self.reps)


def se(rate: float, reps: int) -> float:
    """Binomial standard error; at a rate of 0 it uses 1/reps (one event) so it is not 0."""
    return math.sqrt(max(rate * (1 - rate), 1.0 / reps) / reps)


def harness_coin(rng: np.random.Generator, params: GateParams) -> float | None:
    """The coin the harness gives every fresh eprocess test for its final look
    (app/harness/training/step.py `gate_spec`: `draw_coin` of the run's seed and the test's
    id), here a uniform from the rep's seeded rng. With `final_look_coin` off the gate ignores
    any coin, so none is drawn: the rep's other draws, and so every figure, stay those of the
    gate without the coin."""
    return float(rng.random()) if params.final_look_coin else None


def run_real(
    families: list[tuple[str, list[tuple[str, bool, bool]]]],
    params: GateParams,
    horizon: int,
    stage1: int,
    coin: float | None = None,
) -> tuple[str, int, int]:
    """The real gate, given `coin` for its final look (`harness_coin`), over families in
    order, then the real ProbationTest (a resumed test: no final look, no coin) on a
    provisional accept over the families after stage 1. Returns (verdict, gate families, test
    families), verdict in accept / keep / rollback / reject."""
    singletons = all(len(pairs) == 1 for _, pairs in families)  # as the harness's rule sets it
    gate = SequentialGate(params, horizon=horizon, stage1=stage1, singletons=singletons, coin=coin)
    i = 0
    while not gate.done and i < len(families):
        gate.observe_family(*families[i])
        i += 1
    decision = gate.finish(exhausted=not gate.done)
    if decision.action != "accept_provisional":
        return decision.action, decision.n_used, decision.n_used
    probation = ProbationTest(params, decision.continuation)
    while not probation.done and i < len(families):
        probation.observe_family(*families[i])
        i += 1
    verdict, final = probation.verdict()
    return verdict, decision.n_used, final.n_used


def mc_summary(results: list[tuple[str, int, int]], horizon: int) -> MC:
    reps = len(results)
    verdicts = [v for v, _, _ in results]
    gate_n = np.array([g for _, g, _ in results])
    test_n = np.array([t for _, _, t in results])
    return MC(
        reps=reps,
        final=verdicts.count("accept") / reps,
        prov=sum(v in ("keep", "rollback") for v in verdicts) / reps,
        kept=verdicts.count("keep") / reps,
        gate_units=float(chunked(gate_n, horizon).mean()),
        test_units=float(chunked(test_n, horizon).mean()),
        gate_families=float(gate_n.mean()),
    )


def draw_outcomes(rng: np.random.Generator, reps: int, n: int, d: float, p: float) -> np.ndarray:
    u = rng.random((reps, n))
    return np.where(u < d * p, 1, np.where(u < d, -1, 0)).astype(np.int8)


def replay(
    row: list[int], params: GateParams, horizon: int, coin: float | None = None
) -> tuple[str, int, int]:
    """The DP's decision rule on one path of family outcomes (same masks as `exact_cell`) for
    a test with this `coin` (None: a gate given none), in `run_real`'s return format:
    comparing the two rep by rep checks that the real code decides exactly as the DP assumes.
    The coin decides what the DP averages: an accept one win short of the final look's level
    (coin < γ), and where the gate curtails (once no reachable end has a chance above it)."""
    s1 = stage1_of(horizon)
    dp = _masks(params, horizon, s1)
    w = l_ = 0
    gate_n = None
    for n, g in enumerate(row[:horizon], start=1):
        w, l_ = w + (g == 1), l_ + (g == -1)
        rule = dp.per_n[n]
        on_coin = coin is not None and rule.chance is not None and coin < rule.chance[w, l_]
        if rule.acc[w, l_] or on_coin:
            return ("accept", n, n) if gate_n is None else ("keep", gate_n, n)
        if rule.reject[w, l_] or _curtailed_at(dp, rule, n, w, l_, coin):
            return ("reject", n, n) if gate_n is None else ("rollback", gate_n, n)
        if gate_n is None and rule.prov[w, l_]:
            gate_n = n
    return ("reject", horizon, horizon) if gate_n is None else ("rollback", gate_n, horizon)


def _curtailed_at(dp: DPRule, rule: StepRule, n: int, w: int, l_: int, coin: float | None) -> bool:
    """Whether a test with this coin curtails a state the coin-averaged DP goes on with: only
    ends with a chance in (0, 1) are still reachable, and the coin is at or above the best of
    them (`SequentialGate.accept_reachable`; with no coin none of them counts)."""
    if rule.on_coin is None or not rule.on_coin[w, l_]:
        return False
    assert dp.ends is not None
    best = float(dp.ends[w : w + len(dp.per_n) - n + 1, l_].max())  # k more wins, rest ties
    return coin is None or coin >= best


def mc_families(
    rng: np.random.Generator,
    reps: int,
    params: GateParams,
    horizon: int,
    d: float,
    p: float,
    size: int,
) -> tuple[MC, int]:
    """Families of `size` units sharing one outcome, through observe_family, each rep's test
    with its own coin (`harness_coin`). Also returns in how many reps the real code's
    (verdict, gate families, test families) equals `replay`'s at the same coin."""
    s1 = stage1_of(horizon)
    out, agree = [], 0
    for row in draw_outcomes(rng, reps, horizon, d, p).tolist():
        coin = harness_coin(rng, params)
        fams = [
            (f"f{i}", [(f"f{i}.{k}", *_PAIR[g]) for k in range(size)]) for i, g in enumerate(row)
        ]
        result = run_real(fams, params, horizon, s1, coin)
        agree += result == replay(row, params, horizon, coin)
        out.append(result)
    return mc_summary(out, horizon), agree


# --------------------------------------------------------------------------- case 2: the ladder


def _ladder_api():
    """The real ladder code, imported late so the exact parts run even if it is mid-change."""
    from app.harness.training.batching import build_batches
    from app.harness.training.gate_ladder import GatePools
    from core.evolution.diagnose import MAX_FAILURES_PER_PACK, MAX_SUCCESSES_PER_PACK
    from core.types import Question, QuestionUnit

    return (
        build_batches,
        GatePools,
        MAX_FAILURES_PER_PACK,
        MAX_SUCCESSES_PER_PACK,
        Question,
        QuestionUnit,
    )


@dataclass
class LadderWorld:
    """One task type's gate-eligible pool in the default split's proportions (diagnosis :
    validation : test = 2 : 1 : 1), sized so the ladder holds about n_max families after the
    case pack is left out. Singleton families (each unit its own family)."""

    n_max: int
    units: list
    questions: list
    diagnosis: list  # Question objects of the diagnosis pool
    validation_ids: set
    test_ids: set
    pools: object


def ladder_world(n_max: int, seed: int, draws: int = 1) -> LadderWorld:
    """`draws` > 1: every gate unit also has draws 1..draws-1 on the ladder (`[gate] draws`)."""
    build_batches, GatePools, max_f, max_s, Question, QuestionUnit = _ladder_api()
    n_diag = round(2 * n_max / 3) + max_f + max_s
    n_val = n_max - round(2 * n_max / 3)
    n_test = n_val
    questions, units = [], []
    for i in range(n_diag + n_val + n_test):
        q = Question(question_id=f"q{i:04d}", task_type="t", question=f"question {i}", answer="a")
        questions.append(q)
        units.append(QuestionUnit(unit_id=q.unit_id, task_type="t", questions=(q,)))
    diagnosis = questions[:n_diag]
    validation_ids = {q.unit_id for q in questions[n_diag : n_diag + n_val]}
    test_ids = {q.unit_id for q in questions[n_diag + n_val :]}
    pools = GatePools.build(
        units,
        validation_ids,
        test_ids,
        seed=seed,
        independent_units=draws > 1,
        draws=draws,
        drawable=frozenset(u.unit_id for u in units),
    )
    return LadderWorld(n_max, units, questions, diagnosis, validation_ids, test_ids, pools)


def case_pack(
    world: LadderWorld, rollout: dict[str, bool], correctness: dict[str, bool], seed: int
) -> set[str]:
    """The units the candidate is written from: the step's batch comes from the real
    `build_batches` (every unit wrong in `correctness` + 15% of the right ones), and the pack
    holds up to MAX_FAILURES_PER_PACK failures and MAX_SUCCESSES_PER_PACK successes of the
    batch's rollouts, by question id (as `build_packs` picks them)."""
    build_batches, _, max_f, max_s, _, _ = _ladder_api()
    batches, _ = build_batches(world.diagnosis, correctness, 48, 2, seed=seed, correct_ratio=0.15)
    batch = sorted(q.unit_id for q in batches[0]) if batches else []
    failures = [u for u in batch if not rollout[u]][:max_f]
    successes = [u for u in batch if rollout[u]][:max_s]
    return {*failures, *successes}


def paired(base: dict[str, bool], cand: dict[str, bool]):
    """A family's (unit, baseline, candidate) pairs from two runs' outcomes."""
    return lambda family: [(u, base[u], cand[u]) for u in family[1]]


@cache
def accept_given_discordant(params: GateParams, horizon: int) -> np.ndarray | None:
    """a[D] = P(a null test over a ladder of `horizon` singleton families is accepted, at the
    gate or kept | exactly D of them discordant, each a fair coin), by `exact_sequence` on D
    discordant families then H − D ties; None for a test that takes no final look.

    With the final look the gate's decision depends only on the sequence of wins and losses:
    its e-values are functions of (W, L), its level is fixed by the horizon, the harm stop too,
    curtailment never changes a decision, and there is no provisional accept and no "no
    signal" stop. So the order of the ties does not matter, and a null test over families of
    discordances d_1..d_H is accepted with probability sum_D PB(D) a[D], PB the Poisson
    binomial law of D (`mc_ladder` checks the identity on its first reps against
    `exact_sequence` in the ladder's own order)."""
    H = horizon
    dp = _masks(params, H, stage1_of(H))
    if dp.ends is None:
        return None
    last = dp.per_n[H]
    # the share of a state at the end of the ladder the final look accepts, coin averaged
    at_end = last.acc + (last.chance if last.chance is not None else 0.0)
    # `exact_sequence` of D discordant families then ties, for every D in one walk: the first
    # D steps are the same for every D' >= D, and over the ties that follow a state keeps its
    # (W, L), so it is accepted only by the final look at the end (the threshold and the harm
    # stop were checked at step D with the same (W, L); curtailment changes no decision)
    P = np.zeros((H + 1, H + 1))
    P[0, 0] = 1.0
    accepted = 0.0
    rates = np.zeros(H + 1)
    rates[0] = float((P * at_end).sum())
    for n in range(1, H + 1):
        P = _step(P, 0.5, 0.5, 0.0)
        rule = dp.per_n[n]
        assert not rule.prov.any()  # the final look runs every test to the end of its ladder
        on_coin, P = _accept_on_coin(P, rule)
        accepted += float(P[rule.acc].sum()) + on_coin
        P[rule.acc | rule.reject] = 0.0
        rates[n] = accepted + (float((P * at_end).sum()) if n < H else 0.0)
    return rates


def poisson_binomial(probs: Sequence[float]) -> np.ndarray:
    """P(D = k), k = 0..n, for D the number of successes of independent Bernoulli(probs)."""
    pmf = np.zeros(len(probs) + 1)
    pmf[0] = 1.0
    for i, q in enumerate(probs, start=1):
        pmf[1 : i + 1] = pmf[1 : i + 1] * (1 - q) + pmf[:i] * q
        pmf[0] *= 1 - q
    return pmf


LADDER_IDENTITY_CHECKS = 3  # reps per cell whose conditional rate is also walked in order


def mc_ladder(
    rng: np.random.Generator, reps: int, params: GateParams, world: LadderWorld, warm: bool
) -> tuple[MC, float, float | None]:
    """Null through the real ladder. Per rep: p_u ~ Beta(0.5, 0.5); the baseline run is one
    Bernoulli(p_u) draw per unit and is the cached baseline the gate compares with; the
    candidate is an independent Bernoulli(p_u) draw (null). Cold (epoch 1): the batch is chosen
    from the baseline run's outcomes and the rollouts are those same outcomes (a cache hit),
    so the excluded case pack depends on the very baseline outcomes compared. Warm (a later
    epoch): batch and rollouts come from another noisy observation round. The ladder is
    `GatePools.ladder_for(...)` truncated to n_max; the gate is the acceptance rule
    app/harness/training/validate.py runs (core/evolution/acceptance.py, driven by `run_rule`), the
    probation runs as in slow_update.py (fresh anchor and candidate runs on the reserved stage-2
    families). Returns the summary, the mean horizon, and for a warm ladder whose test takes
    the final look the exact rate given each rep's ladder and p_u, averaged over the reps.

    Why warm has an exact conditional rate: its ladder is chosen from a round independent of
    the two runs compared, so given p_u and the ladder, unit u is a win or a loss with
    probability p_u(1 − p_u) each, independently; `accept_given_discordant` turns those
    discordances into the gate's exact acceptance probability. Each rep's term is <= alpha
    exactly (a[D] <= alpha for every D, tests/core/test_stats.py), so their mean is too; the
    real code's verdicts are the Monte Carlo column beside it. Cold ladders leave out units by
    the compared baseline's own outcomes, so no such formula holds there: Monte Carlo only."""
    ids = [u.unit_id for u in world.units]
    out, horizons = [], []
    conditional: list[float] = []
    agree = 0
    for r in range(reps):
        p = rng.beta(0.5, 0.5, len(ids))
        # baseline run, candidate, another observation round, probation anchor and candidate
        draws = rng.random((5, len(ids))) < p
        base, cand, other, anchor, cand2 = (
            {u: bool(x) for u, x in zip(ids, row, strict=True)} for row in draws
        )
        seen = other if warm else base
        key = f"rep{r}-e{2 if warm else 1}-s0-"
        exclude = case_pack(world, seen, seen, seed=1000 * (2 if warm else 1) + r)
        ladder = world.pools.ladder_for("t", exclude, key=key).truncated(world.n_max)
        horizons.append(len(ladder.families))
        a = accept_given_discordant(params, len(ladder.families)) if warm else None
        if a is not None:
            p_of = dict(zip(ids, p.tolist(), strict=True))
            ds = [2 * p_of[us[0]] * (1 - p_of[us[0]]) for _, us in ladder.families]
            rate = float(poisson_binomial(ds) @ a)
            if r < LADDER_IDENTITY_CHECKS:
                in_order = sum(exact_sequence(params, len(ds), ds))
                assert abs(rate - in_order) < 1e-9, (rate, in_order)
            conditional.append(rate)
        # The Validator's own rule, driven without the harness. Stage 2: the gate's own (if it
        # goes on) uses the cached baseline; a probation uses a fresh anchor run. Both are null
        # draws with the same p_u.
        coin = harness_coin(rng, params)  # a fresh test over its whole ladder: the harness's
        rule = make_rule(
            AcceptanceStrategy.EPROCESS,
            RuleSetup(ladder.stage1, ladder.stage2, params, coin=coin),
        )
        settled = run_rule(rule, paired(base, cand))
        decision = settled.decision
        if a is not None:  # the real rule decides as the DP behind the exact rate
            row = [int(cand[us[0]]) - int(base[us[0]]) for _, us in ladder.families]
            agree += replay(row, params, len(row), coin)[0] == decision.action
        if decision.action != "accept_provisional":
            out.append((decision.action, decision.n_used, decision.n_used))
            continue
        probation = ProbationTest(params, decision.continuation)
        for f, us in settled.reserved:
            if probation.done:
                break
            probation.observe_family(f, [(u, anchor[u], cand2[u]) for u in us])
        verdict, final = probation.verdict()
        out.append((verdict, decision.n_used, final.n_used))
    exact = float(np.mean(conditional)) if conditional and agree == reps else None
    return mc_summary(out, world.n_max), float(np.mean(horizons)), exact


def mc_draws(
    rng: np.random.Generator,
    reps: int,
    params: GateParams,
    world: LadderWorld,
    draws: int,
    copied: bool,
    changed: bool = False,
) -> tuple[float, float]:
    """Case 8b, `[gate] draws`: a null edit through the real ladder with `draws` draws of every
    question. Per rep: p_u ~ Beta(0.5, 0.5) per question; every draw of the baseline and of the
    candidate is its own Bernoulli(p_u) (answered afresh), or with `copied` every draw repeats
    draw 0's outcome (a cache that ignores the sample index: the assumption broken). The batch,
    the case pack (each shown question takes its draws with it) and the ladder are the real
    code's; the rule is the Validator's, final look included. With `changed` (`[gate]
    draws_for = "changed"`) the ladder is in rounds and a draw is evaluated only once its
    question's answers differed in an earlier round. Returns P(accepted) and the mean number
    of observations a ladder holds."""
    ids = [u.unit_id for u in world.units]
    hits, horizons = 0, []
    for r in range(reps):
        p = rng.beta(0.5, 0.5, len(ids))
        base_rows = rng.random((draws, len(ids))) < p
        cand_rows = rng.random((draws, len(ids))) < p
        if copied:
            base_rows[:], cand_rows[:] = base_rows[0], cand_rows[0]
        base, cand = {}, {}
        for k in range(draws):
            for i, u in enumerate(ids):
                key = u if k == 0 else f"{u}#d{k}"
                base[key], cand[key] = bool(base_rows[k, i]), bool(cand_rows[k, i])
        seen = {u: base[u] for u in ids}
        exclude = case_pack(world, seen, seen, seed=3000 + r)
        ladder = world.pools.ladder_for("t", exclude, key=f"rep{r}-e1-s0-", in_rounds=changed)
        if changed:  # as the harness fits it (app/harness/training/step.py `gate_spec`)
            ladder = world.pools.fitted(ladder, params.n_max, CALIBRATION_MAX_HORIZON)[1]
        else:
            ladder = ladder.truncated(params.n_max)
        horizons.append(len(ladder.families))
        redraws = world.pools.redraws(ladder) if changed else {}
        coin = harness_coin(rng, params)
        rule = make_rule(
            AcceptanceStrategy.EPROCESS,
            RuleSetup(ladder.stage1, ladder.stage2, params, redraws=redraws, coin=coin),
        )
        hits += run_rule(rule, paired(base, cand)).decision.action in ("accept", "keep")
    return hits / reps, float(np.mean(horizons))


def report_draws(
    args: argparse.Namespace, params: GateParams
) -> tuple[list[tuple[float, str]], list[float]]:
    """Case 8b: gate draws answered afresh (the assumption) and copied (the price)."""
    print(
        "\n== 8b. gate draws (`[gate] draws`): a null edit, every question's draws on the ladder "
        "(real ladder and case pack, Validator's rule, Monte Carlo). 'afresh': each draw its own "
        "sample (what the harness does: its sample index, a separate cache key); 'copied': "
        "every draw repeats draw 0 (an agent that ignores the sample index and caches); "
        "'changed': afresh, a draw evaluated only once its question's answers differed "
        '(`draws_for = "changed"`), and the same copied'
    )
    print(
        f"{'questions':>9} {'draws':>5} {'ladder':>7} {'afresh':>7} {'s.e.':>6} {'copied':>7}"
        f" {'changed':>7} {'s.e.':>6} {'copied':>7}"
    )
    worst = worst_changed = 0.0
    worst_copied = 0.0
    finals: list[tuple[float, str]] = []
    ses: list[float] = []
    for n in (20, 60):
        for draws in (2, 3):
            world = ladder_world(n, seed=1, draws=draws)
            rng = np.random.default_rng([args.seed, 14, n, draws])
            rate, horizon = mc_draws(rng, args.reps, params, world, draws, copied=False)
            rng = np.random.default_rng([args.seed, 15, n, draws])
            copied, _ = mc_draws(rng, args.reps, params, world, draws, copied=True)
            rng = np.random.default_rng([args.seed, 16, n, draws])
            changed, _ = mc_draws(rng, args.reps, params, world, draws, False, changed=True)
            rng = np.random.default_rng([args.seed, 17, n, draws])
            changed_copied, _ = mc_draws(rng, args.reps, params, world, draws, True, changed=True)
            worst, worst_copied = max(worst, rate), max(worst_copied, copied, changed_copied)
            worst_changed = max(worst_changed, changed)
            finals.append((rate, f"case 8b {n} questions, {draws} draws (MC)"))
            finals.append((changed, f"case 8b {n} questions, {draws} draws of changed (MC)"))
            ses += [se(rate, args.reps), se(changed, args.reps)]
            print(
                f"{n:9d} {draws:5d} {horizon:7.1f} {fmt_rate(rate)} {se(rate, args.reps):6.4f} "
                f"{fmt_rate(copied)} {fmt_rate(changed)} {se(changed, args.reps):6.4f} "
                f"{fmt_rate(changed_copied)}"
            )
    print(f"RESULT gate.validity.draws_null {worst:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.validity.draws_changed_null {worst_changed:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.validity.draws_copied {worst_copied:.4f} rate")
    return finals, ses


# --------------------------------------------------------------------------- the harness's cases

LATER_H = 200  # probation with a later edit: families of the whole test (stage 1 = 2H/3)
LATER_D = (0.15, 0.3, 1.0)  # discordance of the null provisional edit
LATER_GOOD = (0.3, 0.8)  # the later, good edit of the same type: discordance, P(W | discordant)
CONT_POOL, CONT_SEG = 60, 20  # continued test: families in the pool, families per step (n_max)
CONT_D = (0.3, 1.0)


def _harness_api():
    """The harness's own policy code, imported late (as `_ladder_api`)."""
    from app.harness.training.continuation import (
        SegmentRule,
        first_segment_gate,
        goes_on,
        resumed_gate,
    )
    from app.harness.training.step import on_probation
    from app.harness.training.train_state import Best, Probation, TrainState

    return (
        SegmentRule,
        first_segment_gate,
        goes_on,
        resumed_gate,
        on_probation,
        (
            Best,
            Probation,
            TrainState,
        ),
    )


def _state_on_probation(continuation: GateState) -> object:
    """A run state with task type "t" on probation, as `step.accept` leaves it."""
    *_, (Best, Probation, TrainState) = _harness_api()
    best = Best(skills="skills/v1", prompts="prompts/v1", val_acc=0.5, run_id="r", epoch=0)
    probation = Probation("t", "t.md", "before", "v2", continuation, (), (), 1, 0)
    return TrainState("train1", {}, best, 0.5, {}, probations={"t": probation})


def probation_with_later_edit(
    rng: np.random.Generator, reps: int, params: GateParams, d: float, edits_wait: bool | None
) -> tuple[float, float, int, int]:
    """A null edit (singleton families, discordance d) and a good later edit of the same type.
    The null edit's test runs through the real SequentialGate (stage 1, then stage 2 unless a
    provisional accept leaves stage 2 to its probation) and ProbationTest. Whether the later
    edit lands during the probation is the harness's rule (`step.on_probation`) when
    `edits_wait` is None, or forced (False: the code before it). When it lands, the probation
    compares "null + later" with the file before the null edit: a family's outcome is the sign
    of the two edits' summed outcomes. Returns P(the null edit is accepted at the gate or kept),
    P(kept | provisional), the number of provisionals and the reps whose verdict equals the DP
    rule's (`replay`) on the null edit's own outcomes."""
    *_, on_probation, _ = _harness_api()
    s1 = stage1_of(LATER_H)
    verdicts: list[str] = []
    agree = 0
    d_good, p_good = LATER_GOOD
    null = draw_outcomes(rng, reps, LATER_H, d, 0.5)
    good = draw_outcomes(rng, reps, LATER_H, d_good, p_good)
    for row, later in zip(null.tolist(), good.tolist(), strict=True):
        # the null edit's fresh test over its whole ladder, with the harness's coin (its
        # probation, a resumed test, takes none)
        coin = harness_coin(rng, params)
        gate = SequentialGate(params, horizon=LATER_H, stage1=s1, singletons=True, coin=coin)
        i = 0
        while not gate.done:
            gate.observe(f"u{i}", *_PAIR[row[i]])
            i += 1
        decision = gate.finish(exhausted=False)
        verdict = decision.action
        if decision.action == "accept_provisional":
            state = _state_on_probation(decision.continuation)
            waits = on_probation(state, "t") if edits_wait is None else edits_wait
            test = ProbationTest(params, decision.continuation)
            for i in range(s1, LATER_H):
                g = row[i] if waits else int(np.sign(row[i] + later[i]))
                test.observe_family(f"u{i}", [(f"u{i}", *_PAIR[g])])
                if test.done:
                    break
            verdict = test.verdict()[0]
        verdicts.append(verdict)
        agree += verdict == replay(row, params, LATER_H, coin)[0]
    n_prov = sum(v in ("keep", "rollback") for v in verdicts)
    kept = verdicts.count("keep")
    rate = (verdicts.count("accept") + kept) / reps
    return rate, kept / n_prov if n_prov else math.nan, n_prov, agree


def continued_test(
    rng: np.random.Generator, reps: int, params: GateParams, d: float, calibrated: bool
) -> tuple[float, float]:
    """A null edit over a pool of CONT_POOL singleton families, CONT_SEG per step, through the
    real ladder (`GatePools.ladder_for` leaving out every unit the test observed, truncated to
    the segment) and the real continuation code: the first segment at the level for the whole
    ladder (`first_segment_gate`), then, while `goes_on`, the same e-process on fresh families
    (`resumed_gate`). `calibrated` False is the same continuation at the level for one
    segment (what the gate's level would be without the whole-ladder horizon). Returns
    P(accepted in any segment) and the mean number of segments."""
    _, GatePools, _, _, Question, QuestionUnit = _ladder_api()
    SegmentRule, first_segment_gate, goes_on, resumed_gate, _, _ = _harness_api()
    units = []
    for i in range(CONT_POOL):
        q = Question(question_id=f"c{i:03d}", task_type="t", question=f"q {i}", answer="a")
        units.append(QuestionUnit(unit_id=q.unit_id, task_type="t", questions=(q,)))
    pools = GatePools.build(units, set(), set(), seed=7)
    accepted, segments = 0, 0
    for r, row in enumerate(draw_outcomes(rng, reps, CONT_POOL, d, 0.5).tolist()):
        outcomes = {u.unit_id: _PAIR[g] for u, g in zip(units, row, strict=True)}
        pairs = paired(
            {u: b for u, (b, _) in outcomes.items()}, {u: c for u, (_, c) in outcomes.items()}
        )
        used: set[str] = set()
        test, before = None, 0
        for k in range(CONT_POOL):
            full = pools.ladder_for("t", used, key=f"rep{r}-s{k}-", with_stage2=False)
            seg = full.truncated(CONT_SEG)
            if not seg.families:
                break
            # segments of a cut ladder: the harness gives their gates no coin (validate.py
            # `GateSpec.rule`: `first_segment_gate`, `resumed_gate`), nor does the bench
            setup = RuleSetup(seg.stage1, (), params)
            if test is not None:
                gate = resumed_gate(params, test)
            elif calibrated:
                gate = first_segment_gate(params, seg, len(full.families))
            else:
                gate = SequentialGate(params, horizon=len(seg.families), singletons=True)
                gate.horizon = gate.stage1 = len(full.families)  # goes on at one segment's level
            rule = SegmentRule(setup, gate)
            decision = run_rule(rule, pairs).decision
            segments += 1
            test = rule.gate.state()
            used |= {e.unit_id for e in decision.evidence}
            if decision.action == "accept":
                accepted += 1
                break
            if not goes_on(decision, test, before):
                break
            before = decision.n_used
    return accepted / reps, segments / reps


REPROPOSAL_SHOWN = 4  # units the evolver is shown per step (left out of every later ladder)


def pooled_reproposal(
    rng: np.random.Generator, reps: int, params: GateParams, d: float, pooled: bool
) -> tuple[float, float]:
    """A null edit set the evolver proposes again at every step (the worst case), over a pool
    of CONT_POOL singleton units of which REPROPOSAL_SHOWN more are shown to the evolver each
    step, through the real ladder and continuation code. `pooled` True is the code: a test that
    stopped for want of a signal (`pools_evidence`) goes on, at its first level, over units it
    never observed (`resumed_gate`). False is what not blacklisting such edits would do without
    pooling: every re-proposal a new test at its own level over the current ladder. Returns
    P(accepted at some proposal) and the mean number of tests."""
    _, GatePools, _, _, Question, QuestionUnit = _ladder_api()
    SegmentRule, _, _, resumed_gate, _, _ = _harness_api()
    from app.harness.training.continuation import pools_evidence

    units = []
    for i in range(CONT_POOL):
        q = Question(question_id=f"p{i:03d}", task_type="t", question=f"q {i}", answer="a")
        units.append(QuestionUnit(unit_id=q.unit_id, task_type="t", questions=(q,)))
    pools = GatePools.build(units, set(), set(), seed=7)
    ids = [u.unit_id for u in units]
    accepted, tests = 0, 0
    for r, row in enumerate(draw_outcomes(rng, reps, CONT_POOL, d, 0.5).tolist()):
        outcomes = {u: _PAIR[g] for u, g in zip(ids, row, strict=True)}
        pairs = paired(
            {u: b for u, (b, _) in outcomes.items()}, {u: c for u, (_, c) in outcomes.items()}
        )
        order = np.random.default_rng([r, 11]).permutation(CONT_POOL)  # outcome-blind
        used: set[str] = set()
        test = None
        for step in range(CONT_POOL // REPROPOSAL_SHOWN):
            shown = {ids[i] for i in order[: (step + 1) * REPROPOSAL_SHOWN]}
            ladder = pools.ladder_for("t", shown | used, key=f"rep{r}-s{step}-", with_stage2=False)
            if not ladder.families:
                break
            setup = RuleSetup(ladder.stage1, (), params)
            if test is not None:  # a pooled test going on: resumed, no final look, no coin
                gate = resumed_gate(params, test)
            else:  # a fresh test over the whole ladder: the harness draws it a coin
                coin = harness_coin(rng, params)
                gate = SequentialGate(
                    params, horizon=len(ladder.families), singletons=True, coin=coin
                )
            decision = run_rule(SegmentRule(setup, gate), pairs).decision
            tests += 1
            if decision.action == "accept":
                accepted += 1
                break
            state = gate.state()
            if pooled:
                if not pools_evidence(decision, state):
                    break
                test = state
                used |= {e.unit_id for e in decision.evidence}
    return accepted / reps, tests / reps


# A candidate that bundles a useful rule with a decoy (bench/acceptance.py's world: a rule
# concerns a fifth of the units; the useful one turns a concerned unit the baseline got wrong
# right with probability 0.68, the decoy turns one it got right wrong with probability 0.2),
# tested as one candidate over H single units.
BUNDLE_SHARES = (0.2, 0.68, 0.2, 0.2)  # (useful concerns, its win, decoy concerns, its loss)
BUNDLE_H = (48, 150)


def bundle_with_decoy(
    rng: np.random.Generator,
    reps: int,
    params: GateParams,
    horizon: int,
    parts: tuple[bool, bool] = (True, True),
) -> tuple[float, float]:
    """(P(the candidate is accepted at the gate or kept), P(its decoy is also kept by the line
    check)). `parts` says which of (useful rule, decoy) the candidate carries: with both, the
    bundle as the evolver proposed it; with one, a candidate of that edit alone (an edit budget
    of 1), the same units' outcomes.

    The line check (app/harness/training/bundle_check.py) runs on the units the gate
    observed, and on a final accept on the rest of its ladder too (a provisional accept leaves
    them to its probation), with answers that repeat (temperature 0, as the simulated model):
    every loss here is the decoy's, so leaving the decoy out turns it right and leaving the
    useful rule out does not, and no win is the decoy's. So a decoy is dropped exactly when
    one of its losses is among the units the check sees."""
    c_use, win, c_dec, loss = BUNDLE_SHARES
    with_useful, with_decoy = parts
    kept = decoy_kept = 0
    for r in range(reps):
        u = rng.random((horizon, 2))
        useful = u[:, 0] < c_use
        decoy = (u[:, 0] >= c_use) & (u[:, 0] < c_use + c_dec)
        g = np.where(useful & with_useful, np.where(u[:, 1] < win, 1, 0), 0)
        g = np.where(decoy & with_decoy, np.where(u[:, 1] < loss, -1, 0), g)
        fams = [(f"b{r}.{i}", [(f"b{r}.{i}", *_PAIR[int(x)])]) for i, x in enumerate(g)]
        coin = harness_coin(rng, params)
        verdict, gate_n, _ = run_real(fams, params, horizon, stage1_of(horizon), coin)  # type: ignore[arg-type]
        if verdict not in ("accept", "keep"):
            continue
        kept += 1
        checked = with_useful and with_decoy  # a candidate of one edit is never checked
        seen = g if verdict == "accept" else g[:gate_n]
        decoy_kept += with_decoy and not (checked and bool((seen == -1).any()))
    return kept / reps, decoy_kept / reps


def falsely_independent(
    rng: np.random.Generator, reps: int, params: GateParams, families: int, d: float
) -> float:
    """A null edit on families of 3 near-duplicates that share one outcome, declared
    independent (`family_units = "independent"`): the gate counts each unit, so a family's
    outcome counts three times. P(accepted at the gate or kept)."""
    hits = 0
    horizon = 3 * families
    for r, row in enumerate(draw_outcomes(rng, reps, families, d, 0.5).tolist()):
        fams = [
            (f"x{r}.{i}.{k}", [(f"x{r}.{i}.{k}", *_PAIR[int(g)])])
            for i, g in enumerate(row)
            for k in range(3)
        ]
        coin = harness_coin(rng, params)
        verdict = run_real(fams, params, horizon, stage1_of(horizon), coin)  # type: ignore[arg-type]
        hits += verdict[0] in ("accept", "keep")
    return hits / reps


# --------------------------------------------------------------------------- relevance ladder

# Relevance levels of a family's question against the null edit's added text, with the
# share of families at each level and their discordance: the more the question names what
# the edit talks about, the likelier the edit changes its answer (the hardest case for an
# order chosen by relevance), but under the null a discordant family is a win or a loss with
# probability 1/2 at every level.
RELEVANCE_ADDED = "- In cases marked VOID or carryover, leave that entry out entirely."
RELEVANCE_LEVELS = (  # (marker words in the question, share of families, discordance)
    ("VOID carryover", 0.15, 1.0),
    ("VOID", 0.15, 0.6),
    ("REFUND", 0.7, 0.05),
)
RELEVANCE_CELLS = (20, 60, 200)
RELEVANCE_ORDERS = 10  # relevance ladders (stage-2 shuffles) computed exactly per cell


def relevance_world(n_max: int, seed: int):
    """Singleton families in the default split's stage proportions, each question naming
    the markers of its relevance level (assigned round-robin by share); returns the real
    GatePools, the stage-1 relevance scores from the real `relevance_scores`, and each
    family's discordance."""
    from app.harness.training.gate_ladder import GatePools
    from core.evolution.relevance import relevance_scores
    from core.types import Question, QuestionUnit

    n_diag = round(2 * n_max / 3)
    levels = [lv for lv in RELEVANCE_LEVELS for _ in range(round(lv[1] * 20))]  # 20 per cycle
    units, texts, discordance = [], {}, {}
    for i in range(n_max):
        markers, _, d = levels[i % len(levels)]
        text = f"Case {i}: for client {100 + i} one entry is marked {markers}. What is the total?"
        q = Question(question_id=f"q{i:04d}", task_type="t", question=text, answer="1")
        units.append(QuestionUnit(unit_id=q.unit_id, task_type="t", questions=(q,)))
        texts[q.unit_id], discordance[q.unit_id] = text, d
    validation = {u.unit_id for u in units[n_diag:]}
    pools = GatePools.build(units, validation, set(), seed=seed)
    stage1 = pools.families["t"]["diagnosis"]
    docs = {f: " ".join(texts[u] for u in ids) for f, ids in stage1.items()}
    return pools, relevance_scores(docs, RELEVANCE_ADDED), discordance


def exact_sequence(
    params: GateParams, horizon: int, discordance: Sequence[float], p: float = 0.5
) -> tuple[float, float]:
    """(final, kept) exactly, as `exact_cell`'s DP but with family n's discordance
    `discordance[n - 1]`: the gate's rate on one fixed, outcome-free order of families (the
    final look's coin averaged over, as there)."""
    H, s1 = horizon, stage1_of(horizon)
    per_n = _masks(params, H, s1).per_n
    P = np.zeros((H + 1, H + 1))
    P[0, 0] = 1.0
    Q = np.zeros_like(P)
    final = kept = 0.0
    for n in range(1, H + 1):
        d = discordance[n - 1]
        P = _step(P, d * p, d * (1 - p), 1 - d)
        rule = per_n[n]
        acc, stop_rej, prov = rule.acc, rule.reject, rule.prov
        on_coin, P = _accept_on_coin(P, rule)
        final += P[acc].sum() + on_coin
        P[acc | stop_rej] = 0.0
        if n > s1:  # probation: a resumed test, no final look, no coin
            Q = _step(Q, d * p, d * (1 - p), 1 - d)
            kept += Q[acc].sum()
            Q[acc | stop_rej] = 0.0
        if prov.any():
            Q = np.where(prov, P, 0.0)
            P = np.where(prov, 0.0, P)
    return float(final), float(kept)


def exact_relevance(
    params: GateParams, n_max: int, seed: int, orders: int, by_relevance: bool = True
) -> tuple[float, float]:
    """(mean, max) over `orders` ladders (keys as `mc_relevance`'s first reps) of the exact
    P(accepted at the gate or kept) of the ladder's discordance sequence. Relevance-ordered:
    stage 1 is the same sequence in every ladder (sorted by relevance, and equally relevant
    families have equal discordance here); stage 2 is a seeded shuffle (the figure comes out
    the same for every ladder: past stage 1 the order changes only where the ties fall).
    Shuffled (`by_relevance` False): each ladder the seeded shuffle of its key."""
    pools, scores, discordance = relevance_world(n_max, seed)
    rates = []
    for r in range(orders):
        relevance = scores if by_relevance else None
        ladder = pools.ladder_for("t", set(), key=f"rep{r}-", relevance=relevance).truncated(n_max)
        ds = [discordance[us[0]] for _, us in ladder.families]
        final, kept = exact_sequence(params, n_max, ds)
        rates.append(final + kept)
    return float(np.mean(rates)), float(np.max(rates))


def mc_relevance(
    rng: np.random.Generator, reps: int, params: GateParams, n_max: int, order: str, seed: int
) -> MC:
    """A null edit through the real ladder (`ladder_for` with the relevance scores, or the
    plain shuffle) and the real acceptance rule + ProbationTest, as `mc_ladder`. Per rep and
    family: discordant with the family's level's probability, then a win or a loss with
    probability 1/2 each; probation draws its own outcomes the same way."""
    pools, scores, discordance = relevance_world(n_max, seed)
    out = []
    for r in range(reps):
        relevance = scores if order == "relevance" else None
        ladder = pools.ladder_for("t", set(), key=f"rep{r}-", relevance=relevance)
        ladder = ladder.truncated(n_max)
        ids = [u for _, us in ladder.families for u in us]
        u = rng.random((2, len(ids)))
        d = np.array([discordance[i] for i in ids])
        g = {"gate": {}, "probation": {}}
        for row, name in zip(u, g, strict=True):
            g[name] = {
                i: int(np.where(x < d_i / 2, 1, np.where(x < d_i, -1, 0)))
                for i, x, d_i in zip(ids, row, d, strict=True)
            }
        coin = harness_coin(rng, params)
        rule = make_rule(
            AcceptanceStrategy.EPROCESS,
            RuleSetup(ladder.stage1, ladder.stage2, params, coin=coin),
        )
        gate_g = g["gate"]
        settled = run_rule(rule, lambda fam, gg=gate_g: [(i, *_PAIR[gg[i]]) for i in fam[1]])
        decision = settled.decision
        if decision.action != "accept_provisional":
            out.append((decision.action, decision.n_used, decision.n_used))
            continue
        probation = ProbationTest(params, decision.continuation)
        for f, us in settled.reserved:
            if probation.done:
                break
            probation.observe_family(f, [(i, *_PAIR[g["probation"][i]]) for i in us])
        verdict, final = probation.verdict()
        out.append((verdict, decision.n_used, final.n_used))
    return mc_summary(out, n_max)


# --------------------------------------------------------------------------- consistency only

CONSISTENCY_SIZES = (3, 5)
CONSISTENCY_ACCURACY = (0.7, 0.5)
CONSISTENCY_HORIZON = 60


def consistency_families(
    rng: np.random.Generator, rep: int, size: int, accuracy: float, horizon: int
) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """A null the sign rule fails: the baseline gets each unit right independently with
    probability `accuracy`; the candidate gets a whole family right (all units) with that same
    probability, else all wrong, so its per-unit accuracy equals the baseline's. Unit ids carry
    the rep, so the rounding coins (a hash of the ids) are fresh per rep, as the guarantee
    takes them (core/evolution/gate.py `rounded_outcome`)."""
    base = rng.random((horizon, size)) < accuracy
    cand = rng.random(horizon) < accuracy
    return [
        (
            f"c{rep}.f{i}",
            [(f"c{rep}.f{i}.{k}", bool(base[i, k]), bool(cand[i])) for k in range(size)],
        )
        for i in range(horizon)
    ]


def as_signs(
    families: list[tuple[str, list[tuple[str, bool, bool]]]],
) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """The old rule: each family reduced to one unit carrying the sign of its net."""
    return [(f, [(f, *_PAIR[family_outcome(pairs)])]) for f, pairs in families]


def mc_consistency(
    rng: np.random.Generator, reps: int, params: GateParams, size: int, accuracy: float
) -> tuple[MC, MC]:
    """(the gate's family evidence, the old sign rule) on the same draws, through the real
    SequentialGate + ProbationTest (stage 1 = the first 2/3 of the horizon)."""
    horizon, new, old = CONSISTENCY_HORIZON, [], []
    s1 = stage1_of(horizon)
    for rep in range(reps):
        families = consistency_families(rng, rep, size, accuracy, horizon)
        coin = harness_coin(rng, params)  # one test's coin, for both rules on the same draws
        new.append(run_real(families, params, horizon, s1, coin))
        old.append(run_real(as_signs(families), params, horizon, s1, coin))
    return mc_summary(new, horizon), mc_summary(old, horizon)


def report_consistency(
    args: argparse.Namespace, params: GateParams
) -> tuple[list[tuple[float, str]], list[tuple[float, str]], list[float]]:
    """Case 5 and its RESULT line; returns (finals, kepts, s.e.) for the summary's maxima."""
    print(
        f"\n== 5. consistency only: the candidate has the baseline's per-unit accuracy but its "
        f"units of a family move together; horizon {CONSISTENCY_HORIZON}, real SequentialGate "
        "+ ProbationTest, Monte Carlo. test = accepted or kept; 'sign rule' = the old family "
        "outcome (the sign of the family's net) on the same draws"
    )
    print(
        f"{'size':>4} {'acc':>5} {'final':>7} {'s.e.':>6} {'kept':>7} {'test':>7} "
        f"{'sign rule test':>15}"
    )
    finals, kepts, ses, tests, old_tests = [], [], [], [], []
    for size in CONSISTENCY_SIZES:
        for acc in CONSISTENCY_ACCURACY:
            rng = np.random.default_rng([args.seed, 5, size, round(acc * 100)])
            m, old = mc_consistency(rng, args.reps, params, size, acc)
            test, old_test = m.final + m.kept, old.final + old.kept
            name = f"case 5 size {size} accuracy {acc:g} (MC)"
            print(
                f"{size:4d} {acc:5.2f} {fmt_rate(m.final)} {m.se_final:6.4f} {fmt_rate(m.kept)} "
                f"{fmt_rate(test)} {old_test:15.4f}"
            )
            finals.append((m.final, name))
            kepts.append((m.kept, name))
            ses += [m.se_final, m.se_kept, se(test, m.reps)]
            tests.append(test)
            old_tests.append(old_test)
    worst, old_worst = max(tests), max(old_tests)
    print(f"  {verdict(worst <= TARGET_FA)} accepted or kept <= {TARGET_FA}: max {worst:.4f}")
    print(f"RESULT gate.validity.consistency_only_accept {worst:.4f} rate target <={TARGET_FA}")
    # the old family outcome on the same draws, for contrast (no target: it is the loophole)
    print(f"RESULT gate.validity.consistency_only_accept_sign_rule {old_worst:.4f} rate")
    return finals, kepts, ses


# --------------------------------------------------------------------------- missing verdicts

MISSING_SHARES = (0.3, 0.6)
MISSING_HORIZONS = (60, 200)
MISSING_ACCURACY = 0.5
MISSING_SIZE = 3


def missing_verdict_families(
    rng: np.random.Generator, rep: int, horizon: int, share: float
) -> list[tuple[str, list[tuple[str, bool | None, bool | None]]]]:
    """A null edit whose judge fails more often on its bad answers: baseline and candidate get
    each unit right independently with the same probability, and `share` of the candidate's
    wrong answers get no verdict (None), as a rubric judge's unreadable replies or a custom
    checker's check_error would leave them."""
    size = MISSING_SIZE
    base = rng.random((horizon, size)) < MISSING_ACCURACY
    cand = rng.random((horizon, size)) < MISSING_ACCURACY
    lost = (~cand) & (rng.random((horizon, size)) < share)
    return [
        (
            f"m{rep}.f{i}",
            [
                (f"m{rep}.f{i}.{k}", bool(base[i, k]), None if lost[i, k] else bool(cand[i, k]))
                for k in range(size)
            ],
        )
        for i in range(horizon)
    ]


def left_out(
    families: list[tuple[str, list[tuple[str, bool | None, bool | None]]]],
) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """The former rule on the same draws: units without a verdict left out of their family
    (a family with none left was d = 0: one tie)."""
    kept = []
    for f, pairs in families:
        units = [(u, b, c) for u, b, c in pairs if b is not None and c is not None]
        kept.append((f, units or [(f"{f}.tie", True, True)]))
    return kept


def report_missingness(
    args: argparse.Namespace, params: GateParams
) -> tuple[list[tuple[float, str]], list[tuple[float, str]], list[float]]:
    """Case 7 and its RESULT lines; returns (finals, kepts, s.e.) for the summary's maxima."""
    print(
        f"\n== 7. missing verdicts: a null edit (accuracy {MISSING_ACCURACY:g} on both sides, "
        f"families of {MISSING_SIZE} independent units) whose failing answers lose their verdict "
        "at the given share; real SequentialGate + ProbationTest, Monte Carlo. test = accepted "
        "or kept; 'left out' = the former rule (units without a verdict dropped) on the same draws"
    )
    print(f"{'share':>5} {'H':>4} {'final':>7} {'s.e.':>6} {'kept':>7} {'test':>7} {'left out':>9}")
    finals, kepts, ses, worst = [], [], [], {}
    for share in MISSING_SHARES:
        for horizon in MISSING_HORIZONS:
            rng = np.random.default_rng([args.seed, 7, round(share * 100), horizon])
            new, old = [], []
            s1 = stage1_of(horizon)
            for rep in range(args.reps):
                families = missing_verdict_families(rng, rep, horizon, share)
                coin = harness_coin(rng, params)  # both rules: the same test's coin
                new.append(run_real(families, params, horizon, s1, coin))  # type: ignore[arg-type]
                old.append(run_real(left_out(families), params, horizon, s1, coin))
            m, o = mc_summary(new, horizon), mc_summary(old, horizon)
            test = m.final + m.kept
            name = f"case 7 missing share {share:g} H {horizon} (MC)"
            print(
                f"{share:5.1f} {horizon:4d} {fmt_rate(m.final)} {m.se_final:6.4f} "
                f"{fmt_rate(m.kept)} {fmt_rate(test)} {o.final + o.kept:9.4f}"
            )
            finals.append((m.final, name))
            kepts.append((m.kept, name))
            ses += [m.se_final, m.se_kept, se(test, m.reps)]
            worst[share] = max(worst.get(share, 0.0), test)
    for share, rate in worst.items():
        print(
            f"RESULT gate.validity.judge_missingness_{share:g} {rate:.4f} rate target <={TARGET_FA}"
        )
    print(
        f"RESULT gate.validity.judge_missingness {max(worst.values()):.4f} rate "
        f"target <={TARGET_FA}"
    )
    return finals, kepts, ses


def report_family_units(args: argparse.Namespace, params: GateParams, null_worst: float) -> None:
    """Case 8: what a benchmark's `family_units = "independent"` declaration buys and risks,
    and a decoy bundled with a useful rule."""
    print(
        '\n== 8. the unit null (`family_units = "independent"`: every unit one observation). '
        "True declaration: the singleton cells of case 1, exactly; worst "
        f"{null_worst:.4f}. False declaration: families of 3 near-duplicates sharing one "
        "outcome, counted unit by unit (real gate, Monte Carlo; the price of declaring wrongly)"
    )
    print(f"{'families':>8} {'d':>5} {'test':>7} {'s.e.':>6}")
    worst_false = 0.0
    for families in (16, 50):
        for d in (0.3, 1.0):
            rng = np.random.default_rng([args.seed, 9, families, round(d * 100)])
            rate = falsely_independent(rng, args.reps, params, families, d)
            worst_false = max(worst_false, rate)
            print(f"{families:8d} {d:5.2f} {fmt_rate(rate)} {se(rate, args.reps):6.4f}")
    print(f"RESULT gate.validity.unit_null_worst_case {null_worst:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.validity.independence_declared_falsely {worst_false:.4f} rate")
    c_use, win, c_dec, loss = BUNDLE_SHARES
    print(
        f"\n   a candidate bundling a useful rule (concerns {c_use:g} of the units, wins "
        f"{win:g} of them) with a decoy (concerns {c_dec:g}, loses {loss:g}): the gate decides "
        "on the candidate as the evolver proposed it; the line check of an accepted bundle then "
        "drops the decoy when one of its losses is among the units the gate saw (the whole "
        "ladder on a final accept; answers that repeat; real gate + probation, Monte Carlo)"
    )
    worst_bundle = worst_gate = worst_alone = 0.0
    for horizon in BUNDLE_H:
        rates = []
        for k, parts in enumerate(((True, True), (False, True), (True, False))):
            rng = np.random.default_rng([args.seed, 10, horizon, k])
            rates.append(bundle_with_decoy(rng, args.reps, params, horizon, parts))
        (bundle, decoy), (_, decoy_alone), (useful_alone, _) = rates
        worst_bundle, worst_alone = max(worst_bundle, decoy), max(worst_alone, decoy_alone)
        worst_gate = max(worst_gate, bundle)
        print(
            f"   H {horizon:4d}: bundle kept {fmt_rate(bundle)}, its decoy kept after the line "
            f"check {fmt_rate(decoy)} (s.e. {se(decoy, args.reps):.4f}); one edit per candidate:"
            f" decoy kept {fmt_rate(decoy_alone)}, useful rule kept {fmt_rate(useful_alone)}"
        )
    print(f"RESULT gate.validity.bundle_with_decoy {worst_bundle:.4f} rate target <={TARGET_FA}")
    # without the line check (`[gate] bundle_check = false`) the decoy rides with the bundle
    print(f"RESULT gate.validity.bundle_with_decoy_gate_alone {worst_gate:.4f} rate")
    # edit_budget_start = edit_budget_end = 1: every candidate is one edit, so every kept
    # line passed its own test
    print(
        "RESULT gate.validity.bundle_with_decoy_one_edit_per_candidate "
        f"{worst_alone:.4f} rate target <={TARGET_FA}"
    )


# --------------------------------------------------------------------------- run level

# A run of gate tests, each on a fresh singleton ladder of H families (discordance RUN_D): a
# null edit is a fair coin on its discordant families (the worst case of the null), a useful
# one wins RUN_P_TRUE of them. Patterns of which tests are null, each run of RUN_TESTS tests:
# all null; useful ones first, so discoveries raise the level every later null test gets (the
# hardest case for LOND); alternating; one useful in five.
RUN_D, RUN_P_TRUE, RUN_TESTS, RUN_H = 0.3, 0.8, 40, (12, 36)
RUN_PATTERNS = {
    "all null": lambda t, n: False,
    "useful first half": lambda t, n: t <= n // 2,
    "alternating": lambda t, n: t % 2 == 1,
    "one useful in five": lambda t, n: t % 5 == 1,
}


def run_error_rates(
    params: GateParams,
    horizon: int,
    tests: int,
    useful: Callable[[int, int], bool],
    fdr: bool,
    spread_over: int = DEFAULT_RUN_TESTS,
) -> tuple[float, float, float]:
    """(FDR, P(at least one false accept), mean accepts) of a run, exactly: a DP over the
    (accepts, false accepts) counts across the run's tests, each test's accept probability the
    exact gate + probation DP (`exact_cell`, final + kept) at the level it runs at: the
    per-test α, or with `fdr` its LOND level (core/evolution/run_level.py `lond_level`,
    `run_tests` = `spread_over`)."""

    @cache
    def p_accept(level: float, is_useful: bool) -> float:
        e = exact_cell(
            replace(params, e_confirm=1.0 / level), horizon, RUN_D, RUN_P_TRUE if is_useful else 0.5
        )
        return e.final + e.kept

    law: dict[tuple[int, int], float] = {(0, 0): 1.0}
    for t in range(1, tests + 1):
        is_useful, nxt = useful(t, tests), {}
        for (d, v), mass in law.items():
            level = lond_level(params.alpha, t, d, spread_over) if fdr else params.alpha
            pa = p_accept(level, is_useful)
            hit = (d + 1, v + (not is_useful))
            nxt[hit] = nxt.get(hit, 0.0) + mass * pa
            nxt[(d, v)] = nxt.get((d, v), 0.0) + mass * (1.0 - pa)
        law = nxt
    fdr_value = sum(m * v / max(d, 1) for (d, v), m in law.items())
    any_false = sum(m for (_, v), m in law.items() if v > 0)
    return fdr_value, any_false, sum(m * d for (d, _), m in law.items())


def report_run_level(params: GateParams, tests: int) -> float:
    """Print the run-level error of per-test and LOND levels; return LOND's worst FDR."""
    print(
        f"\n== run level: {tests} tests per run, each on a fresh ladder of H singleton families "
        f"(discordance {RUN_D:g}; a useful edit wins {RUN_P_TRUE:g} of its discordant ones, a "
        "null one half), exact DP over the run. FDR = E[false accepts / max(accepts, 1)]; "
        "P(any) = P(at least one false accept in the run)"
    )
    print(
        f"{'pattern':>20} {'H':>3} {'per-test FDR':>12} {'P(any)':>7} {'accepts':>7} "
        f"{'LOND FDR':>9} {'P(any)':>7} {'accepts':>7}"
    )
    worst = 0.0
    for name, useful in RUN_PATTERNS.items():
        for horizon in RUN_H:
            per_test = run_error_rates(params, horizon, tests, useful, fdr=False)
            lond = run_error_rates(params, horizon, tests, useful, fdr=True)
            worst = max(worst, lond[0])
            print(
                f"{name:>20} {horizon:3d} {per_test[0]:12.4f} {per_test[1]:7.4f} "
                f"{per_test[2]:7.2f} {lond[0]:9.4f} {lond[1]:7.4f} {lond[2]:7.2f}"
            )
    return worst


# --------------------------------------------------------------------------- family evidence


def independent_families(
    rng: np.random.Generator, rep: int, size: int, horizon: int, d: float, p: float
) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """Families whose units are independent paired outcomes (P(W) = d·p, P(L) = d·(1 − p))."""
    rows = draw_outcomes(rng, horizon, size, d, p)
    return [
        (f"r{rep}.f{i}", [(f"r{rep}.f{i}.{k}", *_PAIR[int(g)]) for k, g in enumerate(row)])
        for i, row in enumerate(rows)
    ]


def report_family_evidence(args: argparse.Namespace, params: GateParams) -> None:
    """Power of the two family evidences (GateParams.family_evidence) on families of 1, 3 and
    5 units, independent units (Monte Carlo through the real gate) and units sharing one
    outcome (exact DP: there rounding changes nothing and "mean" only pays Ville's level)."""
    reps = max(TINY_REPS, args.reps // 5)
    print(
        f"\n== family evidence: power (accepted or kept), d 0.3 / p 0.7 per unit; independent "
        f"units of a family: Monte Carlo, {reps} reps; shared outcome: exact DP"
    )
    print(f"{'H':>4} {'size':>4} {'units':>12} {'rounded':>8} {'mean':>8}")
    for horizon in (20, 60, 200):
        for size in (1, 3, 5):
            row = []
            for kind in ("rounded", "mean"):
                rng = np.random.default_rng([args.seed, 6, horizon, size])
                kind_params = replace(params, family_evidence=kind)
                out = [
                    run_real(
                        independent_families(rng, r, size, horizon, 0.3, 0.7),
                        kind_params,
                        horizon,
                        stage1_of(horizon),
                        harness_coin(rng, kind_params),
                    )
                    for r in range(reps)
                ]
                m = mc_summary(out, horizon)
                row.append(m.final + m.kept)
            print(f"{horizon:4d} {size:4d} {'independent':>12} {row[0]:8.3f} {row[1]:8.3f}")
        shared = [
            exact_cell(replace(params, calibrate=kind == "rounded"), horizon, 0.3, 0.7).test
            for kind in ("rounded", "mean")
        ]
        print(f"{horizon:4d} {'any':>4} {'shared':>12} {shared[0]:8.3f} {shared[1]:8.3f}")


# --------------------------------------------------------------------------- power options

# The final look (GateParams.final_look) and the "no net win" stop (futility_share, which a
# test taking the final look never makes) trade power for units at the power target's cell;
# the others (bet mixture, harm level) were measured apart.
POWER_OPTIONS = (
    ("look + coin (default)", {"final_look": True, "final_look_coin": True}),
    ("look, no coin", {"final_look": True, "final_look_coin": False}),
    ("no look, stop 1/3", {"final_look": False, "futility_share": 1 / 3}),
    ("no look, stop 1/2", {"final_look": False, "futility_share": 0.5}),
    ("no look, no stop", {"final_look": False, "futility_share": 0.0}),
)


def report_power_options(
    params: GateParams, options: tuple[tuple[str, dict], ...] = POWER_OPTIONS
) -> None:
    """What the final look, or switching the "no net win" stop later or off, buys at the power
    target and what it costs: exact DP, mean test units over the null grid and over the power
    grid, and the min power ratio against McNemar at equal units (the
    `gate.power_vs_mcnemar...` figure). `options`: rows of POWER_OPTIONS (--tiny: the
    default's alone)."""
    print(
        "\n== power options (exact DP): the final look and the no-net-win stop. power = n_max "
        "200 d 0.3 p 0.7; units = mean test units over the null / power grids"
    )
    print(f"{'option':>20} {'power':>7} {'null u':>7} {'power u':>8} {'min ratio':>10}")
    for name, changes in options:
        option = replace(params, **changes)
        null = exact_grid(option, 0.5).values()
        cells = {p: exact_grid(option, p) for p in POWER_P}
        ratios = [
            e.test / mc
            for p, grid in cells.items()
            for (n, d), e in grid.items()
            if (mc := mcnemar_power(round(e.test_units), d, p)) >= 0.05
        ]
        power_units = [e.test_units for grid in cells.values() for e in grid.values()]
        print(
            f"{name:>20} {cells[0.7][(200, 0.3)].test:7.4f} "
            f"{np.mean([e.test_units for e in null]):7.1f} {np.mean(power_units):8.1f} "
            f"{min(ratios):10.3f}"
        )


# --------------------------------------------------------------------------- the coin

COIN_POWER = ((20, 0.3, 0.7), (60, 0.3, 0.7), (200, 0.3, 0.7))  # (n_max, d, p)


def report_coin(params: GateParams) -> float:
    """The final look's coin (`GateParams.final_look_coin`): a test that ends one win short of
    c(D) is accepted with probability γ(D), on a uniform coin drawn before any outcome, which
    spends the α that c(D) alone leaves unspent. Exact DP with the coin averaged (`_masks`),
    with and without it: the null grid of case 1 and the power at the power target and on small
    ladders, against a fixed one-sided exact McNemar test on all n_max units. Returns the
    largest null rate with the coin (P(accepted or kept) over the grid)."""
    with_coin = replace(params, final_look_coin=True)
    without = replace(params, final_look_coin=False)
    print(
        "\n== the final look's coin (exact DP, the coin averaged over): a test one win short of "
        f"the final look's level c(D) is accepted with probability γ(D) (never below "
        f"{with_coin.coin_min_wins} wins). test = accepted or kept; 'on coin' = the part of "
        "'coin' accepted one win short; units = mean test units (with the coin an upper bound)"
    )
    print(
        f"{'n_max':>5} {'d':>5} {'p':>4} {'no coin':>8} {'coin':>8} {'on coin':>8} "
        f"{'units':>6} {'units':>6} {'McNemar n_max':>13}"
    )
    worst = 0.0
    rows = [(n, d, 0.5) for n in N_MAX for d in DISCORDANCE] + list(COIN_POWER)
    for n, d, p in rows:
        off, on = exact_cell(without, n, d, p), exact_cell(with_coin, n, d, p)
        # the coin only adds accepts at the end: what it adds is the mass it accepts
        mcnemar = f"{mcnemar_power(n, d, p):13.4f}" if p != 0.5 else f"{'':>13}"
        print(
            f"{n:5d} {d:5.2f} {p:4.1f} {off.test:8.4f} {on.test:8.4f} {on.test - off.test:8.4f} "
            f"{off.test_units:6.1f} {on.test_units:6.1f} {mcnemar}"
        )
        if p == 0.5:
            worst = max(worst, on.test)
    print(
        f"  {verdict(worst <= TARGET_FA)} with the coin, null accepted or kept <= {TARGET_FA}: "
        f"max {worst:.4f}"
    )
    return worst


# --------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "MET   " if ok else "MISSED"


def fmt_rate(x: float) -> str:
    return f"{x:7.4f}"


def exact_grid(params: GateParams, p: float) -> dict[tuple[int, float], Exact]:
    return {(n, d): exact_cell(params, n, d, p) for n in N_MAX for d in DISCORDANCE}


def print_null_grid(params: GateParams, grid: dict[tuple[int, float], Exact], title: str) -> None:
    print(f"\n== {title}")
    print(
        f"{'n_max':>5} {'d':>5} {'level':>7} {'final':>7} {'prov':>7} {'kept':>7} "
        f"{'test':>7} {'gate u':>7} {'test u':>7}"
    )
    for (n, d), e in grid.items():
        print(
            f"{n:5d} {d:5.2f} {params.accept_level(n, singletons=True):7.3f} {fmt_rate(e.final)} "
            f"{fmt_rate(e.prov)} {fmt_rate(e.kept)} {fmt_rate(e.test)} {e.gate_units:7.1f} "
            f"{e.test_units:7.1f}"
        )


def harness_cases(
    args: argparse.Namespace,
    params: GateParams,
    finals: list[tuple[float, str]],
    mc_ses: list[float],
) -> tuple[float, float]:
    """Case 5: probation with a later edit, and the continued test; Monte Carlo through the
    harness's code. Appends to `finals` / `mc_ses`; returns each case's worst rate."""
    print(
        f"\n== 5a. probation with a later edit: a null edit (d below, p 0.5) on probation, a "
        f"good later edit of the same type (d {LATER_GOOD[0]:g}, p {LATER_GOOD[1]:g}), "
        f"H {LATER_H}. test = P(null edit accepted at the gate or kept); kept|prov = "
        "P(kept | provisional); exact = the DP of the null edit's own test; same = reps whose "
        "verdict equals the DP rule's. 'now' = step.on_probation decides (edits wait); "
        "'before' = the later edit lands during the probation"
    )
    print(
        f"{'d':>5} {'rule':>7} {'test':>7} {'s.e.':>6} {'exact':>7} {'kept|prov':>9} "
        f"{'prov':>6} {'same':>10}"
    )
    worst_later = 0.0
    for d in LATER_D:
        exact = exact_cell(params, LATER_H, d, 0.5).test  # the null edit's own test (case 1)
        for name, waits in (("before", False), ("now", None)):
            rng = np.random.default_rng([args.seed, 5, round(d * 100)])  # same draws for both
            rate, cond, n_prov, agree = probation_with_later_edit(rng, args.reps, params, d, waits)
            print(
                f"{d:5.2f} {name:>7} {fmt_rate(rate)} {se(rate, args.reps):6.4f} "
                f"{fmt_rate(exact)} {cond:9.3f} {n_prov:6d} {agree:>5d}/{args.reps}"
            )
            if name != "now":
                continue
            cell = f"case 5a probation with a later edit d {d:g}"
            mc_ses.append(se(rate, args.reps))
            if agree == args.reps:  # the null edit alone is tested: the DP walk, exactly
                worst_later = max(worst_later, exact)
                finals.append((exact, cell + " (exact, real code = DP on every rep)"))
            else:
                worst_later = max(worst_later, rate)
                finals.append((rate, cell + " (MC)"))
    print(
        f"\n== 5b. continued test: a null edit over a pool of {CONT_POOL} singleton families, "
        f"{CONT_SEG} per step; a segment with W > L that ran out of the step's families goes on "
        "over fresh ones (real ladder, real continuation code). 'whole' = level for the whole "
        "ladder (the code); 'segment' = the same continuation at one segment's level"
    )
    print(f"{'d':>5} {'level':>8} {'accepted':>8} {'s.e.':>6} {'segments':>8}")
    worst_cont = 0.0
    for d in CONT_D:
        for name, calibrated in (("segment", False), ("whole", True)):
            rng = np.random.default_rng([args.seed, 6, round(d * 100)])
            rate, segs = continued_test(rng, args.reps, params, d, calibrated)
            print(f"{d:5.2f} {name:>8} {fmt_rate(rate)} {se(rate, args.reps):6.4f} {segs:8.2f}")
            if calibrated:
                worst_cont = max(worst_cont, rate)
                finals.append((rate, f"case 5b continued test d {d:g} (MC)"))
                mc_ses.append(se(rate, args.reps))
    print(
        f"\n== 5c. pooled re-proposal: a null edit set proposed again at every step, over a pool "
        f"of {CONT_POOL} singleton units, {REPROPOSAL_SHOWN} more shown to the evolver per step "
        "(real ladder, real pools_evidence / resumed_gate). 'pooled' = the code (a test stopped "
        "for want of a signal goes on over units it never observed); 'fresh' = each "
        "re-proposal a new test at its own level over the current ladder"
    )
    print(f"{'d':>5} {'rule':>7} {'accepted':>8} {'s.e.':>6} {'tests':>6}")
    worst_pooled = 0.0
    for d in CONT_D:
        for name, pooled in (("fresh", False), ("pooled", True)):
            rng = np.random.default_rng([args.seed, 8, round(d * 100)])
            rate, tests = pooled_reproposal(rng, args.reps, params, d, pooled)
            print(f"{d:5.2f} {name:>7} {fmt_rate(rate)} {se(rate, args.reps):6.4f} {tests:6.2f}")
            if not pooled:
                continue
            cell = f"case 5c pooled re-proposal d {d:g}"
            mc_ses.append(se(rate, args.reps))
            if tests == 1.0:
                # Every rep ran one fresh test over the same-sized ladder of iid outcomes (the
                # final look runs a test to its end, so none went on): its rate is the DP's.
                exact = exact_cell(params, CONT_POOL - REPROPOSAL_SHOWN, d, 0.5).final
                print(f"{'':>13} one test on every rep: exactly {fmt_rate(exact)}")
                worst_pooled = max(worst_pooled, exact)
                finals.append((exact, cell + " (exact, one fresh test on every rep)"))
            else:
                worst_pooled = max(worst_pooled, rate)
                finals.append((rate, cell + " (MC)"))
    print(f"RESULT gate.validity.pooled_reproposal {worst_pooled:.4f} rate target <={TARGET_FA}")
    return worst_later, worst_cont


def run_relevance_case(
    args: argparse.Namespace,
    params: GateParams,
    finals: list[tuple[float, str]],
    kepts: list[tuple[float, str]],
    mc_ses: list[float],
) -> list[float]:
    """Case 2b: prints its table, adds each cell's exact worst over its sampled ladders to the
    summary (the Monte Carlo column checks it); returns, per n_max, the largest exact
    P(accepted or kept) over the sampled relevance ladders."""
    print(
        "\n== 2b. null edit through a relevance-ordered ladder (`[gate] ladder_order = "
        '"relevance"`: real relevance_scores / ladder_for / acceptance rule + ProbationTest), '
        "Monte Carlo; relevance levels (share, discordance): "
        + ", ".join(f"{m!r} ({sh:g}, {d:g})" for m, sh, d in RELEVANCE_LEVELS)
        + "; P(W | discordant) = 0.5 at every level"
    )
    print(
        f"{'order':>9} {'n_max':>5} {'final':>7} {'s.e.':>6} {'prov':>7} {'kept':>7} "
        f"{'s.e.':>6} {'fams':>6}  exact final+kept over {RELEVANCE_ORDERS} ladders: mean, max"
    )
    rates = []
    for n in RELEVANCE_CELLS:
        for order in ("relevance", "shuffle"):
            rng = np.random.default_rng([args.seed, 21, n, order == "relevance"])
            m = mc_relevance(rng, args.reps, params, n, order, seed=args.seed % 1000 + 1)
            seed = args.seed % 1000 + 1
            by_relevance = order == "relevance"
            mean, worst = exact_relevance(params, n, seed, RELEVANCE_ORDERS, by_relevance)
            if by_relevance:
                rates.append(worst)
            exact = f"  {mean:.4f}, {worst:.4f}"
            print(
                f"{order:>9} {n:5d} {fmt_rate(m.final)} {m.se_final:6.4f} "
                f"{fmt_rate(m.prov)} {fmt_rate(m.kept)} {m.se_kept:6.4f} "
                f"{m.gate_families:6.1f}{exact}"
            )
            # the exact rate of the sampled ladders (final + kept): what the MC column estimates
            finals.append(
                (worst, f"case 2b {order} ladder n_max {n} (exact, {RELEVANCE_ORDERS} ladders)")
            )
            kepts.append((m.kept, f"case 2b {order} ladder n_max {n} (MC)"))
            mc_ses += [m.se_final, m.se_kept]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps",
        type=int,
        default=2500,
        help="Monte Carlo repetitions per cell (s.e. <= 0.005 holds for "
        "estimates up to 0.067 at 2500)",
    )
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help=f"{TINY_REPS} Monte Carlo repetitions per cell and the default's row alone of the "
        "power options: checks the bench runs (the other exact parts are unchanged; the Monte "
        "Carlo figures are then noise)",
    )
    args = parser.parse_args()
    if args.tiny:
        args.reps = TINY_REPS
    start = time.perf_counter()
    params = GateParams()
    print(
        f"gate defaults: e_confirm {params.e_confirm:g} (alpha {params.alpha:g}), e_rollback "
        f"{params.e_rollback:g}, e_provisional {params.e_provisional:g}, w_net_min "
        f"{params.w_net_min}, delta_min {params.delta_min:g}, shrink_k {params.shrink_k}, "
        f"bet {params.lambda_strategy}, e_futility {params.e_futility}, curtail "
        f"{params.curtail}"
    )
    print(
        "horizon H = n_max families; stage 1 = first round(2H/3) "
        f"({', '.join(f'{n}->{stage1_of(n)}' for n in N_MAX)}), stage 2 = the rest; units "
        f"in chunks of {CHUNK}; Monte Carlo {args.reps} reps/cell, seed {args.seed}"
    )
    mc_ses: list[float] = []
    finals: list[tuple[float, str]] = []
    kepts: list[tuple[float, str]] = []

    # 1. independent null, exact
    null = exact_grid(params, 0.5)
    print_null_grid(
        params,
        null,
        "1. independent null (p = 0.5), exact DP. final = accepted at "
        "the gate; prov = provisional at stage-1 end; kept = provisional and "
        "crossed in stage 2; test = final + kept (bounded by alpha)",
    )
    for (n, d), e in null.items():
        finals.append((e.final, f"case 1 n_max {n} d {d:g} (exact)"))
        kepts.append((e.kept, f"case 1 n_max {n} d {d:g} (exact)"))

    # 2. the real ladder
    print(
        "\n== 2. null through the real ladder (GatePools.build / ladder_for / truncated, "
        "real SequentialGate + ProbationTest), Monte Carlo; p_u ~ Beta(0.5, 0.5), singleton "
        "families. 'exact' (warm): the gate's exact rate given each rep's ladder and p_u, "
        "averaged over the reps (every term <= alpha; shown when the real rule decided as that "
        "rate's DP on every rep)"
    )
    print(
        f"{'ladder':>6} {'n_max':>5} {'horizon':>7} {'final':>7} {'s.e.':>6} {'prov':>7} "
        f"{'kept':>7} {'s.e.':>6} {'exact':>7}"
    )
    for n in N_MAX:
        world = ladder_world(n, seed=args.seed % 1000 + 1)
        for warm in (False, True):
            rng = np.random.default_rng([args.seed, 2, n, warm])
            m, horizon, exact = mc_ladder(rng, args.reps, params, world, warm)
            name = "warm" if warm else "cold"
            print(
                f"{name:>6} {n:5d} {horizon:7.1f} {fmt_rate(m.final)} {m.se_final:6.4f} "
                f"{fmt_rate(m.prov)} {fmt_rate(m.kept)} {m.se_kept:6.4f} "
                + (fmt_rate(exact) if exact is not None else f"{'—':>7}")
            )
            final, how = (
                (m.final, "MC")
                if exact is None
                else (exact, "exact given each rep's ladder and p_u")
            )
            finals.append((final, f"case 2 {name} n_max {n} ({how})"))
            kepts.append((m.kept, f"case 2 {name} n_max {n} (MC)"))
            mc_ses += [m.se_final, m.se_kept]

    # 2b. a relevance-ordered ladder, relevance correlated with discordance
    relevance_finals = run_relevance_case(args, params, finals, kepts, mc_ses)

    # 3. families sharing outcomes
    print(
        "\n== 3. families of 3 and 10 units sharing one outcome (observe_family), Monte "
        "Carlo; d = per-unit = per-family discordance. 'exact' = the DP of the family-level "
        "walk; 'same' = reps in which the real code's decision and stopping points equal the "
        "DP rule's on the same draws (all: the exact column is the real gate's rate)"
    )
    print(
        f"{'size':>4} {'n_max':>5} {'d':>5} {'final':>7} {'s.e.':>6} {'exact':>7} {'prov':>7} "
        f"{'kept':>7} {'s.e.':>6} {'exact':>7} {'fams':>6} {'same':>10}"
    )
    raw_finals: list[tuple[float, str]] = []
    for size in (3, 10):
        for n, d in FAMILY_CELLS:
            rng = np.random.default_rng([args.seed, 3, size, n, round(d * 100)])
            m, agree = mc_families(rng, args.reps, params, n, d, 0.5, size)
            e = null[(n, d)]
            name = f"case 3 size {size} n_max {n} d {d:g}"
            print(
                f"{size:4d} {n:5d} {d:5.2f} {fmt_rate(m.final)} {m.se_final:6.4f} "
                f"{fmt_rate(e.final)} {fmt_rate(m.prov)} {fmt_rate(m.kept)} "
                f"{m.se_kept:6.4f} {fmt_rate(e.kept)} {m.gate_families:6.1f} "
                f"{agree:>5d}/{m.reps}"
            )
            raw_finals.append((m.final, name + " (MC)"))
            mc_ses += [m.se_final, m.se_kept]
            if agree == m.reps:  # the real code is the DP walk here: its rates are exact
                finals.append((e.final, name + " (exact, real code = DP on every rep)"))
                kepts.append((e.kept, name + " (exact, real code = DP on every rep)"))
            else:
                finals.append((m.final, name + " (MC)"))
                kepts.append((m.kept, name + " (MC)"))

    # 5. consistency only
    c_finals, c_kepts, c_ses = report_consistency(args, params)
    finals += c_finals
    kepts += c_kepts
    mc_ses += c_ses
    m_finals, m_kepts, m_ses = report_missingness(args, params)
    finals += m_finals
    kepts += m_kepts
    mc_ses += m_ses
    report_family_units(args, params, max(e.test for e in null.values()))
    d_finals, d_ses = report_draws(args, params)
    finals += d_finals
    mc_ses += d_ses
    report_family_evidence(args, params)

    # 4. slightly harmful
    harm = exact_grid(params, HARM_P)
    print_null_grid(params, harm, f"4. slightly harmful, P(W | discordant) = {HARM_P}, exact DP")

    # sanity: DP against the real gate
    print(
        "\n== DP check against the real SequentialGate + ProbationTest (singleton families), "
        "Monte Carlo, each rep's test with its own coin. The DP averages the final look's coin; "
        "its units are an upper bound (it curtails as a test at coin 0 does, the real one "
        "once no reachable end has a chance above its coin)"
    )
    print(f"{'cell':>24} {'':>5} {'final':>7} {'prov':>7} {'kept':>7} {'gate u':>7} {'test u':>7}")
    for n, d, p in ((60, 0.3, 0.7),):
        rng = np.random.default_rng([args.seed, 9, n, round(d * 100), round(p * 100)])
        m, agree = mc_families(rng, args.reps, params, n, d, p, 1)
        e = exact_cell(params, n, d, p)
        cell = f"n_max {n} d {d:g} p {p:g}"
        print(
            f"{cell:>24} {'DP':>5} {fmt_rate(e.final)} {fmt_rate(e.prov)} {fmt_rate(e.kept)} "
            f"{e.gate_units:7.2f} {e.test_units:7.2f}"
        )
        print(
            f"{'':>24} {'MC':>5} {fmt_rate(m.final)} {fmt_rate(m.prov)} {fmt_rate(m.kept)} "
            f"{m.gate_units:7.2f} {m.test_units:7.2f}"
        )
        zs = [
            (m.final - e.final) / se(e.final, m.reps),
            (m.prov - e.prov) / se(e.prov, m.reps),
            (m.kept - e.kept) / se(e.kept, m.reps),
        ]
        print(
            f"{'':>24} {'z':>5} "
            + " ".join(f"{z:+7.2f}" for z in zs)
            + ("   agree (|z| < 3)" if max(map(abs, zs)) < 3 else "   DISAGREE")
            + f"; same decision and stopping points as the DP rule in {agree}/{m.reps} reps"
        )

    # power
    print(
        "\n== power (exact DP) vs a fixed one-sided exact McNemar test at alpha 0.05 on "
        "n = round(mean test units) units. power = final + kept; confirmed = final only"
    )
    print(
        f"{'p':>4} {'n_max':>5} {'d':>5} {'power':>7} {'confirmed':>9} {'gate u':>7} "
        f"{'test u':>7} {'McNemar':>8} {'ratio':>6}"
    )
    ratios: list[tuple[float, str]] = []
    power_cells: dict[tuple[float, int, float], Exact] = {}
    for p in POWER_P:
        for (n, d), e in exact_grid(params, p).items():
            power_cells[(p, n, d)] = e
            mc = mcnemar_power(round(e.test_units), d, p)
            ratio = e.test / mc if mc > 0 else math.inf
            note = ""
            if mc >= 0.05:
                ratios.append((ratio, f"p {p:g} n_max {n} d {d:g}"))
            else:
                note = "  (McNemar < 0.05: not compared)"
            print(
                f"{p:4.1f} {n:5d} {d:5.2f} {fmt_rate(e.test)} {e.final:9.4f} "
                f"{e.gate_units:7.1f} {e.test_units:7.1f} {mc:8.4f} {ratio:6.2f}{note}"
            )

    coin_null = report_coin(params)

    # 5. the harness's cases
    later_max, cont_max = harness_cases(args, params, finals, mc_ses)
    run_fdr = report_run_level(params, TINY_RUN_TESTS if args.tiny else RUN_TESTS)

    report_power_options(params, POWER_OPTIONS[:1] if args.tiny else POWER_OPTIONS)

    # summary
    max_final, where_final = max(finals)
    max_kept, where_kept = max(kepts)
    harm_max, where_harm = max(((e.test, f"n_max {n} d {d:g}") for (n, d), e in harm.items()))
    harm_final = max(e.final for e in harm.values())
    power = power_cells[(0.7, 200, 0.3)].test
    min_ratio, where_ratio = min(ratios)
    max_se = max(mc_ses) if mc_ses else math.nan
    raw_max, raw_where = max(raw_finals) if raw_finals else (math.nan, "")
    print("\n== summary (against the targets)")
    print(
        f"  {verdict(max_final <= TARGET_FA)} final false accept <= {TARGET_FA}: worst cell "
        f"{max_final:.4f} ({where_final}); exact where known, else Monte Carlo"
    )
    print(
        f"         (the largest raw Monte Carlo estimate of case 3 is {raw_max:.4f}, {raw_where};"
        f" its cells' exact values are <= {max(e.final for e in null.values()):.4f}"
        + (
            ", so an estimate above 0.05 there is Monte Carlo noise)"
            if raw_max > TARGET_FA
            else ")"
        )
    )
    print(
        f"  {verdict(max_kept <= TARGET_FA)} kept provisional false accept <= {TARGET_FA}: "
        f"worst cell {max_kept:.4f} ({where_kept})"
    )
    print(
        f"  {verdict(harm_max <= TARGET_FA)} harmful (p {HARM_P}) accepted at the gate or kept "
        f"<= {TARGET_FA}: worst cell {harm_max:.4f} ({where_harm}); at the gate alone "
        f"{harm_final:.4f}"
    )
    print(
        f"  {verdict(power >= 0.85)} power at n_max 200, d 0.3, p 0.7 >= 0.85: {power:.4f} "
        f"(confirmed only {power_cells[(0.7, 200, 0.3)].final:.4f})"
    )
    print(
        f"  {verdict(min_ratio >= 1)} gate power / McNemar power at equal expected units >= 1 "
        f"over the {len(ratios)} cells with McNemar power >= 0.05: min {min_ratio:.3f} "
        f"({where_ratio})"
    )
    print(
        f"  {verdict(max_se <= TARGET_SE)} Monte Carlo s.e. <= {TARGET_SE} on the "
        f"false-accept cells: max {max_se:.4f}"
    )
    print(f"RESULT gate.validity.max_final_false_accept {max_final:.4f} rate target <={TARGET_FA}")
    # The coin spends α exactly, so a Monte Carlo cell at the worst case estimates 0.05 itself
    # and lands above it about half the time: its check is that it is not significantly above
    # (z of the estimate against α, its binomial s.e. at α), the exact cells' that they are <= α.
    exact_max = max(rate for rate, where in finals if "(MC)" not in where)
    mc_z = max(
        (rate - TARGET_FA) / se(TARGET_FA, args.reps) for rate, where in finals if "(MC)" in where
    )
    print(
        f"RESULT gate.validity.exact_max_final_false_accept {exact_max:.4f} rate target <={TARGET_FA}"
    )
    print(f"RESULT gate.validity.mc_max_excess_z {mc_z:.2f} sd target <=3")
    print(
        f"  (exact cells: worst {exact_max:.4f}; Monte Carlo cells: the largest excess over "
        f"{TARGET_FA} is {mc_z:.2f} s.e., where a gate that spends α exactly lands above "
        f"{TARGET_FA} half the time)"
    )
    print(
        f"RESULT gate.validity.max_kept_provisional_false_accept {max_kept:.4f} rate "
        f"target <={TARGET_FA}"
    )
    print(  # exact, the worst sampled relevance ladder; accepted at the gate or kept
        f"RESULT gate.validity.relevance_ladder {max(relevance_finals):.4f} rate "
        f"target <={TARGET_FA}"
    )
    print(f"RESULT gate.validity.harmful_max_accept {harm_max:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.power.nmax200_d0.3_p0.7 {power:.4f} rate target >=0.85")
    print(f"RESULT gate.power_vs_mcnemar_equal_units.min_ratio {min_ratio:.3f} ratio target >=1")
    print(f"RESULT gate.validity.mc_max_se {max_se:.4f} rate target <={TARGET_SE}")
    print(
        f"RESULT gate.validity.probation_with_later_edit {later_max:.4f} rate target <={TARGET_FA}"
    )
    print(f"RESULT gate.validity.continued_test {cont_max:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.validity.run_fdr {run_fdr:.4f} rate target <={TARGET_FA}")
    print(f"RESULT gate.validity.coin_null {coin_null:.4f} rate target <={TARGET_FA}")
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
