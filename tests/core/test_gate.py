"""The sequential gate, pair counting and probation verdicts (DESIGN §6.6)."""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from core.evolution.gate import (
    ENDED_BY,
    STOP_REASONS,
    GateDecision,
    GateParams,
    PairResult,
    SequentialGate,
    outcome_of,
    pair_block,
    probation_verdict,
    run_gate,
)

W, L, T = (False, True), (True, False), (True, True)  # (base, cand): a win, a loss, a tie
# The mechanics tests below do their arithmetic at λ = 0.3 with the bare thresholds of §6.6
# (no futility stop); the defaults' own behaviour is tested separately.
P3 = GateParams(lambda_dir=0.3, e_provisional=2.0, e_futility=None)


def _pairs(seq: list[tuple[bool, bool]]) -> list[tuple[str, bool, bool]]:
    return [(f"u{i}", base, cand) for i, (base, cand) in enumerate(seq)]


def _first_crossing(factor: float, threshold: float) -> int:
    """Smallest k with factor**k >= threshold: independent arithmetic for the expected stop."""
    return math.ceil(math.log(threshold) / math.log(factor))


# --------------------------------------------------------------------------- params


def test_params_defaults() -> None:
    p = GateParams()
    assert (p.e_confirm, p.e_rollback, p.e_provisional, p.e_futility) == (20.0, 10.0, 5.0, 1.3)
    assert (p.w_net_min, p.delta_min, p.lambda_dir, p.lambda_strategy) == (2, 0.02, 0.35, "fixed")
    assert (p.lambda_max, p.shrink_k, p.n_max, p.curtail) == (0.5, 10, 60, True)


@pytest.mark.parametrize(
    ("field", "value"),
    [("lambda_dir", 0.0), ("lambda_dir", 1.0), ("lambda_dir", float("nan")), ("lambda_max", 1.5),
     ("e_confirm", 0.5), ("e_rollback", 0.99), ("e_provisional", -1.0), ("n_max", 0),
     ("shrink_k", -1), ("lambda_strategy", "kelly"), ("e_futility", 1.0),
     ("e_futility", 0.5)],
)
def test_params_validation_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GateParams(**{field: value})


def test_futility_can_be_switched_off() -> None:
    assert GateParams(e_futility=None).e_futility is None


def test_params_are_frozen() -> None:
    with pytest.raises(AttributeError):
        GateParams().n_max = 5  # type: ignore[misc]


# --------------------------------------------------------------------------- decisions


def test_confirm_after_enough_wins_with_ties_interleaved() -> None:
    k = _first_crossing(1.3, 20.0)  # 12 wins at λ = 0.3
    seq = [T, W] * (k - 1) + [W] + [W] * 5
    gate = SequentialGate(P3)
    decisions = [gate.observe(u, b, c) for u, b, c in _pairs(seq)[: 2 * k - 1]]
    assert decisions[:-1] == [None] * (2 * k - 2)
    assert decisions[-1] == "accept"
    d = gate.finish(exhausted=False)
    assert (d.action, d.stop_reason, d.ended_by) == ("accept", "confirmed", "threshold")
    assert (d.W, d.L, d.n_used) == (k, 0, 2 * k - 1)
    assert d.e_value == pytest.approx(1.3**k)
    assert d.e_value >= 20.0 > 1.3 ** (k - 1)
    assert d.delta_hat == pytest.approx(k / (2 * k - 1))
    assert d.delta_shrunk == pytest.approx(k / (2 * k - 1 + 10))
    assert d.accepted


def test_early_harm_reject() -> None:
    k = _first_crossing(1.3, 10.0)  # 9 losses at λ = 0.3
    d = run_gate(_pairs([L] * 30), P3)
    assert (d.action, d.stop_reason, d.n_used, d.L, d.W) == ("reject", "harm", k, k, 0)
    assert d.ended_by == "threshold"
    assert d.e_harm == pytest.approx(1.3**k)
    assert d.e_value == pytest.approx(0.7**k)
    assert not d.accepted


