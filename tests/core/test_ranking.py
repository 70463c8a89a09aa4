"""core.ranking: weighted rewards, Bradley-Terry over preferences, the honesty statistics."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from core import ranking
from core.stats import IncomparableItemsError, bradley_terry


def test_rank_orders_by_weighted_reward_and_breaks_ties_by_index() -> None:
    comps = {
        0: {"objective": 0.0, "judge": 0.9},
        1: {"objective": 1.0, "judge": 0.2},
        2: {"objective": 1.0, "judge": 0.2},
        3: {"objective": 1.0, "judge": 0.8},
    }
    ranked = ranking.rank(comps, {"objective": 1.0, "judge": 0.3})
    assert [r.branch_index for r in ranked] == [3, 1, 2, 0]
    assert [r.rank for r in ranked] == [1, 2, 3, 4]
    assert ranked[0].reward == pytest.approx(1.24)
    # a missing component counts 0, an unused weight changes nothing
    assert ranking.rank({0: {}}, {"bt": 1.0})[0].reward == 0.0


def test_bt_strengths_from_preferences() -> None:
    prefs = [(0, 1, "a"), (0, 1, "a"), (1, 2, "a"), (0, 2, "tie")]
    got = ranking.bt_strengths(3, prefs)
    want = bradley_terry(3, [(0, 1), (0, 1), (1, 2), (0, 2), (2, 0)], prior=0.1)
    assert got == pytest.approx(want)
    assert got[0] > got[1]
    assert ranking.bt_strengths(2, []) == [1.0, 1.0]
    assert ranking.bt_component(1.0) == 0.5


def test_bt_strengths_of_groups_never_compared_both_ways() -> None:
    """Branches 0-1 and 2-3 tie within their pair; 0 and 1 beat 2 and 3. The rank command's
    prior keeps the estimate finite and ordered; the plain MLE (prior 0) names the groups."""
    prefs = [(0, 1, "tie"), (2, 3, "tie"), (0, 2, "a"), (3, 1, "b")]
    got = ranking.bt_strengths(4, prefs)
    assert all(math.isfinite(g) for g in got) and min(got[:2]) > max(got[2:])
    with pytest.raises(IncomparableItemsError, match=r"\{0, 1\} > \{2, 3\}"):
        ranking.bt_strengths(4, prefs, prior=0.0)


def test_paired_report_powered_mdd_and_exact_mcnemar() -> None:
    chosen = [True] * 30 + [False] * 10
    baseline = [True] * 10 + [False] * 25 + [True] * 5
    rep = ranking.paired_report(chosen, baseline)
    w = sum(c and not b for c, b in zip(chosen, baseline, strict=True))
    l = sum(b and not c for c, b in zip(chosen, baseline, strict=True))  # noqa: E741
    assert (rep["wins"], rep["losses"]) == (w, l)
    assert rep["mcnemar_p"] == pytest.approx(mcnemar([[10, w], [l, 0]], exact=True).pvalue)
    assert rep["powered"] is True and 0 < rep["min_detectable_delta_pp"] < 100
    small = ranking.paired_report([True] * 9, [False] * 9)
    assert small["powered"] is False  # n < 10, however clear it looks
    assert ranking.paired_report([], [])["mcnemar_p"] is None
    with pytest.raises(ValueError):
        ranking.paired_report([True], [])
    assert not math.isnan(small["mcnemar_p"])
