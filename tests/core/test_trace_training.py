"""What an ingested trace may teach (core/trace_training.py): verdicts from feedback, error
traces never, and the trace as chat messages with every tool result answering its call."""

from __future__ import annotations

import json

from core.trace_training import TraceUse, chat_messages, split_prompt, verdict
from core.traces import Feedback, FeedbackKind, Role, Source, Step, StepKind, Trace

USER = Step(StepKind.MESSAGE, Role.USER, "Total of 2 and 3?")
CALL = Step(StepKind.TOOL_CALL, Role.ASSISTANT, tool_name="add", arguments='{"a": 2, "b": 3}')
SEEN = Step(StepKind.OBSERVATION, Role.TOOL, "5", tool_name="add")
REPLY = Step(StepKind.MESSAGE, Role.ASSISTANT, "It is 5.")


def _trace(*feedback: Feedback, steps: tuple[Step, ...] = (USER, CALL, SEEN, REPLY)) -> Trace:
    return Trace(Source.CHAT_JSON, "t1", steps, feedback=feedback)


def score(value: float) -> Feedback:
    return Feedback(FeedbackKind.SCORE, "user", value)


def test_verdicts_follow_the_feedback() -> None:
    edit = Feedback(FeedbackKind.EDITED, text="5")
    cases = {
        (edit,): (TraceUse.GOOD, "5", "It is 5."),
        (score(0.9),): (TraceUse.GOOD, "It is 5.", ""),
        (score(0.9), score(0.2)): (TraceUse.BAD, "", ""),
        (score(0.6),): (TraceUse.NONE, "", ""),
        (Feedback(FeedbackKind.ACCEPTED),): (TraceUse.GOOD, "It is 5.", ""),
        (Feedback(FeedbackKind.ABANDONED),): (TraceUse.BAD, "", ""),
        (Feedback(FeedbackKind.RETRY),): (TraceUse.NONE, "", ""),
        (): (TraceUse.NONE, "", ""),
    }
    for feedback, want in cases.items():
        v = verdict(_trace(*feedback))
        assert (v.use, v.target, v.replaced) == want, feedback


def test_an_error_trace_teaches_nothing_whatever_its_feedback() -> None:
    failed = Step(StepKind.OBSERVATION, Role.TOOL, "boom", tool_name="add", is_error=True)
    edit = Feedback(FeedbackKind.EDITED, text="5")
    assert verdict(_trace(edit, score(1.0), steps=(USER, CALL, failed, REPLY))).use == (
        TraceUse.ERROR
    )
    assert verdict(Trace(Source.OTLP, "t", (USER, REPLY), error=True, feedback=(edit,))).use == (
        TraceUse.ERROR
    )


def test_messages_pair_each_result_with_its_call_and_take_the_target() -> None:
    second = Step(StepKind.TOOL_CALL, Role.ASSISTANT, tool_name="add", arguments="not json")
    steps = (USER, CALL, second, SEEN, SEEN, REPLY)
    openai = chat_messages(_trace(steps=steps), final="5", json_arguments=True)
    assert [m["role"] for m in openai] == ["user", "assistant", "tool", "tool", "assistant"]
    ids = [c["id"] for c in openai[1]["tool_calls"]]
    assert [openai[2]["tool_call_id"], openai[3]["tool_call_id"]] == ids and len(set(ids)) == 2
    assert json.loads(openai[1]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert openai[-1]["content"] == "5"
    objects = chat_messages(_trace(steps=steps), final="5", json_arguments=False)
    assert [c["function"]["arguments"] for c in objects[1]["tool_calls"]] == [
        {"a": 2, "b": 3},
        {"_raw": "not json"},
    ]
    prompt, completion = split_prompt(objects)
    assert prompt == [{"role": "user", "content": USER.text}] and completion == objects[1:]


def test_steps_after_the_final_reply_are_left_out() -> None:
    late = Step(StepKind.MESSAGE, Role.USER, "thanks")
    messages = chat_messages(_trace(steps=(USER, REPLY, late)), final="5", json_arguments=True)
    assert messages == [
        {"role": "user", "content": USER.text},
        {"role": "assistant", "content": "5"},
    ]
