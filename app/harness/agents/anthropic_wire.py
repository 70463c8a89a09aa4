"""The gateway's Anthropic Messages wire format (`POST /v1/messages`), for Claude Code-style
clients: the request is translated to the same messages and tools a chat-completions request
becomes (app/harness/agents/wire.py), so the forwarding, the record and the rebuilt
trajectory are the same; the reply goes back as a `message` or as Anthropic's SSE events.

What the provider interface has no place for (core/protocols.py) is accepted and not
forwarded: `stop_sequences`, `top_p`, `top_k`, `metadata`, `thinking`, `output_config.effort`,
and `tool_choice` `any` or `tool` (the model still chooses; `none` offers no tools).
`output_config.format` (structured output) is forwarded as `response_format`. Server tools (a `type`
other than `custom`, such as web search) are not offered to the model; `thinking` blocks an
agent sends back are dropped. Image and document blocks are refused: only text is forwarded.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field

from app.harness.agents.wire import (
    MAX_MESSAGES,
    MAX_OUTPUT_TOKENS,
    MAX_TOOL_CALLS,
    MAX_TOOLS,
    STREAM_PIECE_CHARS,
    Dialect,
    GatewayRequest,
    ReplyMeta,
    validated,
)
from app.openai_http import ChatRequestError, bearer, load_json_body
from core.protocols import Message
from core.types import LLMResponse, ToolCall, ToolSpec

MAX_BLOCKS = 4 * MAX_TOOL_CALLS  # content blocks in one message
MAX_STOP_SEQUENCES = 16
_DROPPED_BLOCKS = ("thinking", "redacted_thinking")


class _TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")  # cache_control, citations
    type: str = Field(max_length=64)
    text: str | None = None


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=64)
    text: str | None = None
    id: str | None = Field(default=None, max_length=256)  # tool_use
    name: str | None = Field(default=None, max_length=128)
    input: dict[str, Any] | None = None
    tool_use_id: str | None = Field(default=None, max_length=256)  # tool_result
    content: str | list[_TextPart] | None = Field(default=None, union_mode="left_to_right")
    is_error: bool = False


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["user", "assistant"]
    content: str | list[_Block] = Field(union_mode="left_to_right")


class _Tool(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str | None = Field(default=None, max_length=64)
    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=16_000)
    input_schema: dict[str, Any] | None = None


class _ToolChoice(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["auto", "any", "tool", "none"]


class _Format(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class _OutputConfig(BaseModel):
    model_config = ConfigDict(extra="allow")  # effort
    format: _Format | None = None


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=256)
    max_tokens: int = Field(ge=1)
    system: str | list[_TextPart] | None = Field(default=None, union_mode="left_to_right")
    messages: list[_Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    tools: list[_Tool] | None = Field(default=None, max_length=MAX_TOOLS)
    tool_choice: _ToolChoice | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    stop_sequences: list[str] | None = Field(default=None, max_length=MAX_STOP_SEQUENCES)
    output_config: _OutputConfig | None = None
    stream: bool = False


def parse_messages_request(body: bytes, max_bytes: int) -> GatewayRequest:
    """A Messages API request as the provider layer's messages and tools: the system prompt
    first, each `tool_result` block a `tool` message, each `tool_use` block a tool call of its
    assistant message (its input as JSON text, as OpenAI clients send it back)."""
    request = validated(_Request, load_json_body(body, max_bytes))
    messages: list[Message] = []
    system = _joined(request.system, "system")
    if system:
        messages.append({"role": "system", "content": system})
    for index, message in enumerate(request.messages):
        where = f"messages.{index}.content"
        if isinstance(message.content, str):
            messages.append({"role": message.role, "content": message.content})
        elif len(message.content) > MAX_BLOCKS:
            raise ChatRequestError(f"{where}: more than {MAX_BLOCKS} blocks", param=where)
        elif message.role == "user":
            messages += _user_turn(message.content, where)
        else:
            messages.append(_assistant_turn(message.content, where))
    choice = request.tool_choice.type if request.tool_choice else "auto"
    tools = [
        ToolSpec(t.name, t.description, _schema(t, i))
        for i, t in enumerate(request.tools or [])
        if t.type in (None, "custom")
    ]
    return GatewayRequest(
        model=request.model,
        messages=messages,
        tools=[] if choice == "none" else tools,
        temperature=request.temperature if request.temperature is not None else 0.0,
        max_tokens=min(request.max_tokens, MAX_OUTPUT_TOKENS),
        seed=0,
        stream=request.stream,
        include_usage=True,
        response_format=_response_format(request.output_config),
    )


def _response_format(config: _OutputConfig | None) -> dict[str, Any] | None:
    """Structured output (`output_config.format`) as the chat-completions `response_format`
    the provider takes."""
    if config is None or config.format is None:
        return None
    schema = {"name": "output", "schema": config.format.schema_, "strict": True}
    return {"type": "json_schema", "json_schema": schema}


def _schema(tool: _Tool, index: int) -> dict[str, Any]:
    if tool.input_schema is None:
        where = f"tools.{index}.input_schema"
        raise ChatRequestError(f"{where}: Field required", param=where)
    return tool.input_schema


def _user_turn(blocks: list[_Block], where: str) -> list[Message]:
    """Tool results as `tool` messages, the text between them as user messages, in order."""
    out: list[Message] = []
    text: list[str] = []
    for j, block in enumerate(blocks):
        if block.type == "text":
            text.append(_text(block, f"{where}.{j}"))
        elif block.type == "tool_result":
            if text:
                out.append({"role": "user", "content": "\n".join(text)})
                text = []
            result = _joined(block.content, f"{where}.{j}.content")
            out.append(
                {
                    "role": "tool",
                    "content": f"Error: {result}" if block.is_error else result,
                    "tool_call_id": _required(block.tool_use_id, f"{where}.{j}.tool_use_id"),
                }
            )
        else:
            _refuse_block(block, f"{where}.{j}", "text and tool_result")
    if text or not out:
        out.append({"role": "user", "content": "\n".join(text)})
    return out


def _assistant_turn(blocks: list[_Block], where: str) -> Message:
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        if block.type == "text":
            text.append(_text(block, f"{where}.{j}"))
        elif block.type == "tool_use":
            if len(calls) == MAX_TOOL_CALLS:
                raise ChatRequestError(
                    f"{where}: more than {MAX_TOOL_CALLS} tool_use blocks", param=where
                )
            arguments = json.dumps(block.input or {}, ensure_ascii=False)
            function = {"name": _required(block.name, f"{where}.{j}.name"), "arguments": arguments}
            call_id = _required(block.id, f"{where}.{j}.id")
            calls.append({"id": call_id, "type": "function", "function": function})
        elif block.type not in _DROPPED_BLOCKS:
            _refuse_block(block, f"{where}.{j}", "text and tool_use")
    out: Message = {"role": "assistant", "content": "\n".join(text)}
    if calls:
        out["tool_calls"] = calls
        if not out["content"]:
            out["content"] = None  # as the chat-completions route records a tools-only turn
    return out


def _text(block: _Block, where: str) -> str:
    return _required(block.text, f"{where}.text")


def _required(value: str | None, where: str) -> str:
    if value is None:
        raise ChatRequestError(f"{where}: Field required", param=where)
    return value


def _refuse_block(block: _Block, where: str, allowed: str) -> None:
    raise ChatRequestError(
        f"{where}: only {allowed} blocks are forwarded here (got {block.type[:40]!r})",
        param=where,
    )


def _joined(content: str | list[_TextPart] | None, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for j, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise ChatRequestError(
                f"{where}.{j}: only text blocks are forwarded (got {part.type[:40]!r})",
                param=f"{where}.{j}",
            )
        parts.append(part.text)
    return "\n".join(parts)


# ---------------------------------------------------------------------- the reply


def stop_reason(reply: LLMResponse) -> str:
    if reply.tool_calls:
        return "tool_use"
    return "max_tokens" if reply.defect == "truncated" else "end_turn"


def content_blocks(reply: LLMResponse) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c)}
        for c in reply.tool_calls
    ]
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:  # arguments the provider could not parse: an object still, as the API promises
        parsed = json.loads(call.arguments)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_unparsed_arguments": call.arguments}


def _usage(reply: LLMResponse) -> dict[str, int]:
    return {"input_tokens": reply.usage.tokens_in, "output_tokens": reply.usage.tokens_out}


def message_body(reply: LLMResponse, meta: ReplyMeta) -> dict[str, Any]:
    return {
        "id": meta.completion_id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content_blocks(reply),
        "stop_reason": stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def message_events(reply: LLMResponse, meta: ReplyMeta, request: GatewayRequest) -> list[str]:
    """The reply as Anthropic's stream: `message_start`, per content block its start, its
    deltas (text in pieces, a tool's input as JSON text in pieces) and its stop, then
    `message_delta` with the stop reason and usage, and `message_stop`."""
    head = {
        **message_body(reply, meta),
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": reply.usage.tokens_in, "output_tokens": 0},
    }
    events = [_event("message_start", {"message": head})]
    for index, block in enumerate(content_blocks(reply)):
        start: dict[str, Any]
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, "text_delta"
            field, whole = "text", block["text"]
        else:
            start, delta = {**block, "input": {}}, "input_json_delta"
            field, whole = "partial_json", json.dumps(block["input"], ensure_ascii=False)
        events.append(_event("content_block_start", {"index": index, "content_block": start}))
        events += [
            _event(
                "content_block_delta",
                {
                    "index": index,
                    "delta": {"type": delta, field: whole[i : i + STREAM_PIECE_CHARS]},
                },
            )
            for i in range(0, len(whole), STREAM_PIECE_CHARS)
        ]
        events.append(_event("content_block_stop", {"index": index}))
    events.append(
        _event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason(reply), "stop_sequence": None},
                "usage": _usage(reply),
            },
        )
    )
    events.append(_event("message_stop", {}))
    return events


def _event(name: str, body: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **body}, ensure_ascii=False)}\n\n"


# ---------------------------------------------------------------------- keys and errors

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
}


def anthropic_error(status: int, message: str, code: str, param: str | None) -> dict[str, Any]:
    """Anthropic's error JSON (no field for `param`); a refusal's code (`rollout_call_cap`,
    `rollout_closed`, `rollout_time_limit`) ends its message."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    text = f"{message} ({code})" if code.startswith("rollout_") else message
    return {"type": "error", "error": {"type": kind, "message": text}}


def api_key(request: Request) -> str:
    """The key of `x-api-key` (the Anthropic SDK, Claude Code) or `Authorization: Bearer`."""
    return request.headers.get("x-api-key", "").strip() or bearer(request)


ANTHROPIC = Dialect(
    name="anthropic",
    id_prefix="msg_",
    key_hint="x-api-key: <the key open_rollout issued>",
    key=api_key,
    parse=parse_messages_request,
    error=anthropic_error,
    body=message_body,
    events=message_events,
)