def test_provisional_accept_at_n_max() -> None:
    # 5 W, 1 L in 60 units: E_win = 1.3^5·0.7 ≈ 2.60 ≥ 2, W − L = 4, 4/70 ≥ 0.02
    seq = [W] * 5 + [L] + [T] * 54 + [W] * 20
    d = run_gate(_pairs(seq), P3)
    assert (d.action, d.stop_reason, d.ended_by) == ("accept_provisional", "provisional", "n_max")
    assert (d.W, d.L, d.n_used) == (5, 1, 60)
    assert d.e_value == pytest.approx(1.3**5 * 0.7)
    assert d.delta_shrunk == pytest.approx(4 / 70)
    assert len(d.evidence) == 60


def test_insufficient_evidence_when_e_value_is_low() -> None:
    d = run_gate(_pairs([W] * 3 + [L] + [T] * 10), P3)  # E = 1.3³·0.7 ≈ 1.54 < 2
    assert (d.action, d.stop_reason, d.ended_by) == ("reject", "insufficient_evidence", "exhausted")
    assert d.n_used == 14


def test_insufficient_when_net_wins_too_few() -> None:
    # E = 1.3³ ≈ 2.2 ≥ 2 but W − L = 3 < w_net_min = 4
    d = run_gate(_pairs([W] * 3 + [T] * 5), replace(P3, w_net_min=4))
    assert (d.action, d.stop_reason) == ("reject", "insufficient_evidence")
    assert run_gate(_pairs([W] * 3 + [T] * 5), replace(P3, w_net_min=3)).action == (
        "accept_provisional"
    )


def test_insufficient_when_shrunk_effect_too_small() -> None:
    # E = 1.3⁴ ≈ 2.86, W − L = 4, but 4/(200 + 10) < 0.02 on a long ladder
    params = replace(P3, n_max=300)
    d = run_gate(_pairs([W] * 4 + [T] * 196), params)
    assert (d.action, d.stop_reason, d.ended_by) == ("reject", "insufficient_evidence", "exhausted")
    assert d.delta_shrunk == pytest.approx(4 / 210)
    assert run_gate(_pairs([W] * 4 + [T] * 180), params).action == "accept_provisional"


def test_empty_ladder_rejects() -> None:
    d = run_gate([], GateParams())
    assert (d.action, d.n_used, d.delta_hat, d.e_value) == ("reject", 0, 0.0, 1.0)


def test_kt_strategy_confirms_faster_on_a_clear_streak() -> None:
    # KT: the first W is bet at λ = 0 (p̂ = ½), later ones at the clip λ_max = 0.5.
    params = GateParams(lambda_strategy="kt", lambda_max=0.5)
    d = run_gate(_pairs([W] * 40), params)
    k = 1 + _first_crossing(1.5, 20.0)
    assert (d.action, d.n_used) == ("accept", k)
    assert d.e_value == pytest.approx(1.5 ** (k - 1))
    assert k < _first_crossing(1.3, 20.0)


def test_evidence_rows() -> None:
    gate = SequentialGate(P3)
    for unit_id, base, cand in _pairs([W, T, L, (False, False)]):
        gate.observe(unit_id, base, cand)
    rows = gate.evidence
    assert [r["outcome"] for r in rows] == ["W", "tie", "L", "tie"]
    assert [(r["W"], r["L"], r["n"]) for r in rows] == [(1, 0, 1), (1, 0, 2), (1, 1, 3), (1, 1, 4)]
    assert rows[2]["e_win"] == pytest.approx(1.3 * 0.7)
    assert rows[2]["e_harm"] == pytest.approx(0.7 * 1.3)
    assert set(rows[0]) == {"unit_id", "base", "cand", "outcome", "e_win", "e_harm", "W", "L", "n"}
    d = gate.finish(exhausted=True)
    assert isinstance(d, GateDecision) and d.evidence == tuple(rows)


