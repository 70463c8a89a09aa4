"""Bounded retries with exponential backoff and full jitter for providers without their own."""

from __future__ import annotations

import random

import anyio

from app.providers.errors import TransientError
from core.types import LLMResponse


class RetryingProvider:
    def __init__(
        self,
        inner,
        *,
        max_retries: int = 4,
        backoff_base_s: float = 0.05,
        backoff_max_s: float = 2.0,
        rng: random.Random | None = None,
    ) -> None:
        self.inner = inner
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._rng = rng or random.Random(0)

    async def complete(self, messages, **kwargs) -> LLMResponse:
        for attempt in range(self.max_retries + 1):
            try:
                return await self.inner.complete(messages, **kwargs)
            except TransientError:
                if attempt == self.max_retries:
                    raise
                cap = min(self.backoff_max_s, self.backoff_base_s * 2**attempt)
                await anyio.sleep(self._rng.uniform(0, cap))
        raise AssertionError("unreachable")
