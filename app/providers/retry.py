"""Bounded retries with exponential backoff and full jitter: the one retry loop of the providers.

`RetryPolicy.run` is used by `RetryingProvider` (the simulated models, whose transient faults
are `TransientError`s) and by `LiteLLMProvider` (real models, whose caller classifies litellm's
errors and records each call's retries in `llm_calls`). The wait goes through an injectable
`sleep`, so tests run instantly and can assert every delay.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio

from app.providers.errors import TransientError
from core.protocols import LLMProvider, Message
from core.types import LLMResponse

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]
# What to do after a failed attempt: wait this many seconds and try again, or raise this error.
FailureOutcome = float | BaseException


@dataclass
class RetryPolicy:
    """How many times to retry and how long to wait in between."""

    max_retries: int = 4
    backoff_base_s: float = 0.05
    backoff_max_s: float = 2.0
    sleep: Sleep = anyio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def is_last(self, attempt: int) -> bool:
        """Attempt numbers start at 0; the last one is `max_retries`."""
        return attempt >= self.max_retries

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Full jitter under an exponential cap; a server's Retry-After is a lower bound, and no
        wait exceeds `backoff_max_s` (a server asking for minutes gets the cap)."""
        cap = min(self.backoff_max_s, self.backoff_base_s * 2**attempt)
        delay = self.rng.uniform(0, cap)
        if retry_after:
            delay = max(delay, retry_after)
        return min(delay, self.backoff_max_s)

    async def run(
        self,
        attempt: Callable[[int], Awaitable[T]],
        on_failure: Callable[[Exception, int], FailureOutcome],
    ) -> T:
        """`attempt(0)`, `attempt(1)`, ... until one returns.

        After a failed attempt `on_failure(error, attempt)` decides: a delay (sleep, then the next
        attempt) or the exception to raise. It is raised outside the `except` block, so an error
        converted from a raw one carries no chained original (which could hold secrets).
        """
        for number in range(self.max_retries + 1):
            try:
                return await attempt(number)
            except Exception as exc:
                outcome = on_failure(exc, number)
            if isinstance(outcome, BaseException):
                raise outcome
            if self.is_last(number):
                raise AssertionError("on_failure asked for a retry after the last attempt")
            await self.sleep(outcome)
        raise AssertionError("unreachable")  # the last attempt returns or raises


class RetryingProvider:
    """Retries an inner provider's `TransientError`s; any other error passes through at once."""

    def __init__(
        self,
        inner: LLMProvider,
        *,
        max_retries: int = 4,
        backoff_base_s: float = 0.05,
        backoff_max_s: float = 2.0,
        rng: random.Random | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.inner = inner
        self.policy = RetryPolicy(
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
            sleep=sleep,
            rng=rng or random.Random(0),
        )

    async def complete(self, messages: list[Message], **kwargs: Any) -> LLMResponse:
        async def attempt(number: int) -> LLMResponse:
            response: LLMResponse = await self.inner.complete(messages, **kwargs)
            return response

        return await self.policy.run(attempt, self._on_failure)

    def _on_failure(self, exc: Exception, attempt: int) -> FailureOutcome:
        if not isinstance(exc, TransientError) or self.policy.is_last(attempt):
            return exc
        return self.policy.delay(attempt)
