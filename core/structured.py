"""Structured replies from models that may or may not honour a response format.

A `FormatLadder` holds, per model, the strongest response format that model is believed to
accept, from strongest to weakest:

- `json_schema`: OpenAI's `{"type": "json_schema", "json_schema": {...}}`;
- `json_object_schema`: `{"type": "json_object", "schema": {...}}` (llama-cpp-python's own form:
  JSON mode constrained by a grammar built from the schema);
- `json_object`: plain JSON mode;
- `prompt`: no response format; the prompt alone asks for JSON.

`structured_complete` asks at the ladder's level. A server that rejects the format (an error
that mentions it) moves the ladder one level down and the same request is retried at once. A
reply that does not parse gets one repair request that shows the model its reply and the
parse error. Every request is returned as an `Attempt` so the caller can record it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from core.errors import BudgetExceeded
from core.protocols import LLMProvider

LEVELS = ("json_schema", "json_object_schema", "json_object", "prompt")
REPLY_KEEP_CHARS = 2000
# A rejected format shows up as an error naming the parameter or one of its values.
_FORMAT_ERROR = re.compile(
    r"response_format|json_schema|json_object|response format", re.IGNORECASE
)

REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}.\n"
    "Reply again with exactly one JSON object that follows the requested format, and nothing "
    "else: no prose, no code fences, no code."
)


class AttemptStatus(StrEnum):
    """How one request of a structured call ended (stored in reply_attempts.status)."""

    OK = "ok"
    SALVAGED = "salvaged"  # parsed from a reply cut off or wrapped in other text
    PARSE_FAILED = "parse_failed"
    FORMAT_REJECTED = "format_rejected"  # the provider refused the response format
    PROVIDER_ERROR = "provider_error"


@dataclass(frozen=True)
class Attempt:
    """One request of a structured call, as recorded in the log."""

    attempt: int  # 1 = first request, 2 = repair request
    response_format: str  # a LEVELS name
    status: AttemptStatus
    error: str = ""
    reply: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StructuredResult:
    value: Any
    attempts: list[Attempt]
    text: str = ""  # the last reply's text

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def error(self) -> str:
        for a in reversed(self.attempts):
            if a.error:
                return a.error
        return ""

    @property
    def salvaged(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].status == AttemptStatus.SALVAGED

    @property
    def response_format(self) -> str:
        return self.attempts[-1].response_format if self.attempts else "prompt"


class FormatLadder:
    """The response-format level in use for one model; `on_change(model, level, reason)` is
    called when a server rejects a level, so the caller can persist and record it."""

    def __init__(
        self,
        model: str,
        level: str = "prompt",
        on_change: Callable[[str, str, str], None] | None = None,
    ) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown response format level {level!r} (known: {LEVELS})")
        self.model = model
        self._level = level
        self._on_change = on_change
        self._lock = threading.Lock()

    @property
    def level(self) -> str:
        return self._level

    def downgrade(self, rejected: str, reason: str) -> str:
        """Move one level below `rejected` (a no-op if another request already did)."""
        with self._lock:
            if LEVELS.index(self._level) > LEVELS.index(rejected):
                return self._level
            self._level = LEVELS[min(LEVELS.index(rejected) + 1, len(LEVELS) - 1)]
            level = self._level
        if self._on_change is not None:
            self._on_change(self.model, level, reason)
        return level


def response_format_for(
    level: str, schema: dict[str, Any] | None, name: str = "reply"
) -> dict[str, Any] | None:
    """The `response_format` request parameter for a level (None: send none)."""
    if level == "prompt":
        return None
    if level == "json_object" or schema is None:
        return {"type": "json_object"}
    if level == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def is_format_rejection(exc: BaseException) -> bool:
    """An error from the server that names the response format it was sent."""
    return _FORMAT_ERROR.search(str(exc)) is not None


async def structured_complete(
    provider: LLMProvider,
    messages: list[dict[str, Any]],
    *,
    parse: Callable[[str], tuple[Any, str]],
    schema: dict[str, Any] | None = None,
    ladder: FormatLadder | None = None,
    role: str = "evolver",
    max_tokens: int | None = None,
    repair: bool = True,
    name: str = "reply",
) -> StructuredResult:
    """Ask for a structured reply; `parse(text)` returns (value, "") or (None, error), or
    (value, note) for a value recovered from a damaged reply (recorded as `salvaged`).

    Provider errors other than a rejected format propagate (with the attempts so far on the
    exception as `.attempts`), so callers keep their own error handling.
    """
    attempts: list[Attempt] = []
    text = ""
    for number in (1, 2) if repair else (1,):
        while True:
            level = ladder.level if ladder is not None else "prompt"
            kwargs: dict[str, Any] = {"role": role}
            fmt = response_format_for(level, schema, name)
            if fmt is not None:
                kwargs["response_format"] = fmt
            if max_tokens is not None:
                kwargs["max_tokens"] = max_tokens
            try:
                reply = await provider.complete(messages, **kwargs)
            except Exception as exc:
                if (
                    ladder is not None
                    and level != "prompt"
                    and is_format_rejection(exc)
                    and not isinstance(exc, BudgetExceeded)
                ):
                    attempts.append(
                        Attempt(number, level, AttemptStatus.FORMAT_REJECTED, _short(exc))
                    )
                    ladder.downgrade(level, _short(exc))
                    continue
                attempts.append(Attempt(number, level, AttemptStatus.PROVIDER_ERROR, _short(exc)))
                exc.attempts = attempts  # type: ignore[attr-defined]
                raise
            break
        text = reply.text or ""
        try:
            value, error = parse(text)
        except Exception as exc:  # a parser bug must not take the run down
            value, error = None, f"parser error: {type(exc).__name__}"
        if value is not None:
            status = AttemptStatus.SALVAGED if error else AttemptStatus.OK
            attempts.append(Attempt(number, level, status, error or "", text[:REPLY_KEEP_CHARS]))
            return StructuredResult(value, attempts, text)
        error = error or "reply did not parse"
        attempts.append(
            Attempt(number, level, AttemptStatus.PARSE_FAILED, error, text[:REPLY_KEEP_CHARS])
        )
        messages = [
            *messages,
            {"role": "assistant", "content": text[:REPLY_KEEP_CHARS]},
            {"role": "user", "content": REPAIR_PROMPT.format(error=error)},
        ]
    return StructuredResult(None, attempts, text)


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
