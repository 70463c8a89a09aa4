"""The gate on scores (core/evolution/gate.py `family_mean`): the paired score difference as
the unit difference, bounded in [−1, 1], reduces to the pass/fail evidence for 0/1 scores;
units without a verdict are left out; a scored test is never held to the singletons level."""

from __future__ import annotations

import random

import pytest

from core.evolution.acceptance import EProcessRule, MinibatchRule, RuleSetup
from core.evolution.gate import (
    GateParams,
    SequentialGate,
    family_mean,
    family_outcome,
    unit_difference,
)


def _families(rng: random.Random, n: int, size: int) -> list[tuple[str, list]]:
    return [
        (f"f{i}", [(f"f{i}u{j}", rng.random() < 0.4, rng.random() < 0.6) for j in range(size)])
        for i in range(n)
    ]


def _as_scores(families: list[tuple[str, list]]) -> list[tuple[str, list]]:
    return [(f, [(u, float(b), float(c)) for u, b, c in pairs]) for f, pairs in families]


@pytest.mark.parametrize("evidence", ["mean", "rounded"])
@pytest.mark.parametrize("size", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_zero_one_scores_give_exactly_the_pass_fail_decision(
    evidence: str, size: int, seed: int
) -> None:
    """Same families as bools and as 0.0/1.0 scores: every e-value and decision identical
    (the singletons level only for bools: a scored test never claims it)."""
    families = _families(random.Random(seed), 40, size)
    params = GateParams(family_evidence=evidence)
    gates = [SequentialGate(params, horizon=40) for _ in range(2)]
    for gate, fams in zip(gates, (families, _as_scores(families)), strict=True):
        for family, pairs in fams:
            gate.observe_family(family, pairs)
            if gate.done:
                break
    a, b = (g.finish(exhausted=not g.done) for g in gates)
    assert (a.action, a.W, a.L, a.n_used, a.stop_reason) == (
        b.action,
        b.W,
        b.L,
        b.n_used,
        b.stop_reason,
    )
    assert a.e_value == b.e_value and a.e_harm == b.e_harm
    assert [e.d for e in a.evidence] == [e.d for e in b.evidence]


def test_unit_difference_is_the_paired_score_difference() -> None:
    assert unit_difference(False, True) == 1 and unit_difference(True, False) == -1
    assert unit_difference(0.25, 0.75) == pytest.approx(0.5)
    assert unit_difference(0.9, 0.3) == pytest.approx(-0.6)


SIDES: tuple[bool | float, ...] = (False, True, 0.0, 0.25, 0.5, 0.75, 1.0)


def test_a_missing_verdict_counts_as_the_candidates_worst_case() -> None:
    # pass/fail stays on the lattice: a baseline without a verdict is right, a candidate wrong
    assert unit_difference(None, True) == 0 and unit_difference(None, False) == -1
    assert unit_difference(True, None) == -1 and unit_difference(False, None) == 0
    assert unit_difference(None, None) == -1
    assert unit_difference(None, 0.75) == pytest.approx(-0.25)
    assert unit_difference(0.25, None) == pytest.approx(-0.25)
    # never above the difference any true verdict would have given (exhaustive over the
    # outcomes a side can have: whatever hid the verdict, d can only go down, so E[d] <= 0
    # under the null holds without assuming anything about why it is missing)
    for base in SIDES:
        for cand in SIDES:
            if isinstance(base, bool) != isinstance(cand, bool):
                continue  # a unit is pass/fail on both sides or scored on both
            true = unit_difference(base, cand)
            assert unit_difference(None, cand) <= true + 1e-12
            assert unit_difference(base, None) <= true + 1e-12
            assert unit_difference(None, None) <= true + 1e-12


def test_family_mean_counts_units_without_a_verdict_at_their_worst() -> None:
    assert family_mean([("a", 0.2, 0.8), ("b", None, 1.0), ("c", 0.5, 0.5)]) == pytest.approx(0.2)
    assert family_mean([("a", None, 0.9), ("b", 0.1, None)]) == pytest.approx(-0.1)
    assert family_outcome([("a", None, 1.0), ("b", 0.6, 0.2)]) == -1


def test_an_all_excluded_family_moves_no_e_value() -> None:
    gate = SequentialGate(GateParams(), horizon=10)
    gate.observe_family("f0", [("u0", 0.0, 1.0)])
    before = (gate.e_win, gate.e_harm)
    gate.observe_family("f1", [("u1", None, 1.0), ("u2", 0.0, None)])
    assert (gate.e_win, gate.e_harm) == pytest.approx(before)
    assert gate.n == 2  # counted as observed


def test_a_scored_test_is_not_held_to_the_singletons_level() -> None:
    params = GateParams()
    single = RuleSetup(stage1=tuple((f"f{i}", (f"u{i}",)) for i in range(60)), params=params)
    assert single.singletons and not RuleSetup(**{**single.__dict__, "scored": True}).singletons
    scored = EProcessRule(RuleSetup(**{**single.__dict__, "scored": True}))
    plain = EProcessRule(single)
    assert scored.gate.threshold == params.e_confirm  # Ville's level
    assert plain.gate.threshold < params.e_confirm  # the exact calibrated level
    # and a singletons test refuses a score off the ±1/0 lattice rather than mis-level it
    gate = SequentialGate(params, horizon=5, singletons=True)
    with pytest.raises(ValueError, match="off the ±1/0 lattice"):
        gate.observe_family("f0", [("u0", 0.2, 0.7)])


def test_scores_move_the_evidence_by_their_difference() -> None:
    """A candidate a little better on every family gains less than one that flips units."""
    small = SequentialGate(GateParams(), horizon=30)
    big = SequentialGate(GateParams(), horizon=30)
    for i in range(10):
        small.observe_family(f"f{i}", [(f"u{i}", 0.5, 0.6)])
        big.observe_family(f"f{i}", [(f"u{i}", 0.0, 1.0)])
        if big.done:
            break
    assert 1.0 < small.e_win < big.e_win


def test_minibatch_rule_counts_scores_and_skips_no_verdict() -> None:
    setup = RuleSetup(stage1=(("f0", ("u0",)), ("f1", ("u1",)), ("f2", ("u2",))), minibatch_k=3)
    rule = MinibatchRule(setup)
    asked = rule.request()
    outcomes = {"u0": (0.2, 0.9), "u1": (None, 0.0), "u2": (0.5, 0.4)}
    rule.observe([(f, [(u, *outcomes[u]) for u in ids]) for f, ids in asked])
    assert rule.verdict().decision.accepted  # 1.3 vs 0.7, u1 left out
