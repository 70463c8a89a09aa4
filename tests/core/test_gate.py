"""The sequential gate, pair counting and probation verdicts (DESIGN §6.6)."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterator

import pytest

from core.evolution.gate import (
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


def _pairs(seq: list[tuple[bool, bool]]) -> list[tuple[str, bool, bool]]:
    return [(f"u{i}", base, cand) for i, (base, cand) in enumerate(seq)]


def _first_crossing(factor: float, threshold: float) -> int:
    """Smallest k with factor**k >= threshold: independent arithmetic for the expected stop."""
    return math.ceil(math.log(threshold) / math.log(factor))


# --------------------------------------------------------------------------- params


def test_params_defaults() -> None:
    p = GateParams()
    assert (p.e_confirm, p.e_rollback, p.e_provisional) == (20.0, 10.0, 2.0)
    assert (p.w_net_min, p.delta_min, p.lambda_dir, p.lambda_strategy) == (2, 0.02, 0.3, "fixed")
    assert (p.lambda_max, p.shrink_k, p.n_max) == (0.5, 10, 60)


@pytest.mark.parametrize(
    ("field", "value"),
    [("lambda_dir", 0.0), ("lambda_dir", 1.0), ("lambda_dir", float("nan")), ("lambda_max", 1.5),
     ("e_confirm", 0.5), ("e_rollback", 0.99), ("e_provisional", -1.0), ("n_max", 0),
     ("shrink_k", -1), ("lambda_strategy", "kelly")],
)
def test_params_validation_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GateParams(**{field: value})


def test_params_are_frozen() -> None:
    with pytest.raises(AttributeError):
        GateParams().n_max = 5  # type: ignore[misc]


# --------------------------------------------------------------------------- decisions


def test_confirm_after_enough_wins_with_ties_interleaved() -> None:
    k = _first_crossing(1.3, 20.0)  # 12 wins at λ = 0.3
    seq = [T, W] * (k - 1) + [W] + [W] * 5
    gate = SequentialGate(GateParams())
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
    d = run_gate(_pairs([L] * 30), GateParams())
    assert (d.action, d.stop_reason, d.n_used, d.L, d.W) == ("reject", "harm", k, k, 0)
    assert d.e_harm == pytest.approx(1.3**k)
    assert d.e_value == pytest.approx(0.7**k)
    assert not d.accepted


def test_provisional_accept_at_n_max() -> None:
    # 5 W, 1 L in 60 units: E_win = 1.3^5·0.7 ≈ 2.60 ≥ 2, W − L = 4, 4/70 ≥ 0.02
    seq = [W] * 5 + [L] + [T] * 54 + [W] * 20
    d = run_gate(_pairs(seq), GateParams())
    assert (d.action, d.stop_reason, d.ended_by) == ("accept_provisional", "provisional", "n_max")
    assert (d.W, d.L, d.n_used) == (5, 1, 60)
    assert d.e_value == pytest.approx(1.3**5 * 0.7)
    assert d.delta_shrunk == pytest.approx(4 / 70)
    assert len(d.evidence) == 60


def test_insufficient_evidence_when_e_value_is_low() -> None:
    d = run_gate(_pairs([W] * 3 + [L] + [T] * 10), GateParams())  # E = 1.3³·0.7 ≈ 1.54 < 2
    assert (d.action, d.stop_reason, d.ended_by) == ("reject", "insufficient_evidence", "exhausted")
    assert d.n_used == 14


def test_insufficient_when_net_wins_too_few() -> None:
    # E = 1.3³ ≈ 2.2 ≥ 2 but W − L = 3 < w_net_min = 4
    d = run_gate(_pairs([W] * 3 + [T] * 5), GateParams(w_net_min=4))
    assert (d.action, d.stop_reason) == ("reject", "insufficient_evidence")
    assert run_gate(_pairs([W] * 3 + [T] * 5), GateParams(w_net_min=3)).action == (
        "accept_provisional"
    )


def test_insufficient_when_shrunk_effect_too_small() -> None:
    # E = 1.3⁴ ≈ 2.86, W − L = 4, but 4/(200 + 10) < 0.02 on a long ladder
    params = GateParams(n_max=300)
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
    gate = SequentialGate()
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
    gate = SequentialGate(GateParams(n_max=3))
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

    d = run_gate(lazy(), GateParams())
    assert d.action == "accept"
    assert len(pulled) == d.n_used == _first_crossing(1.3, 20.0)
    pulled.clear()
    run_gate(((f"u{i}", True, True) for i in range(1000) if not pulled.append("x")), GateParams())
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
def test_optional_stopping_keeps_mean_wealth_one_under_null(strategy: str) -> None:
    # Low thresholds so that stops really happen within 7 units.
    params = GateParams(e_confirm=3.0, e_rollback=3.0, lambda_dir=0.5, lambda_max=0.6,
                        lambda_strategy=strategy, n_max=7)
    mean_win, mean_harm, p_accept = _stopped_expectations(SequentialGate(params), 0.7)
    assert mean_win == pytest.approx(1.0, abs=1e-12)
    assert mean_harm == pytest.approx(1.0, abs=1e-12)
    assert 0.0 < p_accept <= 1 / params.e_confirm


def test_optional_stopping_check_detects_a_real_effect() -> None:
    params = GateParams(e_confirm=3.0, e_rollback=3.0, lambda_dir=0.5, n_max=7)
    mean_win, _, p_accept = _stopped_expectations(SequentialGate(params), 0.7, 0.8)
    assert mean_win > 1.2
    assert p_accept > 1 / params.e_confirm


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
    assert probation_verdict(0, 1, [-1], fixed) == "rollback"  # E_harm = 1.3
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
