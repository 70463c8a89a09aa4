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
    RULE_CONTEXT_UNREAD,
    RULE_SKILL_UNOPENED,
    RULE_STOP_ERROR,
    RULE_UNPARSED_ARGUMENTS,
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
