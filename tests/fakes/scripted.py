"""`ScriptedProvider`: the one scripted `LLMProvider` every test that needs a model uses.

It plays the part inspect_ai's `mockllm` plays there: a test says what the model replies and
then reads back what the model was asked. It speaks the protocol in `core/protocols.py` and
nothing more, so it stands in for any provider the harness is handed.

What it replies, checked in this order:

- ``respond=fn``: ``fn(request)`` decides (it may be async, e.g. to forward the request to an
  inner provider with `Request.forward_to` and so wrap a real one);
- a mapping ``{key: outcomes}``: each key has its own queue; the key of a request is
  ``key(request)`` (the role by default, so ``{"judge": [...], "agent": [...]}`` scripts per
  role);
- a sequence of outcomes: served in order to every request.

A queue serves its outcomes in order and then repeats the last one. An outcome is an
`LLMResponse` (returned as it is, so tests set tool calls, `defect`, usage and cost), a `str`
(the reply text: token counts are made up from word counts unless ``usage=`` fixes them), or an
exception (raised, as a failing provider raises it: `TransientError`, `BudgetExceeded`, ...).
``delay=`` waits before each reply (``math.inf`` hangs until cancelled). Every request is kept
in `requests`, with the messages as a real API would receive them (a JSON copy, so later
changes to the caller's list do not show and a message that is not JSON fails here);
`active`/`peak` count calls in flight.

Real HTTP is `tests/fakes/openai_server.py`'s job: it tests the litellm provider itself.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from core.protocols import LLMProvider, Message
from core.types import LLMResponse, ToolCall, ToolSpec, Usage

Outcome = LLMResponse | str | BaseException
Responder = Callable[["Request"], Outcome | Awaitable[Outcome]]

# The keyword arguments of `LLMProvider.complete` and their defaults, read from the protocol so
# the fake accepts exactly what a real provider accepts.
_PARAMETERS = {
    name: p.default
    for name, p in inspect.signature(LLMProvider.complete).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
}


@dataclass(frozen=True)
class Request:
    """One call of `complete`, as the provider received it."""

    messages: list[Message]
    tools: list[ToolSpec] | None
    temperature: float
    max_tokens: int
    seed: int
    role: str
    response_format: dict[str, Any] | None
    kwargs: dict[str, Any] = field(repr=False)  # the keyword arguments exactly as passed
    key: str = ""  # the script key it was served from ("" without a keyed script)

    @property
    def prompt(self) -> str:
        """The first message's text (the system prompt, or the only user message)."""
        return str(self.messages[0].get("content") or "") if self.messages else ""

    @property
    def user(self) -> str:
        """The first user message's text."""
        return next((str(m.get("content") or "") for m in self.messages if m["role"] == "user"), "")

    def forward_to(
        self, provider: LLMProvider, messages: list[Message] | None = None
    ) -> Awaitable[LLMResponse]:
        """The same call (or with other messages) made on another provider."""
        return provider.complete(self.messages if messages is None else messages, **self.kwargs)


def reply(
    text: str = "",
    *calls: ToolCall,
    tokens: tuple[int, int] = (10, 2),
    cost: float = 0.0,
    defect: str = "",
    model: str = "scripted",
) -> LLMResponse:
    """A reply with tool calls, token counts, cost or a defect, for a script."""
    return LLMResponse(
        text=text,
        tool_calls=calls,
        usage=Usage(*tokens),
        cost_usd=cost,
        model=model,
        defect=defect,
    )


class ScriptedProvider:
    """A scripted `LLMProvider` that records every request (see the module docstring)."""

    def __init__(
        self,
        script: Sequence[Outcome] | Mapping[str, Sequence[Outcome]] = (),
        *,
        respond: Responder | None = None,
        key: Callable[[Request], str] = lambda request: request.role,
        delay: float | Callable[[Request], float] = 0.0,
        usage: Usage | None = None,
        model: str = "scripted",
    ) -> None:
        if isinstance(script, str):
            raise TypeError("script: a list of outcomes, not one string")
        if respond is None and not script:
            raise ValueError("ScriptedProvider needs a script or respond=")
        self._queues = (
            {k: list(v) for k, v in script.items()} if isinstance(script, Mapping) else None
        )
        self._queue = [] if isinstance(script, Mapping) else list(script)
        self._respond, self._key, self._delay = respond, key, delay
        self._usage, self.model = usage, model
        self.requests: list[Request] = []
        self.active = self.peak = 0

    async def complete(self, messages: list[Message], **kwargs: Any) -> LLMResponse:
        request = self._record(messages, kwargs)
        # A queue's turn is taken on arrival, so concurrent calls with a delay still get the
        # outcomes in the order they called.
        scripted = self._next_in_queue(request) if self._respond is None else None
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            delay = self._delay(request) if callable(self._delay) else self._delay
            if delay:
                await anyio.sleep(delay)
            outcome = scripted if self._respond is None else self._respond(request)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            assert outcome is not None
            return self._deliver(request, outcome)
        finally:
            self.active -= 1

    def requests_for(self, key: str) -> list[Request]:
        """The requests a keyed script served from `key`, in order."""
        return [r for r in self.requests if r.key == key]

    @property
    def calls(self) -> int:
        """How many times `complete` was called."""
        return len(self.requests)

    def _record(self, messages: list[Message], kwargs: dict[str, Any]) -> Request:
        unknown = sorted(set(kwargs) - set(_PARAMETERS))
        if unknown:
            raise TypeError(f"complete() got unexpected keyword arguments {unknown}")
        values = _PARAMETERS | kwargs
        request = Request(
            messages=json.loads(json.dumps(messages)),
            tools=values["tools"],
            temperature=values["temperature"],
            max_tokens=values["max_tokens"],
            seed=values["seed"],
            role=values["role"],
            response_format=values["response_format"],
            kwargs=dict(kwargs),
        )
        if self._respond is None and self._queues is not None:
            request = replace(request, key=self._key(request))
        self.requests.append(request)
        return request

    def _next_in_queue(self, request: Request) -> Outcome:
        if self._queues is None:
            queue, turn = self._queue, len(self.requests) - 1
        else:
            if request.key not in self._queues:
                raise KeyError(f"no script for key {request.key!r} (have {sorted(self._queues)})")
            queue, turn = self._queues[request.key], len(self.requests_for(request.key)) - 1
        return queue[min(turn, len(queue) - 1)]

    def _deliver(self, request: Request, outcome: Outcome) -> LLMResponse:
        if isinstance(outcome, BaseException):
            raise outcome
        if isinstance(outcome, LLMResponse):
            return outcome
        usage = (
            self._usage
            if self._usage is not None
            else Usage(
                sum(len(str(m.get("content") or "").split()) for m in request.messages),
                len(outcome.split()),
            )
        )
        return LLMResponse(text=outcome, usage=usage, model=self.model)


def containing(
    *keys: str, source: Callable[[Request], str] = lambda r: r.prompt
) -> Callable[[Request], str]:
    """A `key=` that picks the longest of `keys` found in the request's text (the prompt by
    default), so "q1" never shadows "q10"."""

    def pick(request: Request) -> str:
        text = source(request)
        found = [k for k in keys if k in text]
        if not found:
            raise KeyError(f"none of {sorted(keys)} in {text[:80]!r}")
        return max(found, key=len)

    return pick
