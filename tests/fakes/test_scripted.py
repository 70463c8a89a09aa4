"""The shared scripted provider (tests/fakes/scripted.py) does what its docstring promises."""

from __future__ import annotations

import math

import anyio
import pytest

from app.providers.errors import TransientError
from core.protocols import LLMProvider
from core.types import LLMResponse, ToolCall, ToolSpec, Usage
from tests.fakes.scripted import ScriptedProvider, containing, reply

USER = [{"role": "user", "content": "What is 2 + 2?"}]


def ask(provider: LLMProvider, messages=USER, **kwargs) -> LLMResponse:
    return anyio.run(lambda: provider.complete(messages, **kwargs))


def test_a_sequence_is_served_in_order_and_the_last_repeats() -> None:
    provider = ScriptedProvider([TransientError("busy"), "four", reply("4", defect="truncated")])
    assert isinstance(provider, LLMProvider)
    with pytest.raises(TransientError):
        ask(provider)
    assert ask(provider).text == "four"
    assert [ask(provider).defect for _ in range(2)] == ["truncated", "truncated"]
    assert provider.calls == 4


def test_text_replies_count_words_as_tokens_unless_usage_is_given() -> None:
    counted = ask(ScriptedProvider(["it is 4"]), [{"role": "user", "content": "a b c d e"}])
    assert (counted.usage, counted.model) == (Usage(5, 3), "scripted")
    assert ask(ScriptedProvider(["it is 4"], usage=Usage(7, 1))).usage == Usage(7, 1)
    calls = (ToolCall("c1", "lookup", {"q": "x"}),)
    assert ask(ScriptedProvider([reply("", *calls, cost=0.5)])).tool_calls == calls


def test_requests_are_recorded_as_sent_with_defaults_filled_in() -> None:
    provider = ScriptedProvider(["ok"])
    messages = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Q"}]
    tool = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {}})
    ask(provider, messages, tools=[tool], seed=3, role="judge")
    messages.append({"role": "user", "content": "later"})  # the record keeps what was sent
    [request] = provider.requests
    assert (request.prompt, request.user, len(request.messages)) == ("SYS", "Q", 2)
    assert (request.tools, request.seed, request.role) == ([tool], 3, "judge")
    assert (request.temperature, request.max_tokens, request.response_format) == (0.0, 1024, None)
    assert request.kwargs == {"tools": [tool], "seed": 3, "role": "judge"}
    with pytest.raises(TypeError, match="colour"):
        ask(provider, colour="red")


def test_keyed_scripts_keep_one_queue_per_key_and_reject_unknown_keys() -> None:
    provider = ScriptedProvider({"judge": ["j1", "j2"], "agent": ["a1"]})
    texts = [ask(provider, role=r).text for r in ("judge", "agent", "judge", "judge")]
    assert texts == ["j1", "a1", "j2", "j2"]
    assert [r.role for r in provider.requests_for("judge")] == ["judge"] * 3
    with pytest.raises(KeyError, match="evolver"):
        ask(provider, role="evolver")
    by_text = ScriptedProvider({"q1": ["one"], "q10": ["ten"]}, key=containing("q1", "q10"))
    assert ask(by_text, [{"role": "user", "content": "q10?"}]).text == "ten"


def test_respond_can_wrap_another_provider_and_delay_counts_concurrency() -> None:
    inner = ScriptedProvider(["inner"])
    extra = {"role": "user", "content": "extra"}
    outer = ScriptedProvider(
        respond=lambda r: r.forward_to(inner, [*r.messages, extra]), delay=0.01
    )

    async def many() -> list[str]:
        texts: list[str] = []

        async def one() -> None:
            texts.append((await outer.complete(USER, seed=2)).text)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
        return texts

    assert anyio.run(many) == ["inner"] * 3
    assert outer.peak == 3 and outer.active == 0
    assert inner.requests[0].messages == [*USER, extra] and inner.requests[0].seed == 2


def test_an_infinite_delay_hangs_until_cancelled() -> None:
    provider = ScriptedProvider(["never"], delay=math.inf)

    async def go() -> bool:
        with anyio.move_on_after(0.05) as scope:
            await provider.complete(USER)
        return scope.cancelled_caught

    assert anyio.run(go) and provider.calls == 1 and provider.active == 0


def test_concurrent_calls_get_queue_turns_in_the_order_they_arrived() -> None:
    # the first to arrive waits longest, so the calls finish in the reverse order
    provider = ScriptedProvider(
        ["a", "b", "c"], delay=lambda r: 0.01 * (3 - provider.requests.index(r))
    )
    texts: dict[int, str] = {}

    async def go() -> None:
        async def one(seed: int) -> None:
            texts[seed] = (await provider.complete(USER, seed=seed)).text

        async with anyio.create_task_group() as tg:
            for seed in range(3):
                tg.start_soon(one, seed)

    anyio.run(go)
    assert [texts[r.seed] for r in provider.requests] == ["a", "b", "c"]
