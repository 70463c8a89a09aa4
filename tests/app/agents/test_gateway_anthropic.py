"""The recording gateway's Anthropic Messages route with the real anthropic client in front and
sim/basic behind it: the same record as the chat-completions route, Anthropic's shapes out."""

from __future__ import annotations

import dataclasses
import json

import anthropic
import httpx
import openai
import pytest

from app.harness.agents.calls import CallStatus, RecordedCall, trace_from_calls
from app.harness.agents.gateway import Gateway, running_gateway
from core.traces import Role, StepKind
from tests.app.agents.conftest import sim_provider, with_gateway

QUESTION = "[ledger] Case x. For client 1 the figures are 2, 3. What is the total?"
SYSTEM = "You answer ledger questions."
READ_SKILL = {
    "name": "read_skill",
    "description": "Read the skill file of a task type.",
    "input_schema": {"type": "object", "properties": {"task_type": {"type": "string"}}},
}
SKILL_TEXT = "# Skill: add up."


def client(gateway: Gateway, key: str) -> anthropic.AsyncAnthropic:
    base_url = gateway.endpoint(key).anthropic_base_url  # the root: the SDK adds /v1/messages
    return anthropic.AsyncAnthropic(base_url=base_url, api_key=key, max_retries=0)


def _timeless(calls: tuple[RecordedCall, ...]) -> list[RecordedCall]:
    return [dataclasses.replace(c, latency_s=0.0, started_unix=0.0) for c in calls]


@with_gateway
async def test_text_reply_and_its_shape(gateway: Gateway) -> None:
    key = gateway.open_rollout("plain")
    assert gateway.endpoint(key).anthropic_base_url == gateway.url
    reply = await client(gateway, key).messages.create(
        model="claude-anything",
        max_tokens=100,
        system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
        stop_sequences=["\n\nHuman:"],  # accepted, not forwarded
        extra_body={"temperature": 0.5},  # this SDK release no longer sends it; others do
    )
    assert reply.type == "message" and reply.role == "assistant" and reply.id.startswith("msg_")
    assert reply.model == "sim/basic" and reply.stop_reason == "end_turn"
    assert [b.type for b in reply.content] == ["text"] and "ANSWER:" in reply.content[0].text
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    (call,) = gateway.close_rollout(key)
    assert call.requested_model == "claude-anything"
    assert call.new_messages == (
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    )


@with_gateway
async def test_tool_round_trip_is_recorded_as_the_chat_completions_one(gateway: Gateway) -> None:
    # one conversation through each route, on two rollouts of the same gateway
    a_key, o_key = gateway.open_rollout("q1"), gateway.open_rollout("q1")
    a = client(gateway, a_key)
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": QUESTION}]
    first = await a.messages.create(
        model="any", max_tokens=256, system=SYSTEM, messages=messages, tools=[READ_SKILL]
    )
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "read_skill" and use.input == {"task_type": "unknown"}
    messages.append({"role": "assistant", "content": first.content})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": SKILL_TEXT}],
        }
    )
    second = await a.messages.create(
        model="any", max_tokens=256, system=SYSTEM, messages=messages, tools=[READ_SKILL]
    )
    assert second.stop_reason == "end_turn" and "ANSWER:" in second.content[0].text

    o = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=o_key, max_retries=0)
    tools = [
        {
            "type": "function",
            "function": {
                "name": READ_SKILL["name"],
                "description": READ_SKILL["description"],
                "parameters": READ_SKILL["input_schema"],
            },
        }
    ]
    chat: list[dict] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    reply = await o.chat.completions.create(model="any", max_tokens=256, messages=chat, tools=tools)
    call = reply.choices[0].message.tool_calls[0]
    chat.append(reply.choices[0].message.model_dump(exclude_none=True))
    chat.append({"role": "tool", "tool_call_id": call.id, "content": SKILL_TEXT})
    await o.chat.completions.create(model="any", max_tokens=256, messages=chat, tools=tools)

    via_anthropic, via_openai = gateway.close_rollout(a_key), gateway.close_rollout(o_key)
    assert [c.status for c in via_anthropic] == [CallStatus.OK, CallStatus.OK]
    assert _timeless(via_anthropic) == _timeless(via_openai)
    traces = [trace_from_calls(calls, "q1") for calls in (via_anthropic, via_openai)]
    assert dataclasses.replace(traces[0], latency_s=0) == dataclasses.replace(
        traces[1], latency_s=0
    )
    assert [(s.kind, s.role) for s in traces[0].steps] == [
        (StepKind.MESSAGE, Role.SYSTEM),
        (StepKind.MESSAGE, Role.USER),
        (StepKind.TOOL_CALL, Role.ASSISTANT),
        (StepKind.OBSERVATION, Role.TOOL),
        (StepKind.MESSAGE, Role.ASSISTANT),
    ]
    assert traces[0].final_answer == second.content[0].text


@with_gateway
async def test_streaming_text_and_tool_use(gateway: Gateway) -> None:
    key = gateway.open_rollout("s")
    c = client(gateway, key)
    user: list[anthropic.types.MessageParam] = [{"role": "user", "content": QUESTION}]
    async with c.messages.stream(model="m", max_tokens=100, messages=user) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert "ANSWER:" in text and final.content[0].text == text
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    assert final.usage.input_tokens > 0
    async with c.messages.stream(
        model="m", max_tokens=100, messages=user, tools=[READ_SKILL]
    ) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [(b.type, b.input) for b in final.content] == [("tool_use", {"task_type": "unknown"})]
    calls = gateway.close_rollout(key)
    assert [c.stream for c in calls] == [True, True]
    assert calls[1].tool_calls[0].id == final.content[0].id


