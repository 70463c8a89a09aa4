"""The acceptance rules of core/evolution/acceptance.py, driven without the harness: each rule
against an independent oracle, exhaustively on small ladders, and the ask/tell contract."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import pytest

from core.evolution.acceptance import (
    RULES,
    LadderFamily,
    RuleSetup,
    chunks,
    draw_coin,
    make_rule,
    run_rule,
)
from core.evolution.gate import (
    AcceptanceStrategy,
    EvidenceRow,
    FamilyOutcome,
    GateAction,
    GateParams,
    Pair,
    run_gate_families,
)

# Small thresholds so that six families can reach every decision of the e-process.
SMALL = GateParams(
    e_confirm=4.0, e_rollback=3.0, e_provisional=1.5, w_net_min=1, delta_min=0.0, futility_min=1
)
PAIR_OF = {1: (False, True), -1: (True, False), 0: (True, True)}  # outcome -> (base, cand)


def singleton_ladder(n: int) -> tuple[LadderFamily, ...]:
    return tuple((f"f{i}", (f"u{i}",)) for i in range(n))


def table(outcomes: tuple[int, ...]) -> dict[str, tuple[bool, bool]]:
    """unit id -> (baseline correct, candidate correct) for singleton families."""
    return {f"u{i}": PAIR_OF[g] for i, g in enumerate(outcomes)}


class Recorder:
    """An `outcomes` callback that remembers which families it was asked about."""

    def __init__(self, pairs: dict[str, tuple[bool, bool]]) -> None:
        self.pairs, self.asked = pairs, []

    def __call__(self, family: LadderFamily) -> list[Pair]:
        self.asked.append(family[0])
        return [(u, *self.pairs[u]) for u in family[1]]


def test_every_strategy_has_a_rule_and_an_unknown_one_is_named() -> None:
    assert set(RULES) == set(AcceptanceStrategy)
    with pytest.raises(ValueError, match="vibes"):
        make_rule("vibes", RuleSetup(stage1=()))


@pytest.mark.parametrize("final_look", [False, True])
def test_eprocess_rule_decides_as_the_sequential_gate_on_every_short_path(
    final_look: bool,
) -> None:
    """All 3^6 outcome paths over a 4 + 2 ladder: the rule's decision is the gate's own, it
    uses the families up to the gate's stop, asks only for whole chunks up to there, and
    reserves stage 2 exactly for a provisional accept (which a test taking the final look
    never makes)."""
    params = replace(SMALL, final_look=final_look)
    ladder = singleton_ladder(6)
    seen = set()
    for path in itertools.product((1, -1, 0), repeat=6):
        pairs = table(path)
        families = [(f, [(u, *pairs[u]) for u in ids]) for f, ids in ladder]
        expected = run_gate_families(families, params, horizon=6, stage1=4, singletons=True)
        setup = RuleSetup(stage1=ladder[:4], stage2=ladder[4:], params=params, chunk=3)
        asked = Recorder(pairs)
        got = run_rule(make_rule(AcceptanceStrategy.EPROCESS, setup), asked)
        assert got.decision == expected
        stop = expected.n_used
        # chunks of 3 per stage: stage 1 is [0..2], [3]; stage 2 is [4, 5]
        ends = [3, 4, 6]
        assert len(asked.asked) == next(e for e in ends if e >= max(stop, 1))
        provisional = expected.action == GateAction.ACCEPT_PROVISIONAL
        assert got.reserved == (ladder[4:] if provisional else ())
        seen.add(expected.action)
    # every decision was reached, so the comparison bites
    assert seen == set(GateAction) - ({GateAction.ACCEPT_PROVISIONAL} if final_look else set())


def test_eprocess_rule_uses_only_the_families_up_to_its_stop() -> None:
    ladder = singleton_ladder(6)
    pairs = table((1, 1, 1, 1, 1, 1))
    rule = make_rule(AcceptanceStrategy.EPROCESS, RuleSetup(stage1=ladder, params=SMALL))
    request = rule.request()
    assert request == ladder  # one chunk of 8 units would hold all six
    used = rule.observe([(f, [(u, *pairs[u]) for u in ids]) for f, ids in request])
    decision = rule.verdict().decision
    assert decision.action == GateAction.ACCEPT and 0 < decision.n_used < 6
    assert [f for f, _ in used] == [f for f, _ in ladder[: decision.n_used]]
    assert rule.request() == ()


def test_eprocess_rule_on_families_uses_the_sign_of_each_family() -> None:
    """Two-unit families: a family counts once, by the sign of its net wins."""
    ladder = tuple((f"f{i}", (f"u{i}a", f"u{i}b")) for i in range(6))
    units = [u for _, ids in ladder for u in ids]
    for draw in itertools.islice(itertools.product((1, -1, 0), repeat=12), 0, None, 97):
        pairs = {u: PAIR_OF[g] for u, g in zip(units, draw, strict=True)}
        families = [(f, [(u, *pairs[u]) for u in ids]) for f, ids in ladder]
        expected = run_gate_families(families, SMALL, horizon=6, stage1=6)
        setup = RuleSetup(stage1=ladder, params=SMALL)
        got = run_rule(make_rule("eprocess", setup), Recorder(pairs)).decision
        assert (got.action, got.W, got.L, got.n_used) == (
            expected.action,
            expected.W,
            expected.L,
            expected.n_used,
        )


def one_sided_p(w: int, l: int) -> Fraction:  # noqa: E741 - W and L
    n = w + l
    return Fraction(sum(math.comb(n, k) for k in range(w, n + 1)), 2**n)


def test_mcnemar_rule_is_the_exact_sign_test_on_every_short_path() -> None:
    ladder = singleton_ladder(7)
    alpha = Fraction(1, 20)
    accepted = 0
    for path in itertools.product((1, -1, 0), repeat=7):
        asked = Recorder(table(path))
        setup = RuleSetup(stage1=ladder[:5], stage2=ladder[5:], chunk=3)
        d = run_rule(make_rule(AcceptanceStrategy.MCNEMAR, setup), asked).decision
        w, l = path.count(1), path.count(-1)  # noqa: E741
        assert (d.W, d.L, d.n_used, d.units_used) == (w, l, 7, 7)
        assert d.accepted == (one_sided_p(w, l) <= alpha)
        assert d.strategy == AcceptanceStrategy.MCNEMAR and d.stop_reason.startswith("mcnemar: p=")
        assert asked.asked == [f for f, _ in ladder]  # the whole ladder, in order
        accepted += d.accepted
    assert 0 < accepted < 3**7


def test_a_one_shot_rule_writes_typed_evidence_rows_without_d_or_g() -> None:
    """One row per unit, as the e-process writes them; the family's outcome is the sign of its
    sum, and d and g (what the e-process bets on) are None."""
    ladder = (("f0", ("a", "b")), ("f1", ("c",)))
    pairs = {"a": (False, True), "b": (True, True), "c": (True, False)}
    d = run_rule(make_rule("mcnemar", RuleSetup(stage1=ladder)), Recorder(pairs)).decision
    assert d.evidence == (
        EvidenceRow("a", "f0", False, True, FamilyOutcome.W, d.e_value, 1.0, 1, 0, 1),
        EvidenceRow("b", "f0", True, True, FamilyOutcome.W, d.e_value, 1.0, 1, 0, 1),
        EvidenceRow("c", "f1", True, False, FamilyOutcome.L, d.e_value, 1.0, 1, 1, 2),
    )
    assert all(row.d is None and row.g is None for row in d.evidence)


def test_mcnemar_rule_asks_in_chunks_across_the_stage_boundary() -> None:
    ladder = singleton_ladder(7)
    rule = make_rule("mcnemar", RuleSetup(stage1=ladder[:5], stage2=ladder[5:], chunk=3))
    requests = []
    while request := rule.request():
        requests.append(request)
        rule.observe([(f, [(u, True, True) for u in ids]) for f, ids in request])
    assert (
        requests == [tuple(c) for c in chunks(ladder, 3)] == [ladder[:3], ladder[3:6], ladder[6:]]
    )


def test_minibatch_rule_compares_k_seeded_units_on_every_outcome() -> None:
    ladder = tuple((f"f{i}", tuple(f"u{i}.{j}" for j in range(4))) for i in range(5))
    setup = RuleSetup(stage1=ladder, seed="gate-run-1", minibatch_k=3)
    [request] = [make_rule("minibatch", setup).request()]
    assert [f for f, _ in request] == ["f0", "f1", "f2"]
    assert all(len(ids) == 1 and ids[0] in dict(ladder)[f] for f, ids in request)
    for cells in itertools.product(itertools.product((False, True), repeat=2), repeat=3):
        pairs = {ids[0]: cell for (_, ids), cell in zip(request, cells, strict=True)}
        d = run_rule(make_rule("minibatch", setup), Recorder(pairs)).decision
        base = sum(b for b, _ in cells)
        cand = sum(c for _, c in cells)
        assert d.accepted == (cand > base)
        assert (d.e_value, d.units_used, d.n_used) == (float(cand - base), 3, 3)
    picks = {make_rule("minibatch", RuleSetup(stage1=ladder, seed=s)).request() for s in "abcdef"}
    assert len(picks) > 1  # the seed chooses the member


def test_minibatch_rule_with_an_empty_ladder_asks_nothing_and_rejects() -> None:
    d = run_rule(make_rule("minibatch", RuleSetup(stage1=())), Recorder({})).decision
    assert (d.action, d.n_used) == (GateAction.REJECT, 0)


def test_accept_all_asks_nothing() -> None:
    rule = make_rule(AcceptanceStrategy.ACCEPT_ALL, RuleSetup(stage1=singleton_ladder(3)))
    assert rule.request() == ()
    d = rule.verdict().decision
    assert (d.action, d.n_used, d.evidence, d.stop_reason) == (
        GateAction.ACCEPT,
        0,
        (),
        "accept_all: accept_all",
    )


@pytest.mark.parametrize("strategy", ["eprocess", "mcnemar", "minibatch"])
def test_outcomes_for_other_families_or_units_are_refused(strategy: str) -> None:
    ladder = singleton_ladder(3)
    rule = make_rule(strategy, RuleSetup(stage1=ladder, minibatch_k=3))
    request = rule.request()
    assert rule.request() == request  # asking again repeats the pending request
    wrong_unit = [(f, [(f"{ids[0]}x", True, True)]) for f, ids in request]
    with pytest.raises(ValueError, match="do not answer the request"):
        rule.observe(wrong_unit)
    with pytest.raises(ValueError, match="do not answer the request"):
        rule.observe([(f, [(ids[0], True, True)]) for f, ids in reversed(request)])
    with pytest.raises(RuntimeError, match="before the rule's requests were answered"):
        rule.verdict()


def test_strict_improvement_accepts_exactly_a_strictly_higher_mean_over_the_whole_ladder() -> None:
    """Every 3^6 path over a 4 + 2 ladder of singletons: accepted iff W > L over all six (the
    whole validation pool, both stages), and every family asked for."""
    ladder = singleton_ladder(6)
    for path in itertools.product((1, -1, 0), repeat=6):
        setup = RuleSetup(stage1=ladder[:4], stage2=ladder[4:], params=SMALL, chunk=3)
        asked = Recorder(table(path))
        got = run_rule(make_rule("strict_improvement", setup), asked).decision
        assert (got.action == GateAction.ACCEPT) == (path.count(1) > path.count(-1))
        assert len(asked.asked) == 6


def _se_oracle(diffs: list[Fraction]) -> bool:
    """Δ > 2·SE in exact arithmetic: Δ > 0 and Δ² > 4·s²/n (s² the sample variance)."""
    n = len(diffs)
    delta = sum(diffs, Fraction(0)) / n
    var = sum(((x - delta) ** 2 for x in diffs), Fraction(0)) / (n - 1)
    return delta > 0 and delta * delta > 4 * var / n


def test_se_gate_accepts_exactly_when_the_mean_difference_exceeds_two_standard_errors() -> None:
    ladder = singleton_ladder(7)
    seen = set()
    for path in itertools.product((1, -1, 0), repeat=7):
        setup = RuleSetup(stage1=ladder, params=SMALL)
        got = run_rule(make_rule("se_gate", setup), Recorder(table(path))).decision
        expected = _se_oracle([Fraction(g) for g in path])
        assert (got.action == GateAction.ACCEPT) == expected, path
        seen.add(expected)
    assert seen == {True, False}  # both decisions reached, so the comparison bites


def test_the_comparators_drop_units_without_a_verdict_as_their_own_code_does() -> None:
    ladder = singleton_ladder(3)
    pairs = {"u0": (False, True), "u1": (True, None), "u2": (None, False)}
    for strategy in ("strict_improvement", "se_gate"):
        setup = RuleSetup(stage1=ladder, params=SMALL)
        got = run_rule(make_rule(strategy, setup), Recorder(pairs)).decision  # type: ignore[arg-type]
        # one unit with both verdicts, a win: strict improvement accepts, se_gate (n = 1) not
        assert (got.action == GateAction.ACCEPT) == (strategy == "strict_improvement")


def redraw_ladder(questions: int, rounds: int) -> tuple[tuple[LadderFamily, ...], dict]:
    """`questions` singleton questions, then each draw round in the same order."""
    qs = singleton_ladder(questions)
    draws = tuple(
        (f"f{i}#d{r}", (f"u{i}#d{r}",)) for r in range(1, rounds) for i in range(questions)
    )
    redraws = {f"f{i}#d{r}": (f"f{i}", r) for r in range(1, rounds) for i in range(questions)}
    return qs + draws, redraws


def redraw_pairs(ladder: tuple[LadderFamily, ...], path: tuple[int, ...]) -> dict:
    return {ids[0]: PAIR_OF[g] for (_, ids), g in zip(ladder, path, strict=True)}


@pytest.mark.parametrize("final_look", [False, True])
def test_a_redraw_is_asked_for_only_after_its_question_changed_and_else_counts_as_a_tie(
    final_look: bool,
) -> None:
    """All 3^6 paths over 3 questions and their draws: the rule asks for a draw only when an
    earlier round of its question was discordant, never before that round is in, and decides
    exactly as the gate fed the same ladder with every draw it did not ask for a tie."""
    params = replace(SMALL, final_look=final_look)
    ladder, redraws = redraw_ladder(3, 2)
    skipped_some = asked_some = False
    for path in itertools.product((1, -1, 0), repeat=6):
        pairs = redraw_pairs(ladder, path)
        changed = {f"f{i}" for i in range(3) if path[i] != 0}
        asked_for = {f for f in redraws if redraws[f][0] in changed}
        as_ties = [
            (f, [(u, *(pairs[u] if f not in redraws or f in asked_for else PAIR_OF[0]))])
            for f, (u,) in ladder
        ]
        expected = run_gate_families(as_ties, params, horizon=6, stage1=6, singletons=True)
        rule = make_rule("eprocess", RuleSetup(stage1=ladder, params=params, redraws=redraws))
        asked = Recorder(pairs)
        got = run_rule(rule, asked).decision
        assert (got.action, got.W, got.L, got.n_used) == (
            expected.action,
            expected.W,
            expected.L,
            expected.n_used,
        )
        draws_asked = [f for f in asked.asked if f in redraws]
        assert all(redraws[f][0] in changed for f in draws_asked)
        # every question was answered before any draw was asked for
        assert asked.asked[: len(asked.asked) - len(draws_asked)] == [f for f, _ in ladder[:3]]
        skipped_some |= bool(rule.skipped)
        asked_some |= bool(draws_asked)
    assert skipped_some and asked_some


def null_accept_probability(n_q: int, discordance: list[float], plan: dict | None) -> float:
    """P(accept) by exact enumeration of every outcome path of n_q questions drawn twice,
    under the null: each answer pair of question i is discordant with probability
    discordance[i], a win or a loss with equal chance, independently. `plan`: the redraws
    (None: every draw evaluated)."""
    ladder, redraws = redraw_ladder(n_q, 2)
    setup = RuleSetup(stage1=ladder, params=GateParams(), redraws=plan if plan is not None else {})
    total = 0.0
    for path in itertools.product((1, -1, 0), repeat=2 * n_q):
        weight = math.prod(
            discordance[i % n_q] / 2 if g else 1 - discordance[i % n_q] for i, g in enumerate(path)
        )
        if weight == 0:
            continue
        verdict = run_rule(make_rule("eprocess", setup), Recorder(redraw_pairs(ladder, path)))
        total += weight * (verdict.decision.action == GateAction.ACCEPT)
    return total


def test_redraws_keep_the_exact_level_of_the_gate_computed_on_every_path() -> None:
    """The guarantee of core/evolution/gate.py with redraws (the final look included): under
    the null, whatever each question's discordance, P(accept) <= alpha. With every pair
    discordant every draw is asked for, so it is exactly the fixed ladder's rate."""
    _, redraws = redraw_ladder(4, 2)
    every = null_accept_probability(4, [1.0] * 4, None)
    assert null_accept_probability(4, [1.0] * 4, redraws) == pytest.approx(every)
    assert 0.02 < every <= GateParams().alpha  # the level is nearly spent: the check bites
    for discordance in ([0.5] * 4, [1.0, 1.0, 0.2, 0.2], [1.0, 0.6, 0.3, 0.05]):
        assert null_accept_probability(4, discordance, redraws) <= GateParams().alpha


