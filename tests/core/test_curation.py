"""core/curation.py: trajectory classes, the cascade's economics and token-weighted mixes,
with the worked examples of docs/curation.md."""

from __future__ import annotations

import pytest

from core.curation import (
    BranchTrace,
    Fault,
    MixItem,
    MixShortfall,
    Stage,
    TrajectoryClass,
    Turn,
    cascade_economics,
    cascade_order,
    classify_question,
    mix,
    parse_mix,
    step_labels,
    token_shares,
)

CONTEXT = 'read_context({"section": "full"})'
SUMMARY = "read_context({})"


def turn(i: int, *actions: str, faults: tuple[Fault, ...] = (), tools: tuple[str, ...] = ()):
    return Turn(i, tuple(actions), faults, tools)


def branch(index: int, passed: bool, *turns: Turn) -> BranchTrace:
    return BranchTrace(index, passed, tuple(turns))


def test_classes_of_one_question() -> None:
    short = branch(0, True, turn(0, CONTEXT, tools=("read_context",)), turn(1, "answer"))
    long = branch(
        1,
        True,
        turn(0, "read_skill({})", tools=("read_skill",)),
        turn(1, CONTEXT, tools=("read_context",)),
        turn(2, "answer"),
    )
    recovered = branch(
        2,
        True,
        turn(0, SUMMARY, faults=(Fault.TRUNCATED,), tools=("read_context",)),
        turn(1, "read_skill({})", tools=("read_skill",)),
        turn(2, CONTEXT, tools=("read_context",)),
        turn(3, "answer"),
    )
    wrong_answer = branch(3, False, turn(0, CONTEXT, tools=("read_context",)), turn(1, "answer"))
    wrong_path = branch(
        4, False, turn(0, "read_skill({})", tools=("read_skill",)), turn(1, "answer")
    )
    errored = branch(5, False, turn(0, CONTEXT), turn(1, "error", faults=(Fault.PROVIDER_ERROR,)))
    got = classify_question([short, long, recovered, wrong_answer, wrong_path, errored])
    assert got[0].cls is TrajectoryClass.PRISTINE and got[0].turns == 2
    # 3 turns > 1.2 x 2: passes without a fault, but not a pristine path
    assert got[1].cls is TrajectoryClass.VERBOSE
    r = got[2]
    assert r.cls is TrajectoryClass.RECOVERY
    assert (r.fault_turn, r.diagnostic_turns, r.remediation_turn, r.retried) == (0, (1,), 2, True)
    assert r.faults == ("truncated",)
    # same actions as the winner (branch 0) throughout: the answer turn is where it went wrong
    assert got[3].cls is TrajectoryClass.NEGATIVE and got[3].divergence_turn == 1
    assert got[4].divergence_turn == 0  # its first action departs from the winner's
    assert got[5].divergence_turn == 1 and got[5].fault_turn == 1  # the first fault


def test_recovery_without_a_retry_is_remediated_by_its_answer() -> None:
    b = branch(
        0,
        True,
        turn(0, SUMMARY, faults=(Fault.TRUNCATED,), tools=("read_context",)),
        turn(1, "answer"),
    )
    c = classify_question([b])[0]
    assert (c.cls, c.fault_turn, c.diagnostic_turns, c.remediation_turn, c.retried) == (
        TrajectoryClass.RECOVERY,
        0,
        (),
        1,
        False,
    )


def test_reference_winner_is_the_one_given() -> None:
    a = branch(0, True, turn(0, "answer"))
    b = branch(1, True, turn(0, CONTEXT), turn(1, "answer"))
    neg = branch(2, False, turn(0, CONTEXT), turn(1, "answer"))
    assert classify_question([a, b, neg])[2].divergence_turn == 0  # vs branch 0
    assert classify_question([a, b, neg], reference=1)[2].divergence_turn == 1


def test_step_labels_false_from_the_divergence_on() -> None:
    assert step_labels(4, 2) == [True, True, False, False]
    assert step_labels(3, None) == [True, True, True]
    assert step_labels(2, 0) == [False, False]


