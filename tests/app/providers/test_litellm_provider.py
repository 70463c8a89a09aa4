"""LiteLLMProvider through the real litellm client against the fake OpenAI server (loopback)."""

# ruff: noqa: F811 - test arguments name the imported `fake_openai` fixture

from __future__ import annotations

import logging
import random
import traceback

import anyio
import pytest
from loguru import logger

from app.providers.errors import (
    BudgetExceeded,
    ConfigurationError,
    ProviderError,
    TransientError,
)
from app.providers.litellm_provider import CostBudget, LiteLLMProvider, load_litellm, redact
from core import errors as core_errors
from core.protocols import LLMProvider
from core.types import ToolCall, ToolSpec
from tests.fakes.fixtures import fake_openai  # noqa: F401 - pytest fixture
from tests.fakes.openai_server import FakeOpenAI, Reply

MODEL = "openai/fake-model"
KEY_ENV = "FAKE_LLM_API_KEY"
CANARY = "sk-canary-7f3a9c1e5b2d4680aa"
USER = [{"role": "user", "content": "hello"}]
LOOKUP = ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {}})


class Sleeps:
    """Injected sleep: records the backoff delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(fake_openai: FakeOpenAI, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")

    def build(**overrides) -> LiteLLMProvider:
        options = {
            "api_base": fake_openai.base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 3,
            "backoff_base_s": 0.001,
            "timeout_s": 5,
            "sleep": sleeps,
            "rng": random.Random(0),
        } | overrides
        return LiteLLMProvider(options.pop("model", MODEL), **options)

    return build


@pytest.fixture
def loguru_lines():
    """loguru is not captured by caplog: add a sink with tracebacks and variable values."""
    lines: list[str] = []
    sink_id = logger.add(lines.append, level="DEBUG", backtrace=True, diagnose=True)
    yield lines
    logger.remove(sink_id)


async def test_canned_answer(make, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(Reply.ok("Paris is the capital."))
    provider = make()
    assert isinstance(provider, LLMProvider)
    response = await provider.complete(USER, temperature=0.2, max_tokens=64, seed=7)
    assert response.text == "Paris is the capital."
    assert response.tool_calls == ()
    assert response.usage.tokens_in > 0 and response.usage.tokens_out > 0
    assert response.model == MODEL and response.latency_s > 0
    assert response.cost_usd == 0.0 and not response.cache_hit  # unpriced, no prices given
    sent = fake_openai.requests[-1]
    assert (sent["model"], sent["max_tokens"], sent["seed"]) == ("fake-model", 64, 7)
    assert sent["temperature"] == 0.2
    assert not {"input_cost_per_token", "num_retries", "api_key"} & set(sent)  # client-side only


async def test_tool_call_parsed_into_toolcall(make, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(Reply.tool("lookup", {"query": "rivers", "limit": 3}))
    response = await make().complete(USER, tools=[LOOKUP])
    assert response.tool_calls == (
        ToolCall(id="call_1", name="lookup", arguments={"query": "rivers", "limit": 3}),
    )
    assert fake_openai.requests[-1]["tools"][0]["function"]["name"] == "lookup"


async def test_tool_arguments_that_are_not_json_stay_raw(make, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(Reply.tool("lookup", "{not json"))
    response = await make().complete(USER, tools=[LOOKUP])
    assert response.tool_calls[0].arguments == "{not json"


@pytest.mark.parametrize(
    ("reply", "defect"),
    [
        (Reply.ok("Paris is the capital."), ""),
        (Reply.tool("lookup", {"query": "x"}), ""),
        (Reply.cut("Paris is the cap"), "truncated"),
        (Reply.cut("", finish="content_filter"), "filtered"),
        (Reply.ok(""), "empty"),
        (Reply.tool("lookup", "{not json"), "malformed"),
    ],
)
async def test_replies_the_server_did_not_finish_are_marked(
    make, fake_openai: FakeOpenAI, reply: Reply, defect: str
) -> None:
    """The response cache never keeps a marked reply (app/providers/cache.py)."""
    fake_openai.push(reply)
    assert (await make().complete(USER, tools=[LOOKUP])).defect == defect


async def test_rate_limit_is_retried_then_succeeds(make, fake_openai, sleeps) -> None:
    fake_openai.push(Reply.error(429), Reply.error(429), Reply.ok("finally"))
    provider = make()
    response = await provider.complete(USER)
    assert response.text == "finally"
    assert len(fake_openai.requests) == 3
    assert (provider.stats.attempts, provider.stats.retries, provider.stats.errors) == (3, 2, 0)
    assert len(sleeps.delays) == 2


async def test_server_errors_exhaust_retries(make, fake_openai, sleeps) -> None:
    fake_openai.push(*[Reply.error(500)] * 3)
    provider = make(max_retries=2)
    with pytest.raises(TransientError, match="after 3 attempts") as info:
        await provider.complete(USER)
    assert "500" in str(info.value)
    assert len(fake_openai.requests) == 3 and provider.stats.retries == 2
    assert all(0 <= d <= 0.001 * 2**i for i, d in enumerate(sleeps.delays))


async def test_timeout_is_retried_then_transient(make, fake_openai) -> None:
    provider = make(timeout_s=0.3, max_retries=1)
    slow = [{"role": "user", "content": "[[fake:slow=3]]"}]
    with anyio.fail_after(4):  # 2 attempts x 0.3 s, not litellm's own 4 s of retries
        with pytest.raises(TransientError, match="Timeout"):
            await provider.complete(slow)
    assert len(fake_openai.requests) == 2


async def test_malformed_json_is_a_clear_error(make, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(Reply.malformed())
    with pytest.raises(ProviderError, match="malformed") as info:
        await make().complete(USER)
    assert not isinstance(info.value, TransientError)
    assert len(fake_openai.requests) == 1  # a broken server is not retried


async def test_bad_request_is_not_retried(make, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(Reply.error(400))
    with pytest.raises(ProviderError, match="BadRequestError 400") as info:
        await make().complete(USER)
    assert not isinstance(info.value, TransientError)
    assert len(fake_openai.requests) == 1


async def test_budget_stops_before_further_calls(make, fake_openai: FakeOpenAI) -> None:
    budget = CostBudget(max_usd=0.000_01)
    agent = make(price_in_per_mtok=2.0, price_out_per_mtok=8.0, budget=budget)
    judge = make(price_in_per_mtok=2.0, price_out_per_mtok=8.0, budget=budget)
    first = await agent.complete(USER)
    tokens = first.usage
    assert first.cost_usd == pytest.approx((tokens.tokens_in * 2 + tokens.tokens_out * 8) / 1e6)
    while not budget.exhausted:
        await agent.complete(USER)
    sent = len(fake_openai.requests)
    for provider in (agent, judge):  # shared: every provider of the run stops
        with pytest.raises(BudgetExceeded, match="budget") as refused:
            await provider.complete(USER)
        assert isinstance(refused.value, core_errors.BudgetExceeded)  # the core re-raises it
    assert len(fake_openai.requests) == sent  # refused before reaching the server
    assert budget.spent_usd >= budget.max_usd


async def test_priced_model_cost_comes_from_litellm(make) -> None:
    response = await make(model="openai/gpt-4o-mini").complete(USER)
    litellm = load_litellm()
    price = litellm.model_cost["gpt-4o-mini"]
    expected = (
        response.usage.tokens_in * price["input_cost_per_token"]
        + response.usage.tokens_out * price["output_cost_per_token"]
    )
    assert response.cost_usd == pytest.approx(expected)


async def test_unpriced_model_warns_once(make, loguru_lines) -> None:
    provider = make(model="openai/fake-warn-once")
    await provider.complete(USER)
    await provider.complete(USER)
    make(model="openai/fake-warn-once").preflight()
    warnings = [line for line in loguru_lines if "no price" in line]
    assert len(warnings) == 1 and "fake-warn-once" in warnings[0]


async def test_concurrent_calls_each_retry_their_own_429(make, fake_openai) -> None:
    provider = make()
    results: list[str] = []

    async def one(i: int) -> None:
        msg = [{"role": "user", "content": f"q{i} [[fake:429,text=a{i}]]"}]
        results.append((await provider.complete(msg)).text)

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(one, i)
    assert sorted(results) == sorted(f"a{i}" for i in range(16))
    assert provider.stats.retries == 16


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        LiteLLMProvider("openai/gpt-4o-mini").preflight()


async def test_missing_key_fails_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_MODEL_API_KEY", raising=False)
    provider = LiteLLMProvider("openai/gpt-4o-mini", api_key_env="MY_MODEL_API_KEY")
    with pytest.raises(ConfigurationError, match="MY_MODEL_API_KEY"):
        await provider.complete(USER)
    assert provider.stats.attempts == 0


def test_unknown_model_is_named() -> None:
    with pytest.raises(ConfigurationError, match="no-such-model-xyz"):
        LiteLLMProvider("no-such-model-xyz").preflight()


async def test_local_server_needs_no_key(fake_openai, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = LiteLLMProvider(MODEL, api_base=fake_openai.base_url)
    assert (await provider.complete(USER)).text == "ok"


async def test_canary_key_never_leaks(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    loguru_lines: list[str],
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    provider = LiteLLMProvider(MODEL, api_base=fake_openai.base_url, backoff_base_s=0.001)
    # A careless server echoes the key in a retried 429 and in the final 401.
    fake_openai.push(Reply.error(429, echo_auth=True), Reply.error(401))
    with pytest.raises(ConfigurationError) as info:
        await provider.complete(USER)
    logger.opt(exception=info.value).error("call failed")  # as a caller would log it
    assert provider.stats.retries == 1 and "[REDACTED:" in str(info.value)
    texts = [
        str(info.value),
        repr(info.value),
        "".join(traceback.format_exception(info.value)),
        *loguru_lines,
        caplog.text,
        *capfd.readouterr(),
    ]
    assert any("key provided: Bearer [REDACTED:" in line for line in loguru_lines)  # retry logged
    assert not [text for text in texts if CANARY in text]


def test_redact_hides_env_secrets_and_key_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-0123456789")
    text = "t=tok-0123456789 k=sk-abcdefghijklmnop auth=Bearer xyz123 x=my-own-key ok=short"
    out = redact(text, ["my-own-key"])
    for secret in ("tok-0123456789", "sk-abcdefghijklmnop", "xyz123", "my-own-key"):
        assert secret not in out
    assert out.startswith("t=[REDACTED:") and out.endswith(" ok=short")


def test_backoff_is_full_jitter_capped_and_honours_retry_after() -> None:
    provider = LiteLLMProvider(MODEL, backoff_base_s=0.5, backoff_max_s=4, rng=random.Random(1))
    for attempt in range(8):
        assert 0 <= provider.retry.delay(attempt, None) <= min(4, 0.5 * 2**attempt)
    assert provider.retry.delay(0, 2.0) >= 2.0
    assert provider.retry.delay(0, 60.0) == 4  # Retry-After never exceeds the cap