def test_misuse_raises() -> None:
    gate = SequentialGate(GateParams(n_max=3, curtail=False))
    gate.observe("a", *T)
    with pytest.raises(ValueError, match="twice"):
        gate.observe("a", *W)
    with pytest.raises(RuntimeError):
        gate.finish(exhausted=False)  # neither n_max, nor exhausted, nor decided
    gate.observe("b", *T)
    gate.observe("c", *T)
    assert gate.done
    with pytest.raises(RuntimeError):
        gate.observe("d", *W)
    assert gate.finish(exhausted=False).ended_by == "n_max"


def test_run_gate_pulls_no_more_units_than_needed() -> None:
    pulled: list[str] = []

    def lazy() -> Iterator[tuple[str, bool, bool]]:
        for i in range(1000):
            pulled.append(f"u{i}")
            yield (f"u{i}", False, True)

    d = run_gate(lazy(), P3)
    assert d.action == "accept"
    assert len(pulled) == d.n_used == _first_crossing(1.3, 20.0)
    pulled.clear()
    ties = ((f"u{i}", True, True) for i in range(1000) if not pulled.append("x"))
    assert run_gate(ties, replace(P3, curtail=False)).n_used == 60
    assert len(pulled) == 60  # stops at n_max


def test_outcome_of() -> None:
    assert [outcome_of(*W), outcome_of(*L), outcome_of(*T), outcome_of(False, False)] == [
        1, -1, 0, 0]


# --------------------------------------------------------------------------- error control


def _stopped_expectations(
    gate: SequentialGate, p_disc: float, p_win_given_disc: float = 0.5
) -> tuple[float, float, float]:
    """Exact (E[E_win at stop], E[E_harm at stop], P(accept)) by enumerating every ladder."""
    if gate.done:
        return (gate.e_win, gate.e_harm, float(gate.decision == "accept"))
    branches = [(W, p_disc * p_win_given_disc), (L, p_disc * (1 - p_win_given_disc)),
                (T, 1 - p_disc)]
    totals = [0.0, 0.0, 0.0]
    for (base, cand), prob in branches:
        child = copy.deepcopy(gate)
        child.observe(f"u{gate.n}", base, cand)
        for i, value in enumerate(_stopped_expectations(child, p_disc, p_win_given_disc)):
            totals[i] += prob * value
    return (totals[0], totals[1], totals[2])


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
@pytest.mark.parametrize(("e_futility", "curtail"), [(None, False), (1.4, True)])
def test_optional_stopping_keeps_mean_wealth_one_under_null(
    strategy: str, e_futility: float | None, curtail: bool
) -> None:
    # Low thresholds so that stops really happen within 7 units; the futility stop and
    # curtailment are stopping times too, so they must not move the mean either.
    params = GateParams(e_confirm=3.0, e_rollback=3.0, lambda_dir=0.5, lambda_max=0.6,
                        lambda_strategy=strategy, n_max=7, e_futility=e_futility,
                        curtail=curtail)
    mean_win, mean_harm, p_accept = _stopped_expectations(SequentialGate(params), 0.7)
    assert mean_win == pytest.approx(1.0, abs=1e-12)
    assert mean_harm == pytest.approx(1.0, abs=1e-12)
    assert 0.0 < p_accept <= 1 / params.e_confirm


def test_optional_stopping_check_detects_a_real_effect() -> None:
    params = GateParams(e_confirm=3.0, e_rollback=3.0, lambda_dir=0.5, n_max=7)
    mean_win, _, p_accept = _stopped_expectations(SequentialGate(params), 0.7, 0.8)
    assert mean_win > 1.2
    assert p_accept > 1 / params.e_confirm


# --------------------------------------------------------------------------- futility