def test_the_cascade_worked_example() -> None:
    stages = [
        Stage("static", 50e-6, 0.65),
        Stage("build", 0.120, 0.40),
        Stage("tests", 8.5, 0.25),
        Stage("lint", 0.450, 0.85),
        Stage("judge", 15.0, 0.70),
    ]
    e = cascade_economics(stages)
    assert e.yield_ == pytest.approx(0.038675, abs=1e-12)
    assert e.cost_per_attempt == pytest.approx(3.14605, abs=1e-9)
    assert e.cost_every_stage == pytest.approx(24.07005, abs=1e-9)
    assert e.cost_per_accepted == pytest.approx(3.14605 / 0.038675, rel=1e-12)
    # the document's naive pipeline: the sandbox tests first, then static checks, then the
    # semantic screen (c3 + p3 c2 + p3 p2 c5) costs 10.03 s per attempt
    naive = cascade_economics([stages[2], stages[1], stages[4]])
    assert naive.cost_per_attempt == pytest.approx(10.03, abs=1e-9)
    assert 1 - e.cost_per_attempt / naive.cost_per_attempt == pytest.approx(0.686, abs=5e-4)


def test_cascade_order_is_by_cost_then_declared_order() -> None:
    assert cascade_order({"a": 2.0, "b": 0.1, "c": 2.0}, ["a", "b", "c"]) == ["b", "a", "c"]


def test_the_token_share_worked_example() -> None:
    shares = token_shares(
        {"pristine": 0.65, "recovery": 0.25, "negative": 0.10},
        {"pristine": 7200, "recovery": 18500, "negative": 9800},
    )
    assert round(100 * shares["pristine"], 2) == 45.50
    assert round(100 * shares["recovery"], 2) == 44.97
    assert round(100 * shares["negative"], 2) == 9.53


def _items() -> list[MixItem]:
    out = [MixItem(f"p{i}", "pristine", 700 + 13 * (i % 9)) for i in range(300)]
    out += [MixItem(f"r{i}", "recovery", 1800 + 29 * (i % 7)) for i in range(60)]
    return out


def test_mix_by_tokens_hits_the_shares_and_is_deterministic() -> None:
    got = mix(_items(), {"pristine": 0.65, "recovery": 0.25}, seed=3)
    assert got.requested == pytest.approx({"pristine": 0.65 / 0.9, "recovery": 0.25 / 0.9})
    assert got.max_error_pp <= 2.0
    assert got.binding == "pristine" and got.used["pristine"] == got.available["pristine"]
    again = mix(_items(), {"pristine": 0.65, "recovery": 0.25}, seed=3)
    assert again.chosen == got.chosen
    other = mix(_items(), {"pristine": 0.65, "recovery": 0.25}, seed=4)
    assert {i.key for i in other.chosen} != {i.key for i in got.chosen}


def test_mix_by_count() -> None:
    got = mix(_items(), {"pristine": 0.5, "recovery": 0.5}, by_tokens=False)
    assert got.used == {"pristine": 60, "recovery": 60}


def test_a_mix_a_class_cannot_fill_is_refused_naming_the_shortfall() -> None:
    with pytest.raises(MixShortfall, match=r"'recovery'.*needs 250000, has \d+ \(short \d+\)"):
        mix(_items(), {"pristine": 0.15, "recovery": 0.25}, total=400_000)
    with pytest.raises(MixShortfall, match="'verbose' has no trajectories"):
        mix(_items(), {"pristine": 0.9, "verbose": 0.1})


def test_parse_mix() -> None:
    assert parse_mix("pristine=0.65, recovery=0.25") == {"pristine": 0.65, "recovery": 0.25}
    for bad in ("pristine", "shiny=0.5", "pristine=2", "pristine=0.7,recovery=0.7", ""):
        with pytest.raises(ValueError):
            parse_mix(bad)
