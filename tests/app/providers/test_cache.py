"""ResponseCache and CachingProvider: keys, hits, errors, telemetry, persistence, kill-safety."""

# ruff: noqa: F811 - test arguments name the imported `fake_openai` fixture

from __future__ import annotations

import dataclasses
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.providers.cache import CachingProvider, ResponseCache, key_for
from app.providers.errors import TransientError
from app.providers.litellm_provider import LiteLLMProvider
from core.protocols import LLMProvider
from core.types import LLMResponse, ToolCall, ToolSpec, Usage
from tests.fakes.fixtures import fake_openai  # noqa: F401 - pytest fixture
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[3]
USER = [{"role": "user", "content": "What is 2 + 2?"}]
TOOL = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {}})
ANSWER = LLMResponse(
    text="4",
    tool_calls=(ToolCall("c1", "lookup", {"q": "x"}), ToolCall("c2", "lookup", "{raw")),
    usage=Usage(12, 3),
    cost_usd=0.002,
    model="m",
    latency_s=0.4,
)


class Recorder:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record_call(self, row: dict[str, Any]) -> None:
        self.rows.append(row)


@pytest.fixture
def cache(tmp_path: Path) -> ResponseCache:
    return ResponseCache(tmp_path / "cache.sqlite")


def key(**changes: Any) -> str:
    args = {
        "model": "m",
        "messages": USER,
        "tools": [TOOL],
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": 0,
        "role": "agent",
    } | changes
    return key_for(**args)


def test_key_is_stable_and_canonical() -> None:
    assert key() == key()
    assert len(key()) == 64 and int(key(), 16) >= 0
    reordered = [{"content": "What is 2 + 2?", "role": "user"}]
    assert key(messages=reordered) == key()
    assert key(temperature=0) == key(temperature=0.0)
    assert key(tools=[TOOL.as_openai()]) == key()
    assert key(tools=None) == key(tools=[])
    # A golden value (sha256 of json.dumps(sort_keys, compact separators) of the inputs):
    # changing the canonical form would silently invalidate every stored cache.
    assert key(tools=None) == "8f95c71c2844e82c6d10cf359239ae20eeb64779e7598306cae66372d0a9d550"


@pytest.mark.parametrize(
    "change",
    [
        {"model": "m2"},
        {"messages": [{"role": "user", "content": "What is 2 + 3?"}]},
        {"tools": None},
        {"temperature": 0.7},
        {"max_tokens": 257},
        {"seed": 1},
        {"role": "judge"},
    ],
)
def test_key_changes_with_every_input(change: dict[str, Any]) -> None:
    assert key(**change) != key()


def test_put_get_round_trip(cache: ResponseCache) -> None:
    assert cache.get("k") is None
    cache.put("k", ANSWER)
    assert cache.get("k") == ANSWER
    assert len(cache) == 1


def test_persists_across_instances_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    first = ResponseCache(path)
    first.put("k", ANSWER)
    first.close()
    second = ResponseCache(path)
    assert second.get("k") == ANSWER
    columns = {c.name: c.type for c in second.db["responses"].columns}
    assert columns == {"key": "TEXT", "response_json": "TEXT", "created_at": "TEXT"}
    assert second.db["responses"].pks == ["key"]
    assert second.db.journal_mode == "wal"
    (created,) = second._conn.execute("SELECT created_at FROM responses").fetchone()
    assert created.endswith("Z") and "T" in created


async def test_miss_then_hit(cache: ResponseCache) -> None:
    inner = ScriptedProvider([ANSWER])
    recorder = Recorder()
    provider = CachingProvider(inner, cache, model_name="m", recorder=recorder)
    assert isinstance(provider, LLMProvider)
    miss = await provider.complete(USER, tools=[TOOL], seed=3, role="evolver")
    hit = await provider.complete(USER, tools=[TOOL], seed=3, role="evolver")
    other_seed = await provider.complete(USER, tools=[TOOL], seed=4, role="evolver")
    assert inner.calls == 2
    assert miss == ANSWER and not miss.cache_hit and not other_seed.cache_hit
    assert hit.cache_hit and (hit.cost_usd, hit.latency_s) == (0.0, 0.0)
    assert (hit.text, hit.tool_calls, hit.usage) == (ANSWER.text, ANSWER.tool_calls, ANSWER.usage)
    assert recorder.rows[0] == {
        "role": "evolver",
        "model": "m",
        "tokens_in": 12,
        "tokens_out": 3,
        "cost_usd": 0.002,
        "latency_s": 0.4,
        "status": "ok",
        "cache_hit": 0,
        "attempts": 1,
        "retries": 0,
        "timeouts": 0,
        "response_format": None,
    }
    assert recorder.rows[1] | {"cost_usd": None} == recorder.rows[0] | {
        "cost_usd": None,
        "latency_s": 0.0,
        "cache_hit": 1,
        "attempts": 0,  # served from the cache: no request was made
    }
    assert recorder.rows[1]["cost_usd"] == 0.0