def test_futility_stops_when_the_evidence_leans_against() -> None:
    # Defaults: λ = 0.35, e_futility = 1.3. One L before any W gives E_harm = 1.35.
    d = run_gate(_pairs([T, L] + [W] * 30), GateParams())
    assert (d.action, d.stop_reason, d.ended_by, d.n_used) == ("reject", "futility",
                                                                "threshold", 2)
    assert d.e_harm == pytest.approx(1.35)
    # After a W it takes L with 1.35^L·0.65 ≥ 1.3, i.e. L = 3 (1.35²·0.65 ≈ 1.18 < 1.3).
    d = run_gate(_pairs([W, L, L, L, W, W]), GateParams())
    assert (d.stop_reason, d.n_used, d.W, d.L) == ("futility", 4, 1, 3)
    assert d.e_harm == pytest.approx(0.65 * 1.35**3)
    assert 1.3 <= d.e_harm < GateParams().e_rollback
    # Switched off, the same ladder goes on.
    assert run_gate(_pairs([W, L, L, L, W, W]), GateParams(e_futility=None)).n_used == 6


def test_harm_takes_precedence_over_futility() -> None:
    # One L crosses both levels: the stronger finding is reported.
    d = run_gate(_pairs([L, W]), GateParams(e_rollback=1.3, e_futility=1.1))
    assert (d.action, d.stop_reason) == ("reject", "harm")
    assert {"futility"} <= set(STOP_REASONS) and {"curtailed"} <= set(ENDED_BY)


# --------------------------------------------------------------------------- curtailment


def test_curtailment_stops_when_no_accept_is_reachable() -> None:
    # Ties only, defaults: accept needs E_win ≥ 5 at least, i.e. 6 more W at λ = 0.35
    # (1.35⁵ ≈ 4.48 < 5 ≤ 1.35⁶), so after unit 55 of 60 nothing can be accepted any more.
    params = GateParams()
    k = _first_crossing(1 + params.lambda_dir, params.e_provisional)
    assert k == 6
    pulled: list[str] = []
    ties = ((f"u{i}", True, True) for i in range(1000) if not pulled.append("x"))
    d = run_gate(ties, params)
    assert (d.action, d.stop_reason, d.ended_by) == ("reject", "futility", "curtailed")
    assert d.n_used == len(pulled) == params.n_max - k + 1
    off = run_gate(_pairs([T] * 60), replace(params, curtail=False))
    assert (off.action, off.stop_reason, off.ended_by) == ("reject", "insufficient_evidence",
                                                           "n_max")


def test_curtailment_never_fires_before_the_first_unit() -> None:
    # The harness observes before it checks `done`, so a fresh gate must not be done even
    # when its configuration can never accept.
    gate = SequentialGate(GateParams(n_max=1, e_provisional=5.0))
    assert not gate.done
    gate.observe("a", *W)
    assert gate.done and gate.finish(exhausted=False).stop_reason == "insufficient_evidence"


# Small ladders where every stop kind happens: confirm, harm, futility, provisional,
# insufficient evidence, curtailment.
_CURTAIL_CASES = {
    "fixed": GateParams(n_max=7, lambda_dir=0.4, e_confirm=6.0, e_rollback=4.0,
                        e_provisional=2.5, e_futility=None, w_net_min=2, delta_min=0.25,
                        shrink_k=2),
    "fixed+futility": GateParams(n_max=7, lambda_dir=0.4, e_confirm=6.0, e_rollback=4.0,
                                 e_provisional=2.5, e_futility=1.5, w_net_min=2,
                                 delta_min=0.25, shrink_k=2),
    "kt": GateParams(n_max=7, lambda_strategy="kt", lambda_max=0.6, e_confirm=6.0,
                     e_rollback=4.0, e_provisional=2.5, e_futility=None, w_net_min=2,
                     delta_min=0.25, shrink_k=2),
    "kt+futility": GateParams(n_max=7, lambda_strategy="kt", lambda_max=0.6, e_confirm=6.0,
                              e_rollback=4.0, e_provisional=2.0, e_futility=1.4, w_net_min=3,
                              delta_min=0.2, shrink_k=4),
}


