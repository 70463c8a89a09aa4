"""The sequential gate: family outcomes, the mixture e-value, the exact accept level, the
decisions, curtailment, the stage-2 continuation of a provisional accept (probation), and
pair counting."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import pytest

from core.evolution.gate import (
    BetState,
    EvidenceRow,
    FamilyOutcome,
    GateEndedBy,
    GateParams,
    GateState,
    GateStopReason,
    PairResult,
    ProbationTest,
    SequentialGate,
    family_mean,
    family_outcome,
    outcome_of,
    pair_block,
    rounded_outcome,
    run_gate,
    run_gate_families,
)
from core.stats import MIXTURE_BETS, EProcessPair, calibrated_threshold, mixture_e

W, L, T = (False, True), (True, False), (True, True)  # (base, cand): a win, a loss, a tie
# Mechanics at a fixed bet λ = 0.3 with Ville's level 20 (no calibration), so the expected
# stops follow from independent arithmetic.
P3 = GateParams(lambda_dir=0.3, lambda_strategy="fixed", e_provisional=2.0)


def _pairs(seq: list[tuple[bool, bool]]) -> list[tuple[str, bool, bool]]:
    return [(f"u{i}", base, cand) for i, (base, cand) in enumerate(seq)]


def _families(
    pairs: list[tuple[str, bool, bool]],
) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """Each pair its own single-unit family."""
    return [(unit, [(unit, base, cand)]) for unit, base, cand in pairs]


def _first_crossing(factor: float, threshold: float) -> int:
    return math.ceil(math.log(threshold) / math.log(factor))


# --------------------------------------------------------------------------- params


def test_params_defaults() -> None:
    p = GateParams()
    assert (p.e_confirm, p.e_rollback, p.e_provisional, p.e_futility) == (20.0, 10.0, 5.0, None)
    assert (p.lambda_strategy, p.n_max, p.curtail, p.calibrate) == ("mixture", 200, True, True)
    assert p.alpha == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lambda_dir", 0.0),
        ("lambda_dir", 1.0),
        ("lambda_dir", float("nan")),
        ("lambda_max", 1.5),
        ("e_confirm", 0.5),
        ("e_rollback", 0.99),
        ("e_provisional", -1.0),
        ("n_max", 0),
        ("shrink_k", -1),
        ("lambda_strategy", "kelly"),
        ("e_futility", 1.0),
        ("e_futility", 0.5),
    ],
)
def test_params_validation_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GateParams(**{field: value})


def test_accept_level_is_calibrated_only_for_the_mixture() -> None:
    # the default bets on d: exact on the ±1/0 lattice (single units), Ville's level otherwise
    assert GateParams().accept_level(20, singletons=True) == calibrated_threshold(20, 0.05)
    assert GateParams().accept_level(20) == 20.0
    rounded = GateParams(family_evidence="rounded")
    assert (
        rounded.accept_level(20) == rounded.accept_level(20, True) == calibrated_threshold(20, 0.05)
    )
    assert GateParams(calibrate=False).accept_level(20) == 20.0
    assert GateParams(lambda_strategy="fixed").accept_level(20) == 20.0
    assert GateParams(lambda_strategy="kt").accept_level(20) == 20.0


# --------------------------------------------------------------------------- the mixture e-value


def test_mixture_e_closed_form_and_order_independence() -> None:
    total = sum(w for _, w in MIXTURE_BETS)
    for wins, losses in itertools.product(range(6), range(6)):
        direct = sum(w * (1 + lam) ** wins * (1 - lam) ** losses for lam, w in MIXTURE_BETS) / total
        assert mixture_e(wins, losses) == pytest.approx(direct, rel=1e-12)
    assert mixture_e(0, 0) == pytest.approx(1.0)


def test_mixture_e_is_a_martingale_under_a_fair_coin() -> None:
    """E[E_{n+1} | E_n] = E_n when P(W) = P(L) (ties leave it alone), for every state."""
    for wins, losses in itertools.product(range(8), range(8)):
        mean_next = (mixture_e(wins + 1, losses) + mixture_e(wins, losses + 1)) / 2
        assert mean_next == pytest.approx(mixture_e(wins, losses), rel=1e-12)


def _brute_force_crossing(horizon: int, level: float) -> float:
    """P(a fair ±1 walk of `horizon` steps ever has mixture_e ≥ level), by enumerating paths."""
    hits = 0
    for path in itertools.product((1, -1), repeat=horizon):
        wins = losses = 0
        for g in path:
            wins, losses = wins + (g == 1), losses + (g == -1)
            if mixture_e(wins, losses) >= level:
                hits += 1
                break
    return hits / 2**horizon


@pytest.mark.parametrize("horizon", [1, 3, 6, 9, 12])
def test_calibrated_level_is_exact_by_enumeration(horizon: int) -> None:
    level = calibrated_threshold(horizon, 0.05)
    assert level <= 20.0
    assert _brute_force_crossing(horizon, level * (1 - 1e-12)) <= 0.05
    lower = [
        e
        for wins in range(horizon + 1)
        for losses in range(horizon + 1 - wins)
        if 1.0 < (e := mixture_e(wins, losses)) < level * (1 - 1e-9)
    ]
    if lower:  # the next achievable level down would cross too often: the level is tight
        assert _brute_force_crossing(horizon, max(lower) * (1 - 1e-12)) > 0.05


def test_calibrated_level_stays_below_ville_and_falls_back_to_it() -> None:
    # on the lattice the level need not grow with the horizon (at 5 only all-won crosses:
    # 14.97; at 20 a lower level is exact), but it never exceeds Ville's
    levels = [calibrated_threshold(h, 0.05) for h in (5, 20, 60, 200)]
    assert all(10.0 < level < 20.0 for level in levels)
    assert calibrated_threshold(10_000, 0.05) == 20.0
    assert calibrated_threshold(0, 0.05) == 20.0
    with pytest.raises(ValueError, match="alpha"):
        calibrated_threshold(10, 0.0)


@pytest.mark.slow
@pytest.mark.parametrize(("discordance", "horizon"), [(0.3, 60), (1.0, 20), (0.6, 200)])
def test_null_false_accept_rate_is_at_most_alpha(discordance: float, horizon: int) -> None:
    """Seeded Monte Carlo of the whole test (gate + probation continuation, stage split 2:1)
    under a fair null: accepts or kept provisionals ≤ α, up to 3 MC standard errors."""
    rng = random.Random(20261201 + horizon)
    reps, alpha = 3000, 0.05
    stage1 = 2 * horizon // 3
    bad = 0
    for _ in range(reps):
        seq = [rng.choice((W, L)) if rng.random() < discordance else T for _ in range(horizon)]
        gate = SequentialGate(GateParams(), horizon=horizon, stage1=stage1)
        for unit_id, base, cand in _pairs(seq):
            gate.observe(unit_id, base, cand)
            if gate.done:
                break
        d = gate.finish()
        if d.action == "accept":
            bad += 1
        elif d.action == "accept_provisional":
            probation = ProbationTest(GateParams(), d.continuation)
            for unit_id, base, cand in _pairs(seq)[stage1:]:
                probation.observe_family(unit_id, [(unit_id, base, cand)])
                if probation.done:
                    break
            bad += probation.verdict()[0] == "keep"
    assert bad / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


# --------------------------------------------------------------------------- decisions


def test_confirm_after_enough_wins_with_ties_interleaved() -> None:
    k = _first_crossing(1.3, 20.0)  # 12 wins at λ = 0.3
    seq = [T, W] * (k - 1) + [W] + [W] * 5
    gate = SequentialGate(P3, horizon=100)
    decisions = [gate.observe(u, b, c) for u, b, c in _pairs(seq)[: 2 * k - 1]]
    assert decisions[-1] == "accept" and decisions[:-1] == [None] * (2 * k - 2)
    d = gate.finish()
    assert (d.action, d.stop_reason, d.ended_by, d.W, d.L) == (
        "accept",
        "confirmed",
        "threshold",
        k,
        0,
    )
    assert d.e_value == pytest.approx(1.3**k)
    assert d.threshold == 20.0 and d.horizon == 100


def test_default_gate_confirms_a_clean_streak_at_the_calibrated_level() -> None:
    d = run_gate(_pairs([W] * 20), horizon=20)
    level = calibrated_threshold(20, 0.05)
    wins_needed = next(w for w in range(1, 21) if mixture_e(w, 0) >= level)
    assert (d.action, d.W, d.n_used) == ("accept", wins_needed, wins_needed)
    assert d.e_value >= d.threshold == level


def test_early_harm_reject() -> None:
    k = _first_crossing(1.3, 10.0)  # E_harm = 1.3^L at λ = 0.3
    d = run_gate(_pairs([L] * 30), replace(P3, curtail=False), horizon=30)
    assert (d.action, d.stop_reason, d.L, d.n_used) == ("reject", "harm", k, k)


def test_provisional_accept_at_the_end_of_stage_one() -> None:
    seq = [W, W, W, T, T, T] + [T] * 6  # E = 1.3^3 = 2.2 ≥ 2 at stage-1 end
    gate = SequentialGate(replace(P3, curtail=False), horizon=12, stage1=6)
    for u, b, c in _pairs(seq):
        gate.observe(u, b, c)
        if gate.done:
            break
    d = gate.finish()
    assert (d.action, d.stop_reason, d.ended_by, d.n_used) == (
        "accept_provisional",
        "provisional",
        "stage",
        6,
    )
    assert d.continuation == GateState(
        evidence=BetState(
            wins=3,
            losses=0,
            d_wins=3,
            d_losses=0,
            e_win=pytest.approx(1.3**3),
            e_harm=pytest.approx(0.7**3),
        ),
        n=6,
        units=6,
        horizon=12,
        threshold=20.0,
    )


def test_no_provisional_without_a_stage_two() -> None:
    d = run_gate(_pairs([W, W, W, T, T, T]), replace(P3, curtail=False), horizon=6)
    assert (d.action, d.stop_reason, d.ended_by) == ("reject", "insufficient_evidence", "n_max")


def test_provisional_needs_net_wins() -> None:
    seq = [W, L, W, T, T, T]  # W − L = 1 < w_net_min, although E_win ≥ e_provisional
    gate = SequentialGate(replace(P3, curtail=False, e_provisional=1.0), horizon=12, stage1=6)
    for u, b, c in _pairs(seq):
        gate.observe(u, b, c)
    assert gate.decision is None  # went on into stage 2


def test_curtailment_stops_when_no_accept_is_reachable() -> None:
    # 10 families, fixed λ = 0.3: 1.3^9 < 20, so after one tie nothing can reach 20.
    d = run_gate(_pairs([T] * 10), P3, horizon=10)
    assert (d.action, d.stop_reason, d.ended_by, d.n_used) == ("reject", "futility", "curtailed", 1)


def test_empty_ladder_rejects() -> None:
    d = run_gate([], horizon=5)
    assert (d.action, d.stop_reason, d.ended_by, d.n_used) == (
        "reject",
        "insufficient_evidence",
        "exhausted",
        0,
    )


def test_futility_when_switched_on() -> None:
    d = run_gate(_pairs([L, T, T]), replace(P3, e_futility=1.2), horizon=50)
    assert (d.action, d.stop_reason, d.n_used) == ("reject", "futility", 1)


def test_family_outcome_is_the_sign_of_the_net() -> None:
    assert family_outcome([("a", False, True)]) == 1
    assert family_outcome([("a", False, True), ("b", True, False)]) == 0
    assert family_outcome([("a", False, True), ("b", True, False), ("c", True, False)]) == -1
    assert family_outcome([("a", True, True), ("b", False, False)]) == 0


def test_a_family_is_one_observation() -> None:
    """Ten identical members count once: the gate sees one W, not ten."""
    members = [(f"f0-{i}", False, True) for i in range(10)]
    gate = SequentialGate(GateParams(), horizon=40)
    gate.observe_family("f0", members)
    assert (gate.W, gate.L, gate.n, gate.units) == (1, 0, 1, 10)
    assert [e.family for e in gate.evidence] == ["f0"] * 10
    assert all(e.outcome == "W" and e.W == 1 for e in gate.evidence)


def test_run_gate_families_with_mixed_outcomes() -> None:
    fams = [(f"f{i}", [(f"u{i}a", False, True), (f"u{i}b", True, True)]) for i in range(8)]
    d = run_gate_families(fams, GateParams(family_evidence="rounded"), horizon=8)
    # every family has d = 1/2 > 0 (a W in reports); the bet counts each as +1 half the time
    assert (d.W, d.L, d.units_used) == (d.n_used, 0, 2 * d.n_used)
    assert d.e_value == mixture_e(*[sum(r.g == s for r in d.evidence) // 2 for s in (1, -1)])


def test_misuse_raises() -> None:
    gate = SequentialGate(replace(P3, curtail=False), horizon=2)
    gate.observe("a", *W)
    with pytest.raises(ValueError, match="twice"):
        gate.observe("a", *W)
    with pytest.raises(ValueError, match="no units"):
        gate.observe_family("f", [])
    with pytest.raises(RuntimeError, match="finish"):
        gate.finish(exhausted=False)
    gate.observe("b", *T)
    with pytest.raises(RuntimeError, match="stopped"):
        gate.observe("c", *W)


def test_run_gate_pulls_no_more_units_than_needed() -> None:
    pulled = []

    def lazy():
        for u, b, c in _pairs([W] * 50):
            pulled.append(u)
            yield u, b, c

    d = run_gate(lazy(), horizon=50)
    assert d.action == "accept" and len(pulled) == d.n_used


def test_outcome_of() -> None:
    assert (
        outcome_of(False, True),
        outcome_of(True, False),
        outcome_of(True, True),
        outcome_of(False, False),
    ) == (1, -1, 0, 0)


def test_labels_keep_their_stored_values() -> None:
    """Step reports and harness.db hold these strings; renaming one breaks old workspaces."""
    assert {"confirmed", "harm", "futility", "provisional", "insufficient_evidence"} == set(
        GateStopReason
    )
    assert {
        "threshold",
        "final_look",
        "no_signal",
        "curtailed",
        "stage",
        "n_max",
        "exhausted",
    } == set(GateEndedBy)


def test_no_signal_stop_after_the_burn_in() -> None:
    """W ≤ L once max(futility_min, share·H) families are in: reject, not before (a test
    without the final look: one that takes it runs its whole ladder)."""
    params = GateParams(futility_share=1 / 3, futility_min=10, curtail=False, final_look=False)
    assert params.no_signal_after(60) == 20 and params.no_signal_after(12) == 10
    assert GateParams(futility_share=0.0).no_signal_after(60) is None
    d = run_gate(_pairs([T] * 60), params, horizon=60)
    assert (d.action, d.stop_reason, d.ended_by, d.n_used) == (
        "reject",
        "futility",
        "no_signal",
        20,
    )
    d = run_gate(_pairs([T] * 19 + [W] + [T] * 40), params, horizon=60)
    assert d.n_used > 20  # one net win at the check: it goes on
    off = run_gate(_pairs([T] * 60), replace(params, futility_share=0.0), horizon=60)
    assert off.n_used == 60 and off.stop_reason == "insufficient_evidence"


def test_a_resumed_test_gets_a_fresh_no_signal_look() -> None:
    """The no-signal stop counts the families of a segment: a test that stopped on 20 ties and
    goes on later (a re-proposed edit set) sees max(futility_min, share·H) more before it may
    stop again, and its evidence, n and level carry over."""
    params = GateParams(futility_share=1 / 3, futility_min=10, curtail=False)
    gate = SequentialGate(params, horizon=60)
    for u, b, c in _pairs([T] * 20):
        gate.observe(u, b, c)
    assert gate.finish().ended_by == "no_signal"
    again = SequentialGate.resume(params, gate.state())
    assert (again.n, again.threshold) == (20, gate.threshold)
    for i in range(19):
        assert again.observe(f"r{i}", True, True) is None  # ties: no stop before 20 more
    assert again.observe("r19", True, True) == "reject"
    assert again.finish().ended_by == "no_signal" and again.n == 40


# --------------------------------------------------------------------------- exhaustive


def _decide(seq, params: GateParams, horizon: int, stage1: int) -> str:
    """The whole test's verdict: 'accept' (at the gate or kept at probation) or 'reject'."""
    gate = SequentialGate(params, horizon=horizon, stage1=stage1)
    for u, b, c in _pairs(seq):
        gate.observe(u, b, c)
        if gate.done:
            break
    d = gate.finish()
    if d.action != "accept_provisional":
        return d.action
    probation = ProbationTest(params, d.continuation)
    for u, b, c in _pairs(seq)[stage1:]:
        probation.observe_family(u, [(u, b, c)])
        if probation.done:
            break
    return "accept" if probation.verdict()[0] == "keep" else "reject"