async def test_errors_are_recorded_not_cached(cache: ResponseCache) -> None:
    inner = ScriptedProvider([TransientError("rate limited"), ANSWER])
    recorder = Recorder()
    provider = CachingProvider(inner, cache, model_name="m", recorder=recorder)
    with pytest.raises(TransientError):
        await provider.complete(USER)
    assert len(cache) == 0
    assert (await provider.complete(USER)) == ANSWER
    assert inner.calls == 2
    assert [r["status"] for r in recorder.rows] == ["error:TransientError", "ok"]
    assert recorder.rows[0]["cost_usd"] == 0.0 and recorder.rows[0]["cache_hit"] == 0


def test_a_defective_reply_is_paid_for_but_never_stored(cache: ResponseCache) -> None:
    """A reply the provider marked defective is no answer: replaying it from the cache would
    repeat one bad moment of the endpoint forever (the key does not say how the call went)."""
    broken = dataclasses.replace(ANSWER, text='{"edits": [', tool_calls=(), defect="malformed")
    cache.put(key(), broken, spend=("train1", "train1-e1", "agent", "m"))
    assert cache.get(key()) is None and len(cache) == 0
    assert cache.spend_total("train1") == pytest.approx(0.002)  # the ledger still has the cost


async def test_a_defective_reply_reaches_the_caller_and_the_next_call_asks_again(
    cache: ResponseCache,
) -> None:
    broken = dataclasses.replace(ANSWER, defect="truncated")
    inner = ScriptedProvider([broken, ANSWER])
    provider = CachingProvider(inner, cache, model_name="m")
    assert (await provider.complete(USER)).defect == "truncated"
    again = await provider.complete(USER)
    assert again == ANSWER and not again.cache_hit and inner.calls == 2
    assert (await provider.complete(USER)).cache_hit and inner.calls == 2


async def test_hits_survive_a_new_process_instance(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    await CachingProvider(ScriptedProvider([ANSWER]), ResponseCache(path), model_name="m").complete(
        USER
    )
    inner = ScriptedProvider([RuntimeError("must not be called")])
    resumed = CachingProvider(inner, ResponseCache(path), model_name="m")
    assert (await resumed.complete(USER)).cache_hit and inner.calls == 0


async def test_real_litellm_behind_cache(
    cache: ResponseCache,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_LLM_API_KEY", "sk-test")
    inner = LiteLLMProvider(
        "openai/fake-model", api_base=fake_openai.base_url, api_key_env="FAKE_LLM_API_KEY"
    )
    recorder = Recorder()
    provider = CachingProvider(inner, cache, model_name="openai/fake-model", recorder=recorder)
    first = await provider.complete(USER)
    second = await provider.complete(USER)
    assert (first.text, second.text, second.cache_hit) == ("ok", "ok", True)
    assert len(fake_openai.requests) == 1
    assert [r["cache_hit"] for r in recorder.rows] == [0, 1]


def test_sigkill_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    child = textwrap.dedent(
        f"""
        import os, signal
        from app.providers.cache import ResponseCache
        from core.types import LLMResponse
        cache = ResponseCache({str(path)!r})
        for i in range(200):
            cache.put(f"k{{i}}", LLMResponse(text=str(i)))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    reopened = ResponseCache(path)
    assert len(reopened) == 200 and reopened.get("k199") == LLMResponse(text="199")


def test_unreadable_file_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    assert cache.get("k") == ANSWER
    assert len(list(tmp_path.glob("cache.sqlite.corrupt-*"))) == 1


def test_memory_front_is_bounded(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite", memory_items=3)
    for i in range(10):
        cache.put(f"k{i}", LLMResponse(text=str(i)))
    assert len(cache._memory) == 3
    assert cache.get("k0") == LLMResponse(text="0")  # evicted from memory, read from SQLite


def test_second_connection_reads_while_open(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT count(*) FROM responses").fetchone() == (1,)


async def test_a_simulated_models_settings_are_part_of_its_key(cache: ResponseCache) -> None:
    """A reply the simulated judge gave at `sim_judge_noise = 0` is never served at 0.3 (one
    workspace, one cache, two configs); the defaults keep the plain model name's keys, and the
    simulated model's delays change no key."""
    from app.harness.workspace.config import RunConfig
    from app.providers.factory import make_providers

    def judge(**sets: Any) -> LLMProvider:
        return make_providers(RunConfig(**sets), cache, None)["judge"]

    prompt = [{"role": "user", "content": "## Task: diagnose-failure\n<question>x</question>"}]
    first = await judge().complete(prompt, role="judge")
    assert not first.cache_hit
    assert (await judge().complete(prompt, role="judge")).cache_hit
    assert (await judge(sim_latency_ms=5.0).complete(prompt, role="judge")).cache_hit
    noisy = judge(sim_judge_noise=0.3)
    assert not (await noisy.complete(prompt, role="judge")).cache_hit
    assert (await noisy.complete(prompt, role="judge")).cache_hit
    plain = key_for("sim/basic", prompt, None, 0.0, 1024, 0, "judge")
    assert cache.get(plain) is not None  # the default settings' key is the plain one
