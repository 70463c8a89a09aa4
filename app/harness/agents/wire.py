"""The gateway's wire format: an agent's chat-completions request in, the provider's reply out
(JSON or server-sent events), with tools and tool calls.

Unlike `serve` (app/harness/serving/chat.py), which answers a task with its own agent, the
gateway is the agent's model: it takes the agent's whole history and tools and returns one
model turn. Requests are untrusted: the body, the counts and the strings are bounded here,
and a bad request is one `ChatRequestError` naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.openai_http import (
    SSE_DONE,
    ChatRequestError,
    bearer,
    error_body,
    load_json_body,
    sse_event,
)
from core.protocols import Message
from core.types import LLMResponse, ToolSpec

MAX_BODY_BYTES = 4_000_000  # a long agent history; the recorded copy is bounded by it too
MAX_MESSAGES = 2_000
MAX_TOOLS = 128
MAX_TOOL_CALLS = 64  # in one assistant message
MAX_OUTPUT_TOKENS = 32_768
DEFAULT_MAX_TOKENS = 1_024  # the provider layer's default (core/protocols.py)
STREAM_PIECE_CHARS = 64

_M = TypeVar("_M", bound=BaseModel)


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=16_000)
    parameters: dict[str, Any] = Field(default_factory=dict)


class _Tool(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"]
    function: _Function


class _CalledFunction(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(max_length=128)
    arguments: str = ""


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(max_length=256)
    type: str = "function"
    function: _CalledFunction


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=64)
    text: str | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_Part] | None = None
    tool_calls: list[_ToolCall] | None = Field(default=None, max_length=MAX_TOOL_CALLS)
    tool_call_id: str | None = Field(default=None, max_length=256)
    name: str | None = Field(default=None, max_length=128)


class _Request(BaseModel):
    # other OpenAI fields (tool_choice, top_p, stop, user, ...) are accepted and not forwarded:
    # the provider layer's interface has no place for them (core/protocols.py)
    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=256)
    messages: list[_Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    tools: list[_Tool] | None = Field(default=None, max_length=MAX_TOOLS)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    response_format: dict[str, Any] | None = None
    n: int = 1


@dataclass(frozen=True)
class GatewayRequest:
    """A validated request in the provider layer's terms."""

    model: str
    messages: list[Message]  # OpenAI-shaped, content as text
    tools: list[ToolSpec]
    temperature: float
    max_tokens: int
    seed: int
    stream: bool
    include_usage: bool
    response_format: dict[str, Any] | None = None


