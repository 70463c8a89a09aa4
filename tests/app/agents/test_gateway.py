"""The recording gateway with the real openai client in front and sim/basic behind it."""

from __future__ import annotations

import json

import anyio
import httpx
import openai
import pytest

from app.harness.agents.calls import CallStatus, trace_from_calls, usage_from_calls
from app.harness.agents.gateway import Gateway, GatewayError
from core.traces import Role, StepKind
from tests.app.agents.conftest import with_gateway

QUESTION = "[ledger] Case x. For client 1 the figures are 2, 3. What is the total?"
READ_SKILL = {
    "type": "function",
    "function": {
        "name": "read_skill",
        "description": "Read the skill file of a task type.",
        "parameters": {"type": "object", "properties": {"task_type": {"type": "string"}}},
    },
}


def client(gateway: Gateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


@with_gateway
async def test_tool_calling_round_trip_is_recorded_on_its_rollout(gateway: Gateway) -> None:
    key = gateway.open_rollout("q1")
    c = client(gateway, key)
    messages: list[dict] = [
        {"role": "system", "content": "You answer ledger questions."},
        {"role": "user", "content": QUESTION},
    ]
    first = await c.chat.completions.create(model="any", messages=messages, tools=[READ_SKILL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "read_skill"
    assert json.loads(call.function.arguments) == {"task_type": "unknown"}
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "# Skill: add up."})
    second = await c.chat.completions.create(model="any", messages=messages, tools=[READ_SKILL])
    assert second.choices[0].finish_reason == "stop"
    assert "ANSWER:" in second.choices[0].message.content
    assert second.usage.prompt_tokens > 0
    calls = gateway.close_rollout(key)
    assert [c.status for c in calls] == [CallStatus.OK, CallStatus.OK]
    assert calls[1].prefix_len == 2 and len(calls[1].new_messages) == 2  # only what was new
    trace = trace_from_calls(calls, "q1")
    kinds = [(s.kind, s.role) for s in trace.steps]
    assert kinds == [
        (StepKind.MESSAGE, Role.SYSTEM),
        (StepKind.MESSAGE, Role.USER),
        (StepKind.TOOL_CALL, Role.ASSISTANT),
        (StepKind.OBSERVATION, Role.TOOL),
        (StepKind.MESSAGE, Role.ASSISTANT),
    ]
    assert trace.steps[3].tool_name == "read_skill"
    assert trace.final_answer == second.choices[0].message.content
    usage = usage_from_calls(calls)
    assert usage.calls == 2 and usage.tokens_in == trace.tokens_in > 0


@with_gateway
async def test_streaming_sends_text_and_tool_calls_as_chunks(gateway: Gateway) -> None:
    key = gateway.open_rollout("s")
    c = client(gateway, key)
    user = [{"role": "user", "content": QUESTION}]
    stream = await c.chat.completions.create(
        model="m", messages=user, stream=True, stream_options={"include_usage": True}
    )
    text, usage = "", None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        usage = chunk.usage or usage
    assert "ANSWER:" in text and usage is not None and usage.total_tokens > 0
    stream = await c.chat.completions.create(
        model="m", messages=user, tools=[READ_SKILL], stream=True
    )
    names = [
        tc.function.name
        async for chunk in stream
        for tc in (chunk.choices[0].delta.tool_calls or [] if chunk.choices else [])
    ]
    assert names == ["read_skill"]
    calls = gateway.close_rollout(key)
    assert [c.stream for c in calls] == [True, True]


@with_gateway
async def test_models_lists_the_served_model(gateway: Gateway) -> None:
    key = gateway.open_rollout("m")
    page = await client(gateway, key).models.list()
    assert [m.id for m in page.data] == ["sim/basic"]
    with pytest.raises(openai.AuthenticationError):
        await client(gateway, "sk-rollout-wrong").models.list()


@with_gateway
async def test_two_keys_each_calls_land_on_their_own_rollout(gateway: Gateway) -> None:
    a, b = gateway.open_rollout("a"), gateway.open_rollout("b")
    user = [{"role": "user", "content": QUESTION}]

    async def ask(key: str, times: int) -> None:
        for _ in range(times):
            await client(gateway, key).chat.completions.create(model="m", messages=user)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, a, 3)
        tg.start_soon(ask, b, 1)
    assert len(gateway.close_rollout(a)) == 3
    assert len(gateway.close_rollout(b)) == 1


@with_gateway
async def test_call_cap_refuses_and_records(gateway: Gateway) -> None:
    key = gateway.open_rollout("cap", call_cap=2)
    c = client(gateway, key)
    user = [{"role": "user", "content": QUESTION}]
    await c.chat.completions.create(model="m", messages=user)
    await c.chat.completions.create(model="m", messages=user)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await c.chat.completions.create(model="m", messages=user)
    assert caught.value.code == "rollout_call_cap"
    calls = gateway.close_rollout(key)
    assert [c.status for c in calls] == [CallStatus.OK, CallStatus.OK, CallStatus.REFUSED_CAP]
    assert usage_from_calls(calls).refused == 1


@with_gateway
async def test_time_limit_refuses(gateway: Gateway) -> None:
    key = gateway.open_rollout("t", time_limit_s=0.0)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await client(gateway, key).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.code == "rollout_time_limit"


