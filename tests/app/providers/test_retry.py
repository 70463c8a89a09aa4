"""The one retry loop (app/providers/retry.py), driven through its `sleep=` seam: no real waits."""

from __future__ import annotations

import random

import anyio
import pytest

from app.providers.errors import ProviderError, TransientError
from app.providers.retry import FailureOutcome, RetryingProvider, RetryPolicy
from tests.fakes.scripted import ScriptedProvider


class Sleeps:
    """Records each wait instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def flaky(*errors: Exception) -> ScriptedProvider:
    """A provider that raises the given errors in turn, then answers."""
    return ScriptedProvider([*errors, "ok"])


def policy(sleeps: Sleeps, **overrides: float) -> RetryPolicy:
    options: dict = {"max_retries": 3, "backoff_base_s": 0.5, "backoff_max_s": 4.0} | overrides
    return RetryPolicy(**options, sleep=sleeps, rng=random.Random(7))


def test_delays_are_full_jitter_under_a_doubling_cap() -> None:
    retry = policy(Sleeps(), max_retries=10)
    for attempt in range(10):
        caps = min(4.0, 0.5 * 2**attempt)
        delays = [retry.delay(attempt) for _ in range(200)]
        assert all(0 <= d <= caps for d in delays)
        assert max(delays) > caps * 0.9  # full jitter: the whole range is used


def test_retry_after_is_a_lower_bound_but_never_beyond_the_cap() -> None:
    retry = policy(Sleeps())
    assert retry.delay(0, retry_after=1.5) >= 1.5
    assert retry.delay(0, retry_after=60.0) == 4.0


def test_the_seam_sees_every_delay_and_the_same_seed_gives_the_same_delays() -> None:
    def run_once() -> list[float]:
        sleeps = Sleeps()
        provider = RetryingProvider(
            flaky(TransientError("busy"), TransientError("busy")),
            backoff_base_s=0.5,
            rng=random.Random(3),
            sleep=sleeps,
        )
        assert anyio.run(provider.complete, []).text == "ok"
        return sleeps.delays

    first = run_once()
    assert len(first) == 2 and 0 <= first[0] <= 0.5 and 0 <= first[1] <= 1.0
    assert run_once() == first


def test_transient_errors_run_out_after_max_retries() -> None:
    sleeps = Sleeps()
    inner = flaky(*[TransientError("busy")] * 5)
    provider = RetryingProvider(inner, max_retries=2, sleep=sleeps)
    with pytest.raises(TransientError):
        anyio.run(provider.complete, [])
    assert inner.calls == 3 and len(sleeps.delays) == 2


def test_other_errors_pass_through_without_a_retry() -> None:
    sleeps = Sleeps()
    inner = flaky(ProviderError("bad request"))
    with pytest.raises(ProviderError, match="bad request"):
        anyio.run(RetryingProvider(inner, sleep=sleeps).complete, [])
    assert inner.calls == 1 and sleeps.delays == []


def test_a_converted_error_is_raised_without_the_original_chained() -> None:
    async def attempt(number: int) -> str:
        raise RuntimeError("raw error holding sk-secret")

    def on_failure(exc: Exception, number: int) -> FailureOutcome:
        return ProviderError("the call failed") if number == 1 else 0.25

    sleeps = Sleeps()
    with pytest.raises(ProviderError) as info:
        anyio.run(policy(sleeps).run, attempt, on_failure)
    assert info.value.__context__ is None and info.value.__cause__ is None
    assert sleeps.delays == [0.25]


def test_asking_for_a_retry_after_the_last_attempt_is_a_bug() -> None:
    async def attempt(number: int) -> str:
        raise RuntimeError("down")

    with pytest.raises(AssertionError, match="after the last attempt"):
        anyio.run(policy(Sleeps(), max_retries=1).run, attempt, lambda exc, n: 0.0)