def validated(model: type[_M], data: Any) -> _M:
    """`data` as `model`, or one `ChatRequestError` naming the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ChatRequestError(f"{where[:200]}: {first['msg'][:300]}", param=where[:200]) from None


def parse_gateway_request(body: bytes, max_bytes: int = MAX_BODY_BYTES) -> GatewayRequest:
    request = validated(_Request, load_json_body(body, max_bytes))
    if request.n != 1:
        raise ChatRequestError("n: the gateway gives one reply per request", param="n")
    limit = request.max_completion_tokens or request.max_tokens or DEFAULT_MAX_TOKENS
    return GatewayRequest(
        model=request.model,
        messages=[_message(m, i) for i, m in enumerate(request.messages)],
        tools=[
            ToolSpec(t.function.name, t.function.description, t.function.parameters)
            for t in request.tools or []
        ],
        temperature=request.temperature if request.temperature is not None else 0.0,
        max_tokens=min(limit, MAX_OUTPUT_TOKENS),
        seed=request.seed or 0,
        stream=request.stream,
        include_usage=bool((request.stream_options or {}).get("include_usage")),
        response_format=request.response_format,
    )


def _message(m: _Message, index: int) -> Message:
    out: Message = {"role": m.role, "content": _text(m, index)}
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in m.tool_calls
        ]
        if not out["content"]:
            out["content"] = None  # as OpenAI sends an assistant turn that only calls tools
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    return out


def _text(m: _Message, index: int) -> str:
    if m.content is None or isinstance(m.content, str):
        return m.content or ""
    parts = []
    for part in m.content:
        if part.type != "text" or part.text is None:
            raise ChatRequestError(
                f"messages.{index}.content: only text parts are forwarded (got {part.type[:40]!r})",
                param=f"messages.{index}.content",
            )
        parts.append(part.text)
    return "\n".join(parts)


@dataclass(frozen=True)
class ReplyMeta:
    completion_id: str
    model: str
    created: int


def finish_reason(reply: LLMResponse) -> str:
    if reply.tool_calls:
        return "tool_calls"
    return "length" if reply.defect == "truncated" else "stop"


def tool_calls_json(reply: LLMResponse) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments
                if isinstance(c.arguments, str)
                else json.dumps(c.arguments, ensure_ascii=False),
            },
        }
        for c in reply.tool_calls
    ]


def usage_json(reply: LLMResponse) -> dict[str, int]:
    tokens_in, tokens_out = reply.usage.tokens_in, reply.usage.tokens_out
    return {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }


def completion_body(reply: LLMResponse, meta: ReplyMeta) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = tool_calls_json(reply)
    elif message["content"] is None:
        message["content"] = ""
    return {
        "id": meta.completion_id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(reply),
                "logprobs": None,
            }
        ],
        "usage": usage_json(reply),
    }


def completion_chunks(reply: LLMResponse, meta: ReplyMeta, include_usage: bool) -> list[str]:
    """The reply as `chat.completion.chunk` events: the role, the text in pieces, each tool
    call whole (id, name and arguments in one delta, which OpenAI clients accumulate like
    pieces), the finish reason, the usage when asked for, then `[DONE]`."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return sse_event({**_chunk_head(meta), "choices": [choice]})

    text = reply.text
    events = [chunk({"role": "assistant", "content": ""})]
    events += [
        chunk({"content": text[i : i + STREAM_PIECE_CHARS]})
        for i in range(0, len(text), STREAM_PIECE_CHARS)
    ]
    events += [
        chunk({"tool_calls": [{"index": i, **call}]})
        for i, call in enumerate(tool_calls_json(reply))
    ]
    events.append(chunk({}, finish_reason(reply)))
    if include_usage:
        events.append(sse_event({**_chunk_head(meta), "choices": [], "usage": usage_json(reply)}))
    events.append(SSE_DONE)
    return events


def _chunk_head(meta: ReplyMeta) -> dict[str, Any]:
    return {
        "id": meta.completion_id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
    }


@dataclass(frozen=True)
class Dialect:
    """One wire format the gateway speaks: where the key is, the request in, the reply and the
    error JSON out. Every dialect shares the gateway's one forwarding path (its refusals,
    bounds, call cap, time limit and recording)."""

    name: str
    id_prefix: str  # of a reply's id
    key_hint: str  # how to send the key, for the 401 message
    key: Callable[[Request], str]
    parse: Callable[[bytes, int], GatewayRequest]
    # (HTTP status, message, OpenAI-style code, the field) -> the error body
    error: Callable[[int, str, str, str | None], dict[str, Any]]
    body: Callable[[LLMResponse, ReplyMeta], dict[str, Any]]
    events: Callable[[LLMResponse, ReplyMeta, GatewayRequest], list[str]]


_OPENAI_KINDS = {401: "authentication_error", 402: "insufficient_quota", 403: "permission_error"}


def openai_error(status: int, message: str, code: str, param: str | None) -> dict[str, Any]:
    kind = _OPENAI_KINDS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return error_body(message, code=code, param=param, kind=kind)


OPENAI = Dialect(
    name="openai",
    id_prefix="chatcmpl-",
    key_hint="Authorization: Bearer <the key open_rollout issued>",
    key=bearer,
    parse=parse_gateway_request,
    error=openai_error,
    body=completion_body,
    events=lambda reply, meta, request: completion_chunks(reply, meta, request.include_usage),
)
