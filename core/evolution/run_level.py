"""Run-level control of false accepts: LOND over the gate tests of one run (opt-in).

Each gate test bounds its own false accept at α (core/evolution/gate.py). A run makes many
tests (25 to 72 on bench/acceptance.py's worlds), so with a noisy model the chance that *some*
edit that does not help is kept grows with the run. `[gate] run_control = "fdr"` bounds the
false discovery rate of the whole run instead:

    FDR = E[(edits kept that do not help) / max(edits kept, 1)] ≤ α

The rule (LOND, Javanmard and Montanari 2018): test t, numbered in the order the tests start,
runs at level α_t = min(α, α·γ_t·(D_t + 1)), where D_t is the number of edits finally accepted
before test t started and γ_t = T / ((t + T − 1)(t + T)). The γ's sum to exactly 1
(telescoping: γ_t = T·(1/(t + T − 1) − 1/(t + T))); they are about 1/T for the first T tests
and fall off as T/t² after, so a run longer than T tests never runs out of level.

Why it holds, in the form the harness satisfies: let V and R count the false and all final
accepts, F_{t−1} everything known when test t starts (α_t and D_t are functions of it), and
suppose each test is valid given that past: P(test t accepts | F_{t−1}) ≤ α_t when its edit
does not help (the gate's per-test guarantee, whose ladder is fresh and outcome-blind). When a
test accepts, R ≥ D_t + 1, so
    FDR = Σ_t E[1{null t accepted} / max(R, 1)]
        ≤ Σ_t E[P(null t accepted | F_{t−1}) / (D_t + 1)] ≤ Σ_t α·γ_t = α.
No independence between tests is needed. Capping α_t at α only lowers levels. A provisional
accept is not counted in D until its probation keeps it, which only lowers later levels too.

What it costs is measured by bench/acceptance.py (`--set gate.run_control=fdr`) and stated in
docs/training.md.
"""

from __future__ import annotations

DEFAULT_RUN_TESTS = 50


def spread(test: int, tests: int) -> float:
    """γ_test: the share of α that test number `test` (1-based) is given over a run whose
    level is spread over about `tests` tests."""
    if test < 1 or tests < 1:
        raise ValueError(f"test and tests must be >= 1, got {test} and {tests}")
    return tests / ((test + tests - 1) * (test + tests))


def lond_level(alpha: float, test: int, discoveries: int, tests: int) -> float:
    """α_test: the level test number `test` runs at after `discoveries` final accepts."""
    if discoveries < 0:
        raise ValueError(f"discoveries must be >= 0, got {discoveries}")
    return min(alpha, alpha * spread(test, tests) * (discoveries + 1))
