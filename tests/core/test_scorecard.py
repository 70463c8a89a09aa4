"""core/scorecard.py: loop health, flakiness, yield and its warning."""

from __future__ import annotations

import math

import pytest

from core.scorecard import (
    LAX_YIELD,
    ForkSummary,
    collapse_warning,
    flake_rate,
    fork_summary,
    informative_chance,
    lax_warning,
    loop_health,
    normalise_tool_sequence,
    question_health,
    yield_rate,
)


def test_informative_chance_matches_the_closed_form() -> None:
    # 8 branches at p = 0.5: 1 - 2 * 0.5^8
    assert informative_chance(0.5, 8) == pytest.approx(1 - 2 / 256)
    assert informative_chance(0.0, 8) == 0.0 and informative_chance(1.0, 8) == 0.0
    assert informative_chance(0.5, 1) == 0.0
    # by enumeration of every pass/fail pattern of 3 branches at p = 0.2
    p, n = 0.2, 3
    mixed = 0.0
    for pattern in range(2**n):
        k = bin(pattern).count("1")
        if 0 < k < n:
            mixed += p**k * (1 - p) ** (n - k)
    assert informative_chance(p, n) == pytest.approx(mixed)
    with pytest.raises(ValueError):
        informative_chance(1.5, 3)


def test_tool_sequences_normalise_case_blanks_and_retries() -> None:
    assert normalise_tool_sequence(["read_context", " Read_Context", "lookup"]) == (
        "read_context -> lookup"
    )
    assert normalise_tool_sequence([]) == ""
    assert normalise_tool_sequence(["a", "b", "a"]) == "a -> b -> a"


def test_question_health_and_the_loop_summary() -> None:
    q1 = question_health("q1", [True, False, False, True], ["a", "a", "a -> b", ""])
    assert (q1.p_hat, q1.distinct_tool_sequences, q1.informative) == (0.5, 3, True)
    assert q1.informative_chance == pytest.approx(1 - 2 * 0.5**4)
    q2 = question_health("q2", [False] * 4, ["a"] * 4)
    q3 = question_health("q3", [True] * 4, ["a"] * 4)
    h = loop_health([q1, q2, q3])
    assert (h.questions, h.all_fail, h.all_pass) == (3, 1, 1)
    assert h.informative_share == pytest.approx(1 / 3)
    assert h.mean_distinct_tool_sequences == pytest.approx(5 / 3)
    assert loop_health([]).questions == 0


def test_flake_rate_counts_verdicts_that_change() -> None:
    assert (
        flake_rate([["pass"] * 3, ["fail"] * 3, ["pass", "fail", "pass"], ["x", "x", "y"]]) == 0.5
    )
    assert flake_rate([]) == 0.0


def test_yield_and_the_lax_warning() -> None:
    assert yield_rate(3, 12) == 0.25 and yield_rate(0, 0) == 0.0
    with pytest.raises(ValueError):
        yield_rate(5, 4)
    assert lax_warning(LAX_YIELD) is None
    warning = lax_warning(0.6)
    assert warning is not None and "too lax" in warning
    assert not math.isnan(yield_rate(1, 1))


def test_collapse_needs_pass_at_1_up_pass_at_n_flat_and_diversity_down() -> None:
    before = ForkSummary("f1", pass_at_1=0.30, pass_at_n=0.60, diversity=2.5)
    collapsed = ForkSummary("f2", pass_at_1=0.45, pass_at_n=0.61, diversity=1.2)
    warning = collapse_warning(before, collapsed)
    assert warning is not None and "f1" in warning and "0.300 -> 0.450" in warning
    # pass@N grew too: more questions solved, not a collapse
    assert collapse_warning(before, ForkSummary("f2", 0.45, 0.70, 1.2)) is None
    # as diverse as before
    assert collapse_warning(before, ForkSummary("f2", 0.45, 0.60, 2.5)) is None
    # pass@1 down
    assert collapse_warning(before, ForkSummary("f2", 0.20, 0.60, 1.2)) is None


def test_fork_summary_from_question_rows() -> None:
    rows = [
        question_health("a", [True, False], ["x", "y"]),
        question_health("b", [False, False], ["x", "x"]),
    ]
    s = fork_summary("f", rows)
    assert (s.pass_at_1, s.pass_at_n, s.diversity) == (0.25, 0.5, 1.5)