@with_gateway
async def test_closed_key_is_refused_and_recorded(gateway: Gateway) -> None:
    key = gateway.open_rollout("c")
    assert gateway.close_rollout(key) == ()
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await client(gateway, key).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.code == "rollout_closed"
    assert [c.status for c in gateway.calls(key)] == [CallStatus.REFUSED_CLOSED]
    with pytest.raises(GatewayError):
        gateway.close_rollout(key)


@with_gateway
async def test_wrong_or_missing_key_is_401(gateway: Gateway) -> None:
    gateway.open_rollout("w")
    with pytest.raises(openai.AuthenticationError):
        await client(gateway, "sk-rollout-not-issued").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        reply = await http.post("/chat/completions", json={})
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"{not json", 400, "not JSON"),
        (b"[" * 100 + b"]" * 100, 400, "nested deeper"),
        (b'{"model": "m", "messages": []}', 400, "messages"),
        (b'{"model": "m", "messages": [{"role": "robot", "content": "x"}]}', 400, "role"),
        (b"x" * 5_000_000, 413, "larger than"),
    ],
    ids=["not-json", "too-deep", "no-messages", "bad-role", "oversized"],
)
@with_gateway
async def test_bad_bodies_get_one_clear_4xx(
    gateway: Gateway, body: bytes, status: int, needle: str
) -> None:
    key = gateway.open_rollout("bad")
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        reply = await http.post("/chat/completions", content=body, headers=headers)
        assert reply.status_code == status
        error = reply.json()["error"]
        assert needle in error["message"] and "\n" not in error["message"]
        # the server is still there, and nothing was recorded for a refused body
        ok = await http.post(
            "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": QUESTION}]},
            headers=headers,
        )
    assert ok.status_code == 200
    assert [c.status for c in gateway.close_rollout(key)] == [CallStatus.OK]


async def test_a_failing_provider_is_a_502_not_a_dead_server() -> None:
    from app.harness.agents.gateway import running_gateway

    class Broken:
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom\x1b[2J")

    async with running_gateway(Broken()) as gw:
        key = gw.open_rollout("b")
        with pytest.raises(openai.InternalServerError) as caught:
            await client(gw, key).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert "\x1b" not in str(caught.value)
        calls = gw.close_rollout(key)
    assert calls[0].status == CallStatus.ERROR and "boom" in calls[0].error


async def test_calls_are_logged_under_the_rollouts_run() -> None:
    from app.harness.agents.gateway import running_gateway
    from app.harness.rollouts.telemetry import current_run_id
    from core.types import LLMResponse

    seen: list[str] = []

    class Spy:
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(current_run_id.get())
            return LLMResponse(text="ANSWER: 1")

    async with running_gateway(Spy()) as gw:
        for log_as in ("train1-e1-s1-rollout", ""):
            key = gw.open_rollout("r", log_as=log_as)
            await client(gw, key).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
            gw.close_rollout(key)
    assert seen == ["train1-e1-s1-rollout", ""]


@with_gateway
async def test_refusals_are_recorded_up_to_a_bound(gateway: Gateway) -> None:
    from app.harness.agents.gateway import REFUSALS_KEPT

    key = gateway.open_rollout("knocks", call_cap=0)
    headers = {"Authorization": f"Bearer {key}"}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=gateway.base_url, headers=headers) as http:
        for _ in range(REFUSALS_KEPT + 20):
            assert (await http.post("/chat/completions", json=body)).status_code == 403
    calls = gateway.close_rollout(key)
    assert len(calls) == REFUSALS_KEPT and all(c.status.refused for c in calls)


async def test_parallel_calls_of_one_rollout_keep_arrival_order() -> None:
    from app.harness.agents.calls import request_histories
    from app.harness.agents.gateway import running_gateway
    from core.types import LLMResponse

    class Slow:
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            # the first request answers last
            await anyio.sleep(0.3 if messages[-1]["content"] == "first" else 0.0)
            return LLMResponse(text=messages[-1]["content"])

    sent = {
        "first": [{"role": "user", "content": "first"}],
        "second": [{"role": "system", "content": "s"}, {"role": "user", "content": "second"}],
    }
    async with running_gateway(Slow()) as gw:
        key = gw.open_rollout("p")

        async def ask(name: str) -> None:
            await client(gw, key).chat.completions.create(model="m", messages=sent[name])

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "first")
            await anyio.sleep(0.1)
            tg.start_soon(ask, "second")
        calls = gw.close_rollout(key)
    assert [c.reply_text for c in calls] == ["first", "second"]
    histories = list(request_histories(calls))
    assert [[m["content"] for m in h] for h in histories] == [["first"], ["s", "second"]]


async def test_sampling_fields_and_response_format_reach_the_provider() -> None:
    from app.harness.agents.gateway import running_gateway
    from core.types import LLMResponse

    seen: list[dict] = []

    class Spy:
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(kwargs)
            return LLMResponse(text="{}")

    async with running_gateway(Spy()) as gw:
        key = gw.open_rollout("f")
        await client(gw, key).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            temperature=0.7,
            max_tokens=10**9,
            seed=5,
            response_format={"type": "json_object"},
        )
        await client(gw, key).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert seen[0]["temperature"] == 0.7 and seen[0]["seed"] == 5
    assert seen[0]["max_tokens"] == 32_768  # capped
    assert seen[0]["response_format"] == {"type": "json_object"}
    assert "response_format" not in seen[1] and seen[1]["max_tokens"] == 1_024