@with_gateway
async def test_keys_refusals_and_the_cap(gateway: Gateway) -> None:
    user: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.AuthenticationError) as wrong:
        await client(gateway, "sk-rollout-not-issued").messages.create(
            model="m", max_tokens=10, messages=user
        )
    assert wrong.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]

    key = gateway.open_rollout("cap", call_cap=1)
    # x-api-key, as Claude Code sends it, and no anthropic-version header
    async with httpx.AsyncClient(base_url=gateway.url, headers={"x-api-key": key}) as http:
        ok = await http.post("/v1/messages", json={"model": "m", "max_tokens": 9, "messages": user})
    assert ok.status_code == 200 and ok.json()["type"] == "message"
    with pytest.raises(anthropic.PermissionDeniedError) as capped:
        await client(gateway, key).messages.create(model="m", max_tokens=10, messages=user)
    assert capped.value.body == {  # the SDK does not retry a 403
        "type": "error",
        "error": {
            "type": "permission_error",
            "message": "this rollout's call cap (1) is reached (rollout_call_cap)",
        },
    }
    assert [c.status for c in gateway.close_rollout(key)] == [
        CallStatus.OK,
        CallStatus.REFUSED_CAP,
    ]
    with pytest.raises(anthropic.PermissionDeniedError) as closed:
        await client(gateway, key).messages.create(model="m", max_tokens=10, messages=user)
    assert "rollout_closed" in str(closed.value)
    assert gateway.calls(key)[-1].status == CallStatus.REFUSED_CLOSED


BAD_BODIES = {
    b"{not json": "not JSON",
    b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}': "max_tokens",
    b'{"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}': "role",
    b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], '
    b'"tools": [{"name": "t"}]}': "tools.0.input_schema",
    b"[" * 100 + b"]" * 100: "nested deeper",
}


@with_gateway
async def test_malformed_bodies_are_invalid_request_errors(gateway: Gateway) -> None:
    key = gateway.open_rollout("bad")
    image = {"type": "image", "source": {"type": "url", "url": "http://127.0.0.1:9/x.png"}}
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client(gateway, key).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": [image]}]
        )
    assert caught.value.body == {  # type: ignore[comparison-overlap]
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.0.content.0: only text and tool_result blocks are forwarded "
            "here (got 'image')",
        },
    }
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers) as http:
        for body, needle in BAD_BODIES.items():
            reply = await http.post("/v1/messages", content=body)
            assert reply.status_code == 400, needle
            error = reply.json()
            assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
            assert needle in error["error"]["message"] and "\n" not in error["error"]["message"]
    assert gateway.close_rollout(key) == ()  # nothing recorded for a refused body


async def test_an_oversized_body_is_413() -> None:
    async with running_gateway(sim_provider(), max_body_bytes=20_000) as gateway:
        key = gateway.open_rollout("big")
        with pytest.raises(anthropic.ContentTooLargeError) as caught:
            await client(gateway, key).messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x" * 50_000}]
            )
        assert caught.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
        assert gateway.close_rollout(key) == ()


async def test_what_is_forwarded_and_a_failing_provider() -> None:
    from core.types import LLMResponse

    seen: list[dict] = []

    class Spy:
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            if messages[-1]["content"] == "boom":
                raise RuntimeError("the model is down")
            seen.append({"messages": messages, **kwargs})
            return LLMResponse(text="ANSWER: 5")

    history = [
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "x"},  # dropped
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "no b"}],
                },
                {"type": "text", "text": "try again"},
            ],
        },
    ]
    async with running_gateway(Spy()) as gateway:
        key = gateway.open_rollout("n")
        body = {
            "model": "m",
            "max_tokens": 10**6,
            "messages": history,
            "tools": [READ_SKILL, {"type": "web_search_20250305", "name": "web_search"}],
            "tool_choice": {"type": "none"},
            "temperature": 0.25,
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
        }
        async with httpx.AsyncClient(base_url=gateway.url, headers={"x-api-key": key}) as http:
            assert (await http.post("/v1/messages", json=body)).status_code == 200
            body["tool_choice"] = {"type": "auto"}
            assert (await http.post("/v1/messages", json=body)).status_code == 200
            body["messages"] = [{"role": "user", "content": "boom"}]
            failed = await http.post("/v1/messages", json=body)
        calls = gateway.close_rollout(key)
    assert failed.status_code == 502 and failed.json()["error"]["type"] == "api_error"
    assert "the model is down" in failed.json()["error"]["message"]
    assert [c.status for c in calls] == [CallStatus.OK, CallStatus.OK, CallStatus.ERROR]
    assert seen[0]["tools"] is None and seen[0]["max_tokens"] == 32_768
    assert seen[0]["temperature"] == 0.25
    assert seen[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object"}, "strict": True},
    }
    assert [t.name for t in seen[1]["tools"]] == ["read_skill"]  # the server tool is left out
    assert seen[0]["messages"] == [
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2}'},
                }
            ],
        },
        {"role": "tool", "content": "Error: no b", "tool_call_id": "t1"},
        {"role": "user", "content": "try again"},
    ]
    assert json.loads(seen[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {"a": 2}