@pytest.mark.parametrize("case", sorted(_CURTAIL_CASES))
def test_curtailment_preserves_every_decision_exhaustively(case: str) -> None:
    """Every ladder of length ≤ n_max (so also ladders exhausted early): curtailment gives
    the decision of the gate run without it, and stops exactly at the first unit after which
    no ladder through the same prefix could be accepted (it saves all it can, no more)."""
    params = _CURTAIL_CASES[case]
    reference = replace(params, curtail=False)
    seqs = [seq for k in range(params.n_max + 1)
            for seq in itertools.product((W, L, T), repeat=k)]
    ref = {seq: run_gate(_pairs(list(seq)), reference) for seq in seqs}
    accept_below: set[tuple[tuple[bool, bool], ...]] = set()  # prefixes with an accept below
    for seq, d in ref.items():
        if d.accepted:
            accept_below.update(seq[:m] for m in range(len(seq) + 1))
    kinds: set[str] = set()
    curtailed = saved = 0
    for seq in seqs:
        d, r = run_gate(_pairs(list(seq)), params), ref[seq]
        assert d.action == r.action, seq
        assert d.stop_reason in STOP_REASONS and d.ended_by in ENDED_BY
        expected_n = next(
            (m for m in range(1, len(seq) + 1)
             if (m == r.n_used and r.ended_by == "threshold")
             or (m < params.n_max and seq[:m] not in accept_below)),
            len(seq),
        )
        assert d.n_used == expected_n, seq
        if d.ended_by == "curtailed":
            assert (d.action, d.stop_reason) == ("reject", "futility")
            curtailed += 1
            saved += r.n_used - d.n_used
        kinds.add(r.stop_reason)
    # With a futility stop below e_rollback, E_harm always meets it first: no "harm" here.
    stop_early = "harm" if params.e_futility is None else "futility"
    assert kinds == {"confirmed", stop_early, "provisional", "insufficient_evidence"}
    assert curtailed > len(seqs) // 10 and saved > 0


def test_best_case_bounds_the_kt_bet_by_the_all_w_path() -> None:
    # The KT bet rises along an all-W path and is clipped at λ_max: the best case must be
    # exactly the wealth of that path, computed step by step.
    params = GateParams(lambda_strategy="kt", lambda_max=0.5, n_max=30, e_futility=None)
    gate = SequentialGate(params)
    for unit_id, base, cand in _pairs([L, L, W, L, T, L]):
        gate.observe(unit_id, base, cand)
    e_best, net, shrunk = gate.best_case()
    twin = SequentialGate(replace(params, curtail=False, e_confirm=1e12, e_futility=None))
    for unit_id, base, cand in _pairs([L, L, W, L, T, L] + [W] * 24):
        twin.observe(unit_id, base, cand)
    assert e_best == pytest.approx(twin.e_win, rel=1e-12)
    assert (net, shrunk) == (twin.W - twin.L, (twin.W - twin.L) / 40)


# --------------------------------------------------------------------------- the defaults


def _null_ladder(rng: random.Random, discordance: float, n: int) -> list[tuple[str, bool, bool]]:
    out = []
    for i in range(n):
        u = rng.random()
        out.append((f"u{i}", *(W if u < discordance / 2 else L if u < discordance else T)))
    return out


