"""core/distill.py: the probe's interval against scipy, its verdicts, units, gap closed."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from core import distill as d


def _pairs(n: int, teacher: float, student: float, seed: int = 1) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [
        (
            sum(rng.random() < teacher for _ in range(4)) / 4,
            sum(rng.random() < student for _ in range(4)) / 4,
        )
        for _ in range(n)
    ]


def test_bootstrap_interval_agrees_with_scipy_percentile_bootstrap() -> None:
    pairs = _pairs(40, 0.7, 0.4)
    diffs = [t - s for t, s in pairs]
    ours = d.bootstrap_interval(diffs, alpha=0.05, resamples=20000, seed=3)
    ref = sps.bootstrap(
        (np.array(diffs),),
        np.mean,
        confidence_level=0.95,
        n_resamples=20000,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    assert ours[0] == pytest.approx(ref.low, abs=0.015)
    assert ours[1] == pytest.approx(ref.high, abs=0.015)
    # and both sit around the t interval of the mean difference (a check of scale, not equality)
    t_lo, t_hi = sps.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    assert ours[0] == pytest.approx(t_lo, abs=0.03)
    assert ours[1] == pytest.approx(t_hi, abs=0.03)


def test_verdicts() -> None:
    strong = d.probe(_pairs(40, 0.8, 0.3), min_gap=0.05, alpha=0.05, resamples=2000)
    assert strong.verdict is d.Verdict.DISTILL and strong.interval[0] > 0
    same = d.probe(_pairs(60, 0.5, 0.5, seed=2), min_gap=0.2, alpha=0.05, resamples=2000)
    assert same.verdict is d.Verdict.NOT_WORTH_IT and same.interval[1] < 0.2
    noisy = d.probe(_pairs(12, 0.6, 0.5, seed=5), min_gap=0.05, alpha=0.05, resamples=2000)
    assert noisy.verdict is d.Verdict.INSUFFICIENT_EVIDENCE and noisy.interval[0] <= 0
    few = d.probe(_pairs(d.MIN_FAMILIES - 1, 1.0, 0.0), min_gap=0.05, alpha=0.05, resamples=500)
    assert few.verdict is d.Verdict.INSUFFICIENT_EVIDENCE and few.gap == 1.0
    assert len({d.EXIT_CODES[v] for v in d.Verdict}) == 3 and 2 not in d.EXIT_CODES.values()


def test_family_differences_pair_by_family_over_common_questions() -> None:
    teacher = {"a1": True, "a2": True, "b1": False, "c1": True}
    student = {"a1": False, "a2": True, "b1": True}  # c1 has no student verdict: left out
    family = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    assert d.family_differences(teacher, student, family) == [(1.0, 0.5), (0.0, 1.0)]


def test_units_accuracy_and_mcnemar_match_statsmodels() -> None:
    unit_of = {"p1a": "p1", "p1b": "p1", "q2": "q2", "q3": "q3"}
    units = d.unit_correctness({"p1a": True, "p1b": False, "q2": True, "q3": True}, unit_of)
    assert units == {"p1": False, "q2": True, "q3": True}
    acc = d.accuracy(units)
    lo, hi = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert acc.value == pytest.approx(2 / 3)
    assert acc.interval == pytest.approx((lo, hi))
    rng = random.Random(4)
    before = {f"u{i}": rng.random() < 0.3 for i in range(60)}
    after = {u: ok or rng.random() < 0.4 for u, ok in before.items()}
    wins, losses, p = d.paired_mcnemar(before, after)
    table = [[0, losses], [wins, 0]]
    assert p == pytest.approx(mcnemar(table, exact=True).pvalue)


def test_gap_closed_promotion_and_cost() -> None:
    assert d.gap_closed(0.8, 0.2, 0.5) == pytest.approx(0.5)
    assert d.gap_closed(0.3, 0.4, 0.6) is None  # no gap to close
    assert d.promoted(0.72, 0.8, 0.9) and not d.promoted(0.71, 0.8, 0.9)
    assert d.per_thousand(0.5, 250) == pytest.approx(2.0)
    assert d.per_thousand(0.5, 0) is None


def test_worked_examples_join_only_the_failures_they_answer() -> None:
    from core.evolution.diagnose import CaseItem, CasePack, DiagnosisResult, with_worked_examples

    fail = CaseItem("q1", "q1", "What is the ledger total?", "7", "9", "skill gap")
    other = CaseItem("q2", "q2", "Another case", "1", "2", "skill gap")
    result = DiagnosisResult((), {"ledger": CasePack("ledger", (fail, other))})
    assert with_worked_examples(result, {}) is result  # never distilled: packs unchanged
    worked = with_worked_examples(result, {"q1": ("sim/basic-strong", "7"), "q9": ("t", "x")})
    pack = worked.skill_packs["ledger"]
    assert [e.question_id for e in pack.examples] == ["q1"]
    assert pack.examples[0].prediction == "7" and "sim/basic-strong" in pack.examples[0].note
    text = pack.render()
    assert text.count("<worked_example") == 1 and text.count("<failure") == 2
    assert CasePack.from_dict(pack.to_dict()) == pack
    assert "examples" not in result.skill_packs["ledger"].to_dict()  # checkpoints as before