def _crosses(seq, params: GateParams, horizon: int) -> bool:
    """Whether E_win reaches the level on some prefix before harm stops the test."""
    level = params.accept_level(horizon)
    wins = losses = 0
    for base, cand in seq:
        g = outcome_of(base, cand)
        wins, losses = wins + (g == 1), losses + (g == -1)
        if mixture_e(wins, losses) >= level:
            return True
        if mixture_e(losses, wins) >= params.e_rollback:
            return False
    return False


@pytest.mark.parametrize("horizon", [3, 5, 7])
def test_gate_plus_probation_is_one_test_exhaustively(horizon: int) -> None:
    """For every sequence: (accepted at the gate or kept at probation) == (the one e-process
    crosses the level before harm), with and without curtailment. So a provisional step
    changes when evidence is gathered, never what is decided, and the exact level's
    guarantee covers both."""
    stage1 = max(1, 2 * horizon // 3)
    params = replace(GateParams(), e_provisional=1.5, w_net_min=1, delta_min=0.0)
    for seq in itertools.product((W, L, T), repeat=horizon):
        expected = _crosses(list(seq), params, horizon)
        for curtail in (True, False):
            verdict = _decide(list(seq), replace(params, curtail=curtail), horizon, stage1)
            assert (verdict == "accept") == expected, (seq, curtail)


def test_probation_test_keeps_threshold_and_counts() -> None:
    params = GateParams()  # a state with counts only (a ±1/0 bet's) resumes its wealth from them
    state = GateState(BetState(wins=5, losses=0), n=6, units=9, horizon=14, threshold=20.0)
    probation = ProbationTest(params, state)
    assert (probation.gate.W, probation.gate.n, probation.gate.threshold) == (5, 6, 20.0)
    assert mixture_e(5, 0) < 20.0 <= mixture_e(6, 0)
    probation.observe_family("f", [("x", False, True)])
    verdict, d = probation.verdict()
    assert verdict == "keep" and d.stop_reason == "confirmed" and d.n_used == 7
    probation = ProbationTest(params, state)
    probation.observe_family("f", [("x", True, False)])
    for i in range(7):
        if probation.done:
            break
        probation.observe_family(f"g{i}", [(f"y{i}", True, True)])
    assert probation.verdict()[0] == "rollback"


# --------------------------------------------------------------------------- pair_block


def test_pair_block_counts_and_skips_missing() -> None:
    base = {"a": False, "b": True, "c": True, "d": False, "e": False, "f": True}
    cand = {"a": True, "b": False, "c": True, "d": False, "e": True, "g": True}
    units = ["a", "b", "c", "d", "e", "f", "g", "h", "a"]  # f,g,h missing on a side; a repeated
    assert pair_block(units, base, cand) == PairResult(W=2, L=1, both_right=1, both_wrong=1, n=5)
    assert pair_block([], base, cand) == PairResult(0, 0, 0, 0, 0)


# --------------------------------------------------------------------------- family evidence


def _consistent_families(count: int) -> list[tuple[str, list[tuple[str, bool, bool]]]]:
    """Families of 3 where the candidate has the baseline's per-unit accuracy (2/3 right on
    every family) but gets a family's units all right or all wrong: two families in three it
    is right on all three (d = +1/3), the third it is wrong on all three (d = −2/3). The sign
    of each family's net favours the candidate 2:1; the mean difference is 0."""
    out = []
    for i in range(count):
        base = [True, True, False]
        cand = [False] * 3 if i % 3 == 2 else [True] * 3
        out.append(
            (
                f"f{i}",
                [(f"f{i}.{k}", b, c) for k, (b, c) in enumerate(zip(base, cand, strict=True))],
            )
        )
    return out


def test_family_mean_is_the_mean_unit_difference() -> None:
    fams = _consistent_families(3)
    assert [family_mean(pairs) for _, pairs in fams] == pytest.approx([1 / 3, 1 / 3, -2 / 3])
    assert [family_outcome(pairs) for _, pairs in fams] == [1, 1, -1]


@pytest.mark.parametrize("evidence", ["rounded", "mean"])
def test_consistency_only_candidate_does_not_win(evidence: str) -> None:
    """The sign rule accepted this candidate (W = 2L); the gate's evidence does not."""
    fams = _consistent_families(90)
    signs = [family_outcome(pairs) for _, pairs in fams]
    old_rule = run_gate_families(  # the sign rule: each family fed as its sign's single unit
        [(f, [(f, *{1: W, -1: L, 0: T}[g])]) for (f, _), g in zip(fams, signs, strict=True)],
        horizon=90,
    )
    assert old_rule.action == "accept"
    params = replace(GateParams(), family_evidence=evidence)
    d = run_gate_families(fams, params, horizon=90)
    assert d.action == "reject"
    # reports count families with d > 0 / d < 0, whatever the bet moved on
    assert (signs[: d.n_used].count(1), signs[: d.n_used].count(-1)) == (d.W, d.L)


def test_betting_on_the_mean_never_grows_on_a_zero_mean_cycle() -> None:
    """Σ log(1 + λd) over one cycle (+1/3, +1/3, −2/3) is < 0 for every λ of the mixture
    (concavity), so E_win falls cycle after cycle."""
    gate = SequentialGate(replace(GateParams(), family_evidence="mean"), horizon=60)
    values = []
    for family, pairs in _consistent_families(30):
        gate.observe_family(family, pairs)
        if int(family[1:]) % 3 == 2:
            values.append(gate.e_win)
    assert all(b < a for a, b in itertools.pairwise([1.0, *values]))


def test_rounded_outcome_has_mean_d_and_is_a_function_of_the_unit_ids() -> None:
    ids = [[f"q{i}.a", f"q{i}.b", f"q{i}.c"] for i in range(20_000)]
    for d in (1 / 3, -2 / 3, 0.5):
        draws = [rounded_outcome(u, d) for u in ids]
        assert set(draws) == ({0, 1} if d > 0 else {0, -1})
        assert sum(draws) / len(draws) == pytest.approx(d, abs=4 * math.sqrt(abs(d) / len(ids)))
    assert rounded_outcome(["b", "a"], 0.5) == rounded_outcome(["a", "b"], 0.5)
    assert [rounded_outcome(["x"], d) for d in (-1.0, 0.0, 1.0)] == [-1, 0, 1]


def test_rounded_evidence_rows_carry_d_and_the_counted_outcome() -> None:
    gate = SequentialGate(GateParams(family_evidence="rounded"), horizon=10)
    pairs = [("a", False, True), ("b", True, True)]
    gate.observe_family("f", pairs)
    g = rounded_outcome(["a", "b"], 0.5)
    assert (gate.W, gate.L, gate.bet_W, gate.bet_L) == (1, 0, int(g == 1), 0)
    assert gate.e_win == mixture_e(gate.bet_W, gate.bet_L)
    assert {(r.d, r.g, r.outcome) for r in gate.evidence} == {(0.5, g, "W")}


def test_family_evidence_is_validated() -> None:
    with pytest.raises(ValueError, match="family_evidence"):
        GateParams(family_evidence="sign")
    assert GateParams(family_evidence="mean").accept_level(60) == 20.0  # Ville: d is off-lattice


def test_a_singletons_test_refuses_a_larger_family() -> None:
    """Its level was calibrated for single units; a larger family would void it."""
    gate = SequentialGate(GateParams(), horizon=10, singletons=True)
    assert gate.threshold == calibrated_threshold(10, 0.05)
    with pytest.raises(ValueError, match="singletons"):
        gate.observe_family("f", [("a", False, True), ("b", False, True)])


def test_betting_on_d_over_single_units_is_the_lattice_mixture_exactly() -> None:
    """With one unit per family d is ±1/0, so the mean bet's wealth is mixture_e(W, L): the
    exact level (`singletons`) holds for it."""
    gate = SequentialGate(GateParams(), horizon=12, singletons=True)
    for i, (base, cand) in enumerate([(0, 1), (1, 0), (0, 1), (1, 1), (0, 1), (0, 0)]):
        gate.observe(f"u{i}", bool(base), bool(cand))
    assert gate.e_win == pytest.approx(mixture_e(3, 1), rel=1e-12)
    assert gate.e_harm == pytest.approx(mixture_e(1, 3), rel=1e-12)


@pytest.mark.parametrize("evidence", ["rounded", "mean"])
def test_probation_resumes_the_family_evidence_exactly(evidence: str) -> None:
    """state(), then resume: the same E_win/E_harm and counts, and the same further path, as
    the test that was never interrupted (through checkpoint.json: tests/app/training/test_train_state.py)."""
    params = replace(GateParams(), family_evidence=evidence)
    rng = random.Random(7)
    fams = [
        (f"f{i}", [(f"f{i}.{k}", rng.random() < 0.5, rng.random() < 0.7) for k in range(3)])
        for i in range(40)
    ]
    whole = SequentialGate(replace(params, curtail=False, futility_share=0.0), horizon=40)
    cut = SequentialGate(replace(params, curtail=False, futility_share=0.0), horizon=40)
    for family, pairs in fams[:10]:
        whole.observe_family(family, pairs)
        cut.observe_family(family, pairs)
    state = cut.state()
    resumed = SequentialGate.resume(replace(params, curtail=False, futility_share=0.0), state)
    for family, pairs in fams[10:25]:
        for gate in (whole, resumed):
            if not gate.done:
                gate.observe_family(family, pairs)
        assert (resumed.e_win, resumed.e_harm) == (whole.e_win, whole.e_harm)
        assert (resumed.W, resumed.L, resumed.bet_W, resumed.bet_L, resumed.n) == (
            whole.W,
            whole.L,
            whole.bet_W,
            whole.bet_L,
            whole.n,
        )


def test_a_state_without_d_counts_resumes_with_single_unit_meaning() -> None:
    state = GateState(BetState(wins=4, losses=1), n=6, units=6, horizon=20, threshold=12.0)
    gate = SequentialGate.resume(GateParams(), state)
    assert (gate.W, gate.L, gate.bet_W, gate.bet_L) == (4, 1, 4, 1)


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
def test_fixed_and_kt_bets_on_the_mean(strategy: str) -> None:
    """With family_evidence "mean" the fixed / KT bets multiply by (1 + λd) with the bet they
    would have used on the counts so far (the harness's shadow gates run these)."""
    params = GateParams(lambda_strategy=strategy, family_evidence="mean", lambda_dir=0.3)
    gate = SequentialGate(params, horizon=20)
    expected, bettor = 1.0, EProcessPair(strategy, 0.3, params.lambda_max)
    for family, pairs in _consistent_families(6):
        lam, _ = bettor.bets()
        d = family_mean(pairs)
        expected *= 1.0 + lam * d
        bettor.wins, bettor.losses = bettor.wins + (d > 0), bettor.losses + (d < 0)
        gate.observe_family(family, pairs)
        assert gate.e_win == pytest.approx(expected)


# --------------------------------------------------------------------------- typed test state


@pytest.mark.parametrize(
    "strategy, evidence, kept",
    [
        ("mixture", "mean", {"log_win", "log_harm", "on_lattice"}),
        ("mixture", "rounded", set()),
        ("fixed", "mean", {"e_win", "e_harm"}),
        ("kt", "rounded", {"e_win", "e_harm"}),
    ],
)
def test_a_state_keeps_what_its_bet_needs_and_resumes_exactly(
    strategy: str, evidence: str, kept: set[str]
) -> None:
    """Each bet keeps its own wealth in BetState (the rest None); resuming from it goes on
    exactly as the test that was never interrupted."""
    params = GateParams(
        lambda_strategy=strategy, family_evidence=evidence, curtail=False, futility_share=0.0
    )
    rng = random.Random(11)
    fams = [
        (f"f{i}", [(f"f{i}.{k}", rng.random() < 0.5, rng.random() < 0.7) for k in range(2)])
        for i in range(30)
    ]
    whole, cut = SequentialGate(params, horizon=30), SequentialGate(params, horizon=30)
    for family, pairs in fams[:8]:
        whole.observe_family(family, pairs)
        cut.observe_family(family, pairs)
    state = cut.state()
    bet = state.evidence
    wealth = {"e_win", "e_harm", "log_win", "log_harm", "on_lattice"}
    assert {name for name in wealth if getattr(bet, name) is not None} == kept
    assert (bet.wins, bet.losses, bet.d_wins, bet.d_losses) == (
        cut.bet_W,
        cut.bet_L,
        cut.W,
        cut.L,
    )
    assert (state.n, state.units, state.horizon, state.threshold) == (8, 16, 30, cut.threshold)
    resumed = SequentialGate.resume(params, state)
    assert resumed.state() == state
    for family, pairs in fams[8:]:
        for gate in (whole, resumed):
            if not gate.done:
                gate.observe_family(family, pairs)
        assert (resumed.e_win, resumed.e_harm, resumed.W, resumed.L, resumed.n) == (
            whole.e_win,
            whole.e_harm,
            whole.W,
            whole.L,
            whole.n,
        )


def test_a_fixed_bet_state_without_its_wealth_is_refused() -> None:
    state = GateState(BetState(wins=2, losses=0), n=2, units=2, horizon=10, threshold=20.0)
    with pytest.raises(ValueError, match="e_win and e_harm"):
        SequentialGate.resume(GateParams(lambda_strategy="fixed"), state)


def test_a_mean_state_from_a_counts_only_bet_takes_its_wealth_from_the_counts() -> None:
    """A ±1/0 bet's state (no log wealth) resumed by the mixture bet on d: the wealth the counts
    give, on the lattice."""
    state = GateState(BetState(wins=3, losses=1), n=4, units=4, horizon=20, threshold=20.0)
    gate = SequentialGate.resume(GateParams(family_evidence="mean"), state)
    assert gate.e_win == pytest.approx(mixture_e(3, 1), rel=1e-12)
    assert gate.state().evidence.on_lattice is True
    gate.observe_family("f", [("a", False, True), ("b", False, False)])  # d = 0.5
    assert gate.state().evidence.on_lattice is False


def test_evidence_rows_are_typed_per_unit() -> None:
    gate = SequentialGate(GateParams(), horizon=10)
    gate.observe_family("f0", [("a", False, True), ("b", True, True)])
    gate.observe("c", True, None)
    first, second, third = gate.evidence
    assert first == EvidenceRow(
        unit_id="a",
        family="f0",
        base=False,
        cand=True,
        outcome=FamilyOutcome.W,
        e_win=first.e_win,
        e_harm=first.e_harm,
        W=1,
        L=0,
        n=1,
        d=0.5,
        g=1,
    )
    assert (second.unit_id, second.family, second.n) == ("b", "f0", 1)
    assert (third.family, third.cand, third.outcome, third.d, third.g) == ("c", None, "L", -1, -1)
    assert (third.W, third.L, third.n) == (1, 1, 2)


# --------------------------------------------------------------------------- final look


def test_final_look_accepts_at_the_ladders_end_what_the_threshold_alone_misses() -> None:
    """5 wins among 48 singletons, the rest ties: the threshold for 48 needs 6 straight wins,
    the final look accepts 5 of 5 discordant (P = 1/32 under the null, within the level)."""
    path = [W] * 5 + [T] * 43
    on = run_gate(_pairs(path), GateParams(), horizon=48)
    off = run_gate(_pairs(path), GateParams(final_look=False), horizon=48)
    assert (on.action, on.ended_by, on.n_used) == ("accept", "final_look", 48)
    assert off.action == "reject"
    # one loss among them: 5 of 6 is not enough (c(6) = 6)
    lost = run_gate(_pairs([W] * 5 + [L] + [T] * 42), GateParams(), horizon=48)
    assert lost.action == "reject"


def test_final_look_is_taken_only_on_the_lattice_and_never_after_a_resume() -> None:
    assert SequentialGate(GateParams(), horizon=48, singletons=True).final_look
    assert not SequentialGate(GateParams(), horizon=48, singletons=False).final_look
    rounded = GateParams(family_evidence="rounded")
    assert SequentialGate(rounded, horizon=48).final_look
    assert not SequentialGate(
        GateParams(lambda_strategy="kt"), horizon=48, singletons=True
    ).final_look
    gate = SequentialGate(GateParams(), horizon=48, stage1=32, singletons=True)
    assert not SequentialGate.resume(GateParams(), gate.state()).final_look


def test_a_final_look_test_runs_its_ladder_without_provisional_or_no_signal_stops() -> None:
    # 20 ties: the no-signal stop would reject at 16 (a third of 48); the final look goes on
    d = run_gate(_pairs([T] * 20 + [W] * 5 + [T] * 23), GateParams(curtail=False), horizon=48)
    assert (d.action, d.ended_by) == ("accept", "final_look")
    # a strong stage 1 is not a provisional accept: the test goes on into stage 2
    gate = SequentialGate(GateParams(), horizon=48, stage1=8, singletons=True)
    for i, pair in enumerate([W, W, W, W, L, T, T, T]):
        gate.observe(f"u{i}", *pair)
    assert gate.decision is None


def test_curtailment_counts_the_final_look_and_changes_no_decision() -> None:
    """Over every path of 12 singletons, the gate with curtailment decides as without it."""
    params = GateParams()
    for path in itertools.product((W, L, T), repeat=8):
        full = [*path, T, T, W, W]
        with_c = run_gate(_pairs(full), params, horizon=12)
        without = run_gate(_pairs(full), replace(params, curtail=False), horizon=12)
        assert with_c.action == without.action


def test_the_coin_accepts_one_win_short_with_the_chance_that_spends_alpha() -> None:
    """4 wins of 4 discordant on a ladder of 48 (P = 1/16 under the null, above α): accepted
    on a coin below γ = 0.05 / (1/16) = 0.8 and only then; never without a coin, with the coin
    off, or below `coin_min_wins`."""
    path = _pairs([W] * 4 + [T] * 44)
    won = run_gate_families(_families(path), GateParams(), horizon=48, singletons=True, coin=0.79)
    assert (won.action, won.ended_by, won.n_used) == ("accept", "final_look", 48)
    assert won.chance == pytest.approx(0.8, rel=1e-6)
    for params, coin in (
        (GateParams(), 0.81),
        (GateParams(), None),
        (GateParams(final_look_coin=False), 0.0),
        (GateParams(coin_min_wins=5), 0.0),
    ):
        lost = run_gate_families(_families(path), params, horizon=48, singletons=True, coin=coin)
        assert lost.action == "reject" and lost.chance == 1.0
    # 2 of 2 (γ = 0.2): below the default floor of 3 wins, accepted only when the floor is 1
    two = _families(_pairs([W, W] + [T] * 46))
    assert run_gate_families(two, GateParams(), horizon=48, singletons=True, coin=0.0).action == (
        "reject"
    )
    low = run_gate_families(two, GateParams(coin_min_wins=1), horizon=48, singletons=True, coin=0.1)
    assert low.action == "accept" and low.chance == pytest.approx(0.2, rel=1e-6)
    # 5 of 5 needs no coin: chance 1
    sure = run_gate_families(
        _families(_pairs([W] * 5 + [T] * 43)), GateParams(), horizon=48, singletons=True, coin=0.99
    )
    assert sure.action == "accept" and sure.chance == 1.0
    with pytest.raises(ValueError, match="coin"):
        SequentialGate(GateParams(), horizon=4, coin=1.0)


def _null_rates_over_the_coin(
    params: GateParams, horizon: int, ties: tuple[float, ...]
) -> list[float]:
    """P(accept) of the whole gate (threshold, harm stop, curtailment, final look and coin)
    under the null, exactly, for each tie probability: every path of `horizon` singletons,
    each a win or a loss with probability (1 - tie) / 2, averaged over the coin. With coin 0 a
    path is accepted on every chance > 0, and the coin accepts it for u < chance: its share is
    the decision's chance."""
    totals = [0.0] * len(ties)
    for path in itertools.product((W, L, T), repeat=horizon):
        d = run_gate_families(
            _families(_pairs(list(path))), params, horizon=horizon, singletons=True, coin=0.0
        )
        if d.action != "accept":
            continue
        n_ties = path.count(T)
        for i, tie in enumerate(ties):
            weight = tie**n_ties * ((1 - tie) / 2) ** (horizon - n_ties)
            totals[i] += weight * d.chance
    return totals


def test_the_gate_with_its_coin_keeps_alpha_by_exact_enumeration() -> None:
    """Every path of 8 singletons, ties 0, 0.5 and 0.8 of the time: the whole gate with the
    coin accepts a null edit with probability <= α, more often than without it; with a floor
    of one win and no ties it spends nearly all of α (the harm stop takes the rest)."""
    ties = (0.0, 0.5, 0.8)
    for floor in (1, 3):
        params = GateParams(coin_min_wins=floor)
        with_coin = _null_rates_over_the_coin(params, 8, ties)
        without = _null_rates_over_the_coin(replace(params, final_look_coin=False), 8, ties)
        for rate, base in zip(with_coin, without, strict=True):
            assert base < rate <= 0.05 * (1 + 1e-9)
        if floor == 1:
            assert with_coin[0] > 0.045


def test_curtailment_with_a_coin_changes_no_decision() -> None:
    """Curtailment knows the coin: it stops once no end the coin would accept is reachable,
    and decides every path as the gate without curtailment does."""
    for coin in (0.0, 0.35, 0.9):
        for path in itertools.product((W, L, T), repeat=7):
            full = _families(_pairs([*path, T, T, W, T, T]))
            on = run_gate_families(full, GateParams(), horizon=12, singletons=True, coin=coin)
            off = run_gate_families(
                full, GateParams(curtail=False), horizon=12, singletons=True, coin=coin
            )
            assert (on.action, on.chance) == (off.action, off.chance)


def test_a_skipped_family_is_exactly_a_tie_and_never_counted_twice() -> None:
    """`skip` (a gate draw not asked for) moves n and nothing else, as an observed tie does."""
    params = GateParams(e_confirm=4.0, final_look=False)
    skipping, observing = (SequentialGate(params, horizon=6) for _ in range(2))
    for gate, third in ((skipping, None), (observing, (True, True))):
        gate.observe("u0", False, True)
        gate.observe("u1", False, True)
        if third is None:
            gate.skip("u2")
        else:
            gate.observe("u2", *third)
    assert (skipping.n, skipping.W, skipping.L, skipping.e_win) == (
        observing.n,
        observing.W,
        observing.L,
        observing.e_win,
    )
    assert skipping.skipped == 1 and observing.skipped == 0
    with pytest.raises(ValueError, match="twice"):
        skipping.skip("u2")
    while not skipping.done:
        skipping.observe(f"w{skipping.n}", False, True)
    with pytest.raises(RuntimeError, match="stopped"):
        skipping.skip("late")
