"""Triage before the judge (core/evolution/triage.py): each rule on trajectories in the form
app/harness/rollouts/inference.py logs them, rule order, and what is left for the judge."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from core.evolution.diagnose import (
    ACTIVATION,
    JUDGE,
    Diagnosis,
    Failure,
    FailureTally,
    build_packs,
    diagnose_failures,
)
from core.evolution.triage import (
    JUDGE_AUTO_AFTER,
    OVERRULED_NOTE,
    RULE_ANSWERED,
    RULE_ANSWERED_NOT_A_FAULT,
    RULE_CONTEXT_UNREAD,
    RULE_SKILL_UNOPENED,
    RULE_STOP_ERROR,
    RULE_UNPARSED_ARGUMENTS,
    answered,
    judge_adds_nothing,
    overrule_judge,
    rule_diagnosis,
    triage_failures,
)
from core.types import Question
from tests.fakes.scripted import ScriptedProvider

CONTEXT = "Summary: ledger file.\nFACT: the figures for case ledger-u001 are on record."


def question(qid: str = "ledger-u001", context: str = "") -> Question:
    return Question(qid, "ledger", f"[ledger] Case {qid}. Total?", "12", context=context)


def model(*calls: tuple[str, Any]) -> dict[str, Any]:
    return {
        "turn": 0,
        "type": "model",
        "text": "",
        "tool_calls": [
            {"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)
        ],
    }


def tool(name: str, arguments: Any, status: str = "ok", output: str = "x") -> dict[str, Any]:
    return {
        "turn": 0,
        "type": "tool",
        "name": name,
        "arguments": arguments,
        "status": status,
        "output": output,
    }


def verdict(**extra: Any) -> dict[str, Any]:
    return {"type": "verdict", "prediction": "7", "answer": "12", "correct": False, **extra}


def failure(q: Question, steps: list[dict[str, Any]], stop: str = "final") -> Failure:
    return Failure(q, "7", stop, tuple(steps), "SYS", "SKILL", "(none)")


def test_a_provider_error_is_a_runtime_fault() -> None:
    f = failure(
        question(context=CONTEXT),  # unread context too: the error decides first
        [{"turn": 0, "type": "error", "error": "simulated timeout"}, verdict()],
        stop="error",
    )
    d = rule_diagnosis(f)
    assert d is not None
    assert (d.category, d.decided_by) == ("runtime_fault", RULE_STOP_ERROR)
    assert "simulated timeout" in d.rationale


def test_an_outside_agent_handed_the_context_with_its_task_did_not_miss_it() -> None:
    f = failure(question(context=CONTEXT), [model(), verdict(context_in_task=True)])
    assert rule_diagnosis(f) is None  # the judge decides
    unread = failure(question(context=CONTEXT), [model(), verdict()])
    d = rule_diagnosis(unread)
    assert d is not None and d.decided_by == RULE_CONTEXT_UNREAD


def test_unparsable_tool_arguments_are_an_interface_problem_of_that_tool() -> None:
    bad = tool("read_context", '{"section": "fu', status="error", output="error: not JSON")
    f = failure(question(context=CONTEXT), [model(("read_context", '{"section": "fu')), bad])
    d = rule_diagnosis(f)
    assert d is not None
    assert (d.category, d.target, d.decided_by) == (
        "interface",
        "tool:read_context",
        RULE_UNPARSED_ARGUMENTS,
    )
    assert d.contradiction is None


def test_a_bad_call_the_agent_recovered_from_decides_nothing() -> None:
    bad = tool("read_context", "{oops", status="error")
    good = tool("read_context", {"section": "full"}, output=CONTEXT)
    f = failure(question(context=CONTEXT), [bad, good, verdict()])
    assert rule_diagnosis(f) is None  # the judge decides


def test_context_never_read_is_missing_context() -> None:
    f = failure(question(context=CONTEXT), [model(), verdict()])
    d = rule_diagnosis(f)
    assert d is not None
    assert (d.category, d.decided_by) == ("missing_context", RULE_CONTEXT_UNREAD)


def test_context_read_only_in_part_goes_to_the_judge() -> None:
    """The summary section was read: whether the tool's description misled the agent is the
    judge's call (an interface problem), not this rule's."""
    read = tool("read_context", {}, output="Summary: ledger file.")
    assert rule_diagnosis(failure(question(context=CONTEXT), [read, verdict()])) is None


def test_a_question_without_context_never_lacks_it() -> None:
    assert rule_diagnosis(failure(question(), [model(), verdict()])) is None


@pytest.mark.parametrize(
    ("opened", "fires"),
    [([], True), (["dates.md"], True), (["ledger.md"], False), (["dates.md", "ledger.md"], False)],
)
def test_the_right_skill_unopened_is_activation(opened: list[str], fires: bool) -> None:
    f = failure(question(), [verdict(skills_opened=opened, skill_expected="ledger.md")])
    d = rule_diagnosis(f)
    if fires:
        assert d is not None
        assert (d.category, d.decided_by) == (ACTIVATION, RULE_SKILL_UNOPENED)
    else:
        assert d is None


def test_inline_mode_records_no_activation_so_the_rule_stays_silent() -> None:
    assert rule_diagnosis(failure(question(), [verdict()])) is None


def test_only_the_rest_reaches_the_judge_and_each_diagnosis_names_its_decider() -> None:
    ruled = failure(question("ledger-u001", CONTEXT), [model(), verdict()])
    judged = failure(question("ledger-u002"), [verdict()])
    provider = ScriptedProvider(['{"category": "skill_gap", "target": "skill", "rationale": "x"}'])
    triage = triage_failures([ruled, judged])
    assert [f.question.question_id for f in triage.for_judge] == ["ledger-u002"]

    async def run() -> list[Diagnosis]:
        return await diagnose_failures(provider, "$question", triage.for_judge)

    diagnoses = [*triage.decided, *anyio.run(run)]
    assert len(provider.requests) == 1  # the rule-decided failure cost no judge call
    assert {d.question_id: d.decided_by for d in diagnoses} == {
        "ledger-u001": RULE_CONTEXT_UNREAD,
        "ledger-u002": JUDGE,
    }
    tally = FailureTally.of(diagnoses)
    assert tally.decided_by == {JUDGE: 1, RULE_CONTEXT_UNREAD: 1}
    assert tally.nowhere_note() == "; 1 failure no edit can fix (missing_context 1)"
    packs = build_packs(diagnoses, [ruled, judged], [])
    assert [c.question_id for c in packs.skill_packs["ledger"].failures] == ["ledger-u002"]


def judged(q: Question, category: str, **extra: Any) -> Diagnosis:
    return Diagnosis(
        q.question_id, q.unit_id, q.task_type, category, "system", "format is off", **extra
    )


@pytest.mark.parametrize("category", ["runtime_fault", "skill_gap", "interface", "missing_context"])
@pytest.mark.parametrize("stop", ["final", "max_steps", "error", "refused"])
@pytest.mark.parametrize("prediction", ["5 December 2016", "", "  "])
@pytest.mark.parametrize("decided_by", [JUDGE, RULE_STOP_ERROR])
@pytest.mark.parametrize("degraded", [False, True])
def test_only_a_runtime_fault_on_an_answered_run_is_overruled(
    category: str, stop: str, prediction: str, decided_by: str, degraded: bool
) -> None:
    """Every combination of the inputs the check reads: it fires exactly when the judge's own
    (not degraded) verdict is runtime_fault and the run ended with a non-empty answer."""
    q = question()
    f = Failure(q, prediction, stop, (verdict(),), "SYS", "SKILL", "(none)")
    d = judged(q, category, decided_by=decided_by, degraded=degraded)
    [out] = overrule_judge([f], [d])
    fires = (
        category == "runtime_fault"
        and stop == "final"
        and prediction.strip() != ""
        and decided_by == JUDGE
        and not degraded
    )
    if not fires:
        assert out is d
        return
    assert (out.category, out.target, out.decided_by) == (
        "skill_gap",
        "skill",
        RULE_ANSWERED_NOT_A_FAULT,
    )
    assert out.rationale == OVERRULED_NOTE  # not the judge's reason: it got the category wrong
    assert out.contradiction is None
    assert (out.question_id, out.unit_id, out.task_type) == (q.question_id, q.unit_id, q.task_type)


def test_an_overruled_verdict_reaches_the_skill_pack() -> None:
    q = question()
    f = Failure(q, "5 December 2016", "final", (verdict(),), "SYS", "SKILL", "(none)")
    before = build_packs([judged(q, "runtime_fault")], [f], [])
    after = build_packs(overrule_judge([f], [judged(q, "runtime_fault")]), [f], [])
    assert not before.skill_packs
    assert [i.question_id for i in after.skill_packs[q.task_type].failures] == [q.question_id]


# -- skipping the judge (`diagnosis_judge`) ----------------------------------------------------


def test_without_the_judge_an_answered_failure_is_a_skill_gap_by_rule() -> None:
    ok = [verdict()]
    failures = [
        failure(question("ledger-u001"), ok),  # answered: the rule decides
        failure(question("ledger-u002"), ok, stop="max_steps"),  # did not end: the judge
        Failure(question("ledger-u003"), "  ", "final", tuple(ok), "SYS", "SKILL", "(none)"),
        failure(question("ledger-u004", CONTEXT), ok),  # a rule before it decides
        failure(question("ledger-u005"), [{"turn": 0, "type": "error"}], stop="error"),
    ]
    asked = triage_failures(failures)
    assert [f.question.question_id for f in asked.for_judge] == [
        "ledger-u001",
        "ledger-u002",
        "ledger-u003",
    ]
    skipped = triage_failures(failures, judge_answered=False)
    assert [f.question.question_id for f in skipped.for_judge] == ["ledger-u002", "ledger-u003"]
    by_id = {d.question_id: d for d in skipped.decided}
    d = by_id["ledger-u001"]
    assert (d.category, d.target, d.rationale, d.decided_by) == (
        "skill_gap",
        "skill",
        OVERRULED_NOTE,
        RULE_ANSWERED,
    )
    assert by_id["ledger-u004"].decided_by == RULE_CONTEXT_UNREAD
    assert by_id["ledger-u005"].decided_by == RULE_STOP_ERROR
    # the same verdict the judge's runtime_fault would have been overruled into
    judged = Diagnosis("ledger-u001", "ledger-u001", "ledger", "runtime_fault", "skill", "x")
    (overruled,) = overrule_judge(failures[:1], [judged])
    assert (overruled.category, overruled.target, overruled.rationale) == (
        d.category,
        d.target,
        d.rationale,
    )
    assert [answered(f) for f in failures] == [True, False, False, True, False]


@pytest.mark.parametrize(
    ("stood", "overruled", "skips"),
    [
        (0, 0, False),  # nothing known yet
        (0, JUDGE_AUTO_AFTER - 1, False),
        (0, JUDGE_AUTO_AFTER, True),
        (0, 61, True),  # Qwen2.5-Coder-1.5B on real-conventions
        (1, 61, False),  # one verdict that stood keeps the judge
        (5, 0, False),
    ],
)
def test_auto_skips_the_judge_once_every_verdict_was_overruled(
    stood: int, overruled: int, skips: bool
) -> None:
    assert judge_adds_nothing(stood, overruled) is skips


def test_judge_adds_nothing_needs_at_least_one_overruled_verdict() -> None:
    assert not judge_adds_nothing(0, 0, after=0)
    assert judge_adds_nothing(0, 1, after=0)
    assert judge_adds_nothing(0, 3, after=3) and not judge_adds_nothing(0, 2, after=3)
