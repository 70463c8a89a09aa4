"""The seams between the pure core and the application (docs/architecture.md#layers).

`app/harness` talks to models only through `LLMProvider`; tools through `ToolDispatch`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.types import LLMResponse, Question, ToolSpec

Message = dict[str, Any]


@runtime_checkable
class LLMProvider(Protocol):
    """One model interface for every backend (litellm, sim)."""

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int = 0,
        role: str = "agent",
        response_format: dict[str, Any] | None = None,
    ) -> LLMResponse: ...


class ToolDispatch(Protocol):
    """Executes one tool call for a question; returns the text the model sees."""

    async def __call__(self, name: str, arguments: dict[str, Any], question: Question) -> str: ...


class TelemetryRecorder(Protocol):
    """Receives one record per model call (role, model, tokens, cost, latency, status)."""

    def record_call(self, row: dict[str, Any]) -> None: ...