@pytest.mark.parametrize("strategy", ["mcnemar", "strict_improvement", "se_gate"])
def test_a_one_shot_rule_leaves_out_the_draws_of_questions_that_never_changed(
    strategy: str,
) -> None:
    ladder, redraws = redraw_ladder(4, 3)
    path = (1, 0, -1, 0) + (1, 1, 1, 1) + (0, 1, 1, 1)
    asked = Recorder(redraw_pairs(ladder, path))
    run_rule(make_rule(strategy, RuleSetup(stage1=ladder, redraws=redraws)), asked)
    # f1 and f3 never changed; f0 and f2 did in round 0, so both of their draws are asked for
    assert asked.asked == ["f0", "f1", "f2", "f3", "f0#d1", "f2#d1", "f0#d2", "f2#d2"]


def test_the_eprocess_rule_takes_its_coin_from_the_setup() -> None:
    """4 of 4 on a ladder of 48 singletons: one win short of the final look's level, accepted
    on a coin below 0.8 (`GateParams.final_look_coin`), rejected above it or without a coin."""
    ladder = singleton_ladder(48)
    outcomes = {f"f{i}": [(f"u{i}", *PAIR_OF[1 if i < 4 else 0])] for i in range(48)}

    def decide(coin: float | None) -> GateAction:
        rule = make_rule(AcceptanceStrategy.EPROCESS, RuleSetup(ladder, coin=coin))
        return run_rule(rule, lambda family: outcomes[family[0]]).decision.action

    assert decide(0.79) == GateAction.ACCEPT
    assert decide(0.81) == GateAction.REJECT and decide(None) == GateAction.REJECT