@pytest.mark.parametrize("discordance", [0.3, 1.0])
def test_defaults_accept_share_under_null_stays_below_alpha(discordance: float) -> None:
    """Monte Carlo, Ville style: with the defaults, the share of null runs the gate accepts
    (confirmed + provisional; provisional has no Ville guarantee of its own) stays at most
    the fixed test's nominal α = 1/e_confirm, up to 3 MC standard errors. The exact values
    (a recursion over (n, W, L)) are ≈ 0.027 at both discordances; with no ties
    (discordance 1) the provisional threshold is tested hardest."""
    params = GateParams()
    alpha, reps = 1 / params.e_confirm, 2000
    rng = random.Random(20240611 + int(discordance * 100))
    decisions = [run_gate(_null_ladder(rng, discordance, params.n_max), params)
                 for _ in range(reps)]
    tolerance = 3 * math.sqrt(alpha * (1 - alpha) / reps)
    accepted = sum(d.accepted for d in decisions) / reps
    confirmed = sum(d.action == "accept" for d in decisions) / reps
    assert accepted <= alpha + tolerance
    assert confirmed <= alpha + tolerance
    assert accepted > 0  # the check is live: provisional accepts do happen under the null


# --------------------------------------------------------------------------- pair_block


def test_pair_block_counts_and_skips_missing() -> None:
    base = {"a": False, "b": True, "c": True, "d": False, "e": False, "f": True}
    cand = {"a": True, "b": False, "c": True, "d": False, "e": True, "g": True}
    units = ["a", "b", "c", "d", "e", "f", "g", "h", "a"]  # f,g,h missing on a side; a repeated
    assert pair_block(units, base, cand) == PairResult(W=2, L=1, both_right=1, both_wrong=1, n=5)
    assert pair_block([], base, cand) == PairResult(0, 0, 0, 0, 0)


def test_pair_block_feeds_the_probation_verdict() -> None:
    base = {f"u{i}": i % 2 == 0 for i in range(20)}
    cand = {f"u{i}": True for i in range(20)}
    r = pair_block(list(base), base, cand)
    assert (r.W, r.L, r.both_right, r.both_wrong, r.n) == (10, 0, 10, 0, 20)
    assert probation_verdict(r.W, r.L, None, GateParams()) == "keep"


# --------------------------------------------------------------------------- probation


@pytest.mark.parametrize(
    ("w", "l", "expected"),
    [(0, 0, "keep"), (3, 1, "keep"), (5, 5, "keep"), (1, 2, "rollback"), (0, 9, "rollback"),
     (20, 21, "rollback")],
)
def test_probation_verdict_without_order(w: int, l: int, expected: str) -> None:  # noqa: E741
    assert probation_verdict(w, l, None, GateParams()) == expected


def test_probation_rollback_by_e_harm() -> None:
    # A low e_rollback lets E_harm decide on counts the W − L rule also flags; check the
    # e-value is computed over the given order with the params' strategy.
    fixed = GateParams(e_rollback=1.2)
    assert probation_verdict(0, 1, [-1], fixed) == "rollback"  # E_harm = 1 + λ = 1.35
    kt = GateParams(lambda_strategy="kt", e_rollback=1.2)
    assert probation_verdict(0, 1, [0, -1, 0], kt) == "rollback"  # W − L < 0
    assert probation_verdict(1, 1, [1, -1], kt) == "keep"  # KT: no bet on the first flip


@pytest.mark.parametrize("strategy", ["fixed", "kt"])
def test_probation_harm_e_value_never_fires_without_net_loss(strategy: str) -> None:
    # With W ≥ L the harm wealth stays ≤ 1 for both bets (for the fixed bet:
    # (1 − λ)^W (1 + λ)^L ≤ (1 − λ²)^L ≤ 1), so the verdict is "rollback" iff W < L.
    params = GateParams(lambda_strategy=strategy)
    for n in range(1, 13):
        for seq in itertools.product((1, -1), repeat=n):
            w, l = seq.count(1), seq.count(-1)  # noqa: E741
            expected = "rollback" if w < l else "keep"
            assert probation_verdict(w, l, list(seq), params) == expected, seq


def test_probation_validates_outcomes() -> None:
    with pytest.raises(ValueError, match="match"):
        probation_verdict(2, 1, [1, -1, -1], GateParams(lambda_strategy="kt"))
    with pytest.raises(ValueError):
        probation_verdict(1, 0, [1, 2], GateParams())
    with pytest.raises(ValueError):
        probation_verdict(-1, 0, None)
