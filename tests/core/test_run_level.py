"""core/evolution/run_level.py: LOND's spread of α over a run's tests sums to 1 exactly, and
the levels never exceed the per-test α; an exact computation of the run's FDR through the
real gate is bench/gate_validity.py's `run_fdr`."""

from __future__ import annotations

from fractions import Fraction

import pytest

from core.evolution.run_level import lond_level, spread


@pytest.mark.parametrize("tests", [1, 2, 7, 50, 400])
def test_the_spread_telescopes_to_one(tests: int) -> None:
    for n in (1, 3, 10, 1000):  # partial sums, exactly: 1 - T/(n + T)
        partial = sum(Fraction(tests, (t + tests - 1) * (t + tests)) for t in range(1, n + 1))
        assert partial == 1 - Fraction(tests, n + tests)
        assert sum(spread(t, tests) for t in range(1, n + 1)) == pytest.approx(float(partial))


def test_the_first_tests_share_alpha_about_evenly() -> None:
    assert spread(1, 50) == pytest.approx(1 / 51)
    assert spread(50, 50) == pytest.approx(50 / (99 * 100))
    assert all(spread(t, 50) > spread(t + 1, 50) for t in range(1, 200))


def test_a_level_grows_with_the_discoveries_and_never_passes_alpha() -> None:
    first = lond_level(0.05, 1, 0, 50)
    assert first == pytest.approx(0.05 / 51)
    assert lond_level(0.05, 1, 3, 50) == pytest.approx(4 * first)
    assert lond_level(0.05, 1, 10_000, 50) == 0.05
    assert lond_level(0.05, 2, 0, 1) == pytest.approx(0.05 / 6)


@pytest.mark.parametrize(("test", "tests", "found"), [(0, 5, 0), (1, 0, 0), (1, 5, -1)])
def test_out_of_range_arguments_are_refused(test: int, tests: int, found: int) -> None:
    with pytest.raises(ValueError):
        lond_level(0.05, test, found, tests)