def test_draw_coin_is_a_stable_uniform_number_of_its_keys() -> None:
    """The same keys give the same coin (a resumed run's), others another; over 4,000 test
    ids the coins are uniform on [0, 1) (Kolmogorov-Smirnov, scipy)."""
    from scipy.stats import kstest

    assert draw_coin(1, "train1-e1-s0-gate-dates") == draw_coin(1, "train1-e1-s0-gate-dates")
    assert draw_coin(1, "train1-e1-s0-gate-dates") != draw_coin(2, "train1-e1-s0-gate-dates")
    coins = [draw_coin(7, f"train1-e{i % 9}-s{i}-gate-t") for i in range(4000)]
    assert all(0.0 <= c < 1.0 for c in coins)
    assert kstest(coins, "uniform").pvalue > 0.01


def _worst_null_accept(strategy: AcceptanceStrategy, n: int) -> tuple[float, int]:
    """A one-shot rule's exact worst case under the unit null on a ladder of n singletons:
    max over D of P(accept | D discordant, each a fair coin), through the real rule (scipy's
    binomial weights). Returns (the rate, the D it is reached at)."""
    from scipy.stats import binom

    ladder = singleton_ladder(n)
    worst = (0.0, 0)
    for d in range(1, n + 1):
        rate = 0.0
        for wins in range(d + 1):
            signs = [1] * wins + [-1] * (d - wins) + [0] * (n - d)
            pairs = {f"f{i}": [(f"u{i}", *PAIR_OF[g])] for i, g in enumerate(signs)}
            rule = make_rule(strategy, RuleSetup(ladder))
            verdict = run_rule(rule, lambda family, pairs=pairs: pairs[family[0]])
            rate += binom.pmf(wins, d, 0.5) * (verdict.decision.action == GateAction.ACCEPT)
        worst = max(worst, (rate, d))
    return worst


def test_the_comparison_rules_worst_case_under_the_null_exactly() -> None:
    """What each comparison rule risks per test when the edit helps no question: McNemar
    keeps 0.05; cap-evolve's Δ > 2·SE accepts 4 wins of 4 (0.0625, above 0.05, on every
    ladder); a strict improvement of the mean accepts 1 win of 1 (0.5)."""
    for n in (20, 48):
        mcnemar, _ = _worst_null_accept(AcceptanceStrategy.MCNEMAR, n)
        assert 0.04 < mcnemar <= 0.05
        assert _worst_null_accept(AcceptanceStrategy.SE_GATE, n) == (pytest.approx(0.0625), 4)
        strict, _ = _worst_null_accept(AcceptanceStrategy.STRICT_IMPROVEMENT, n)
        assert strict == pytest.approx(0.5)  # any odd D: P(W > L) = 1/2
