"""Pairwise judging controls (core/ranking.py `control_position`, `pairwise_report`) with
scripted biased judges behind the real `Judge` (app/harness/data/judge.py): a judge that
always prefers the answer shown first moves no Bradley–Terry strength and shows up as order
disagreements; a judge that always prefers the longer answer shows up in the verbosity
figure and its warning; a fair judge keeps its preferences."""

from __future__ import annotations

import json
import re

import anyio

from app.harness.data.judge import CallBudget, Judge, JudgeSettings
from core import ranking
from core.ranking import OrderedVerdict, control_position, pairwise_report
from tests.fakes.scripted import Request, ScriptedProvider

SHORT, LONG = "42", "The answer, after checking every figure twice, is 42."


def _answers(request: Request) -> tuple[str, str]:
    text = str(request.messages[-1]["content"])
    a = re.search(r"<answer_a>\s*(.*?)\s*</answer_a>", text, re.S)
    b = re.search(r"<answer_b>\s*(.*?)\s*</answer_b>", text, re.S)
    assert a and b
    return a.group(1), b.group(1)


def first_shown(request: Request) -> str:
    return json.dumps({"preferred": "A", "reasoning": "the first one"})


def longer(request: Request) -> str:
    a, b = _answers(request)
    return json.dumps({"preferred": "A" if len(a) > len(b) else "B", "reasoning": "fuller"})


def fair_prefers(answer: str):
    def respond(request: Request) -> str:
        a, b = _answers(request)
        pick = "A" if a == answer else "B" if b == answer else "tie"
        return json.dumps({"preferred": pick, "reasoning": "right"})

    return respond


def judge_pair(respond, a: str, b: str, samples: int = 3) -> ranking.PairControl:
    judge = Judge(ScriptedProvider(respond=respond), JudgeSettings(samples=samples))
    got = anyio.run(lambda: judge.compare("q?", a, b, CallBudget(100)))
    return control_position(
        [OrderedVerdict(s.sample, s.shown_first, s.preferred) for s in got if not s.parse_error]
    )


def test_a_judge_that_prefers_whatever_is_shown_first_moves_no_strength() -> None:
    c = judge_pair(first_shown, SHORT, LONG)
    assert c.both_orders == 3 and c.disagreements == 3
    assert c.first_shown_wins == c.decisive == 6
    assert set(c.preferences) == {"tie"}
    strengths = ranking.bt_strengths(2, [(0, 1, p) for p in c.preferences])
    assert abs(strengths[0] - strengths[1]) < 1e-9
    report = pairwise_report([c], [ranking.longer_preferred(p, 2, 50) for p in c.reconciled])
    assert report["order_disagreement_rate"] == 1.0 and report["first_shown_win_rate"] == 1.0
    assert report["length_mismatched_verdicts"] == 0  # ties say nothing about length


def test_a_fair_judge_keeps_its_preference_in_both_orders() -> None:
    c = judge_pair(fair_prefers(SHORT), SHORT, LONG)
    assert c.disagreements == 0 and c.reconciled == ("a", "a", "a")
    assert c.first_shown_wins * 2 == c.decisive  # first shown wins half the time
    strengths = ranking.bt_strengths(2, [(0, 1, p) for p in c.preferences])
    assert strengths[0] > strengths[1]


def test_a_judge_that_prefers_the_longer_answer_is_reported_and_warned_about() -> None:
    controls, longer_flags = [], []
    for k in range(4):  # 4 pairs x 3 samples = 12 length-mismatched verdicts
        a, b = f"{SHORT}{k}", f"{LONG} ({k})"
        c = judge_pair(longer, a, b)
        controls.append(c)
        longer_flags += [ranking.longer_preferred(p, len(a), len(b)) for p in c.reconciled]
    report = pairwise_report(controls, longer_flags)
    assert report["order_disagreements"] == 0  # consistent, so position control lets it pass
    assert report["length_mismatched_verdicts"] == 12
    assert report["longer_preferred_share"] == 1.0 and report["verbosity_warning"]
    fair = judge_pair(fair_prefers(SHORT), SHORT, LONG)
    fair_report = pairwise_report(
        [fair], [ranking.longer_preferred(p, len(SHORT), len(LONG)) for p in fair.reconciled]
    )
    assert fair_report["longer_preferred_share"] == 0.0 and not fair_report["verbosity_warning"]


def test_a_sample_judged_in_one_order_only_is_left_out() -> None:
    c = control_position(
        [OrderedVerdict(0, "a", "a"), OrderedVerdict(0, "b", None), OrderedVerdict(1, "a", "b")]
    )
    assert c.one_order_only == 2 and c.preferences == () and c.both_orders == 0


def test_close_lengths_and_ties_are_not_verbosity_evidence() -> None:
    assert ranking.longer_preferred("a", 10, 12) is None
    assert ranking.longer_preferred("tie", 10, 100) is None
    assert ranking.longer_preferred("b", 10, 100) is True
    assert ranking.longer_preferred("a", 10, 100) is False
