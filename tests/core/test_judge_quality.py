"""core/judge_quality.py: agreement, band misses, leniency and verbosity bias from labelled
cases; cases without a verdict are counted apart, never as misses."""

from __future__ import annotations

import pytest

from core.judge_quality import CaseKind, CaseScore, JudgeCase, assess, band_distance, rubric_key


def case(cid: str, low: float, high: float, kind: CaseKind = CaseKind.REFERENCE) -> JudgeCase:
    return JudgeCase(cid, "q?", "be right", "a", low, high, kind)


def test_agreement_misses_and_biases() -> None:
    cases = [
        case("a", 0.8, 1.0),
        case("b", 0.0, 0.2, CaseKind.KNOWN_BAD),
        case("c", 0.0, 0.1, CaseKind.CONTROL),
        case("d", 0.8, 1.0),
    ]
    scores = {
        "a": CaseScore("a", 0.9, 1.0),
        "b": CaseScore("b", 0.5, 0.7, invalid_replies=1),  # 0.3 above its band
        "c": CaseScore("c", 0.0, 0.0),
        "d": CaseScore("d", None, None, invalid_replies=3),  # no verdict
    }
    q = assess(cases, scores, pass_line=0.9)
    assert (q.cases, q.judged, q.invalid_cases, q.invalid_replies) == (4, 3, 1, 4)
    assert q.agreement == pytest.approx(2 / 3) and not q.passed
    assert [m.case_id for m in q.misses] == ["b"] and q.misses[0].distance == pytest.approx(0.3)
    assert q.leniency == pytest.approx(0.1)  # (0 + 0.3 + 0) / 3
    assert q.verbosity_bias == pytest.approx((0.1 + 0.2 + 0.0) / 3)
    assert q.by_kind == {"control": 1.0, "known_bad": 0.0, "reference": 1.0}


def test_no_verdict_at_all_never_passes() -> None:
    q = assess([case("a", 0, 1)], {"a": CaseScore("a", None, None, 3)})
    assert q.judged == 0 and q.agreement == 0.0 and not q.passed


def test_band_distance_and_checks() -> None:
    assert band_distance(0.5, 0.2, 0.6) == 0.0
    assert band_distance(0.1, 0.2, 0.6) == pytest.approx(-0.1)
    with pytest.raises(ValueError):
        case("x", 0.9, 0.2)
    assert rubric_key("Be  polite.\n") == rubric_key("Be polite.")
