"""The OpenAI chat-completions wire format: requests in, responses and SSE chunks out.

Requests are untrusted: every size is bounded, and a bad request becomes one `ChatRequestError`
naming the field, which the app turns into a 4xx JSON error in OpenAI's shape
(`{"error": {"message", "type", "param", "code"}}`), so OpenAI clients and litellm raise their
usual exceptions.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# ChatRequestError: re-exported, the serving modules and their tests name it from here
from app.openai_http import ChatRequestError as ChatRequestError
from app.openai_http import load_json_body

MAX_BODY_BYTES = 1_000_000
MAX_MESSAGES = 256
MAX_TASK_CHARS = 32_000
MAX_CONTEXT_CHARS = 64_000
STREAM_PIECE_CHARS = 64  # an answer is sent in pieces of about this size when streaming


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[_Part] | None = None


class _Extra(BaseModel):
    """The request's `skill_trainer` field (OpenAI clients: `extra_body={"skill_trainer": ...}`)."""

    model_config = ConfigDict(extra="forbid")
    task_type: str | None = Field(default=None, max_length=200)
    context: str | None = Field(default=None, max_length=MAX_CONTEXT_CHARS)


class _Request(BaseModel):
    # sampling fields (temperature, max_tokens, ...) are accepted and ignored: the agent
    # answers with the workspace's settings, as it was trained
    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[_Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    n: int = 1
    tools: list[Any] | None = None
    stream_options: dict[str, Any] | None = None
    skill_trainer: _Extra | None = None


@dataclass(frozen=True)
class ChatRequest:
    """What the agent needs from a request: the task, its task type (None: not named; the
    router decides, app/harness/serving/routing.py) and its context."""

    model: str
    task: str
    task_type: str | None
    context: str
    stream: bool
    include_usage: bool


def parse_request(body: bytes) -> ChatRequest:
    data = load_json_body(body, MAX_BODY_BYTES)
    try:
        request = _Request.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ChatRequestError(f"{where}: {first['msg']}", param=where) from None
    if request.n != 1:
        raise ChatRequestError("n: the served agent gives one answer per request", param="n")
    if request.tools:
        raise ChatRequestError(
            "tools: the served agent uses its own tools; send none", param="tools"
        )
    last = request.messages[-1]
    if last.role != "user":
        raise ChatRequestError(
            f"messages: the last message must be the user's task (got role {last.role!r})",
            param="messages",
        )
    task = _text(last, len(request.messages) - 1)
    if not task.strip():
        raise ChatRequestError("messages: the last user message is empty", param="messages")
    if len(task) > MAX_TASK_CHARS:
        raise ChatRequestError(
            f"messages: the task is longer than {MAX_TASK_CHARS} characters", param="messages"
        )
    extra = request.skill_trainer or _Extra()
    context = extra.context if extra.context is not None else _history(request.messages[:-1])
    return ChatRequest(
        model=request.model,
        task=task,
        task_type=extra.task_type or None,
        context=context[:MAX_CONTEXT_CHARS],
        stream=request.stream,
        include_usage=bool((request.stream_options or {}).get("include_usage")),
    )


def _text(message: _Message, index: int) -> str:
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    parts = []
    for part in message.content:
        if part.type != "text" or part.text is None:
            raise ChatRequestError(
                f"messages.{index}.content: only text parts are understood "
                f"(got {part.type[:40]!r})",
                param=f"messages.{index}.content",
            )
        parts.append(part.text)
    return "\n".join(parts)


def _history(messages: list[_Message]) -> str:
    """Earlier turns (system messages included) as the context the agent's `read_context`
    tool returns: data to read, never instructions in its own system prompt."""
    return "\n".join(f"{m.role}: {_text(m, i)}" for i, m in enumerate(messages))


@dataclass(frozen=True)
class Completion:
    """One finished answer, in the terms both response shapes need."""

    completion_id: str
    model: str
    content: str
    finish_reason: str
    tokens_in: int
    tokens_out: int
    extra: dict[str, Any]
    created: int = 0

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.tokens_in,
            "completion_tokens": self.tokens_out,
            "total_tokens": self.tokens_in + self.tokens_out,
        }


def completion_body(c: Completion) -> dict[str, Any]:
    return {
        "id": c.completion_id,
        "object": "chat.completion",
        "created": c.created or int(time.time()),
        "model": c.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": c.content},
                "finish_reason": c.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": c.usage(),
        "skill_trainer": c.extra,
    }


def sse_chunks(c: Completion, include_usage: bool) -> list[str]:
    """The answer as `data:` events of `chat.completion.chunk` objects, then `[DONE]`: the
    role, the content in pieces, the finish reason (with the `skill_trainer` field), and the
    usage when the client asked for it (`stream_options.include_usage`)."""
    created = c.created or int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        body = {
            "id": c.completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": c.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **more,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    pieces = [
        c.content[i : i + STREAM_PIECE_CHARS] for i in range(0, len(c.content), STREAM_PIECE_CHARS)
    ]
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    events.append(chunk({}, c.finish_reason, skill_trainer=c.extra))
    if include_usage:
        events.append(
            f"data: {json.dumps({'id': c.completion_id, 'object': 'chat.completion.chunk', 'created': created, 'model': c.model, 'choices': [], 'usage': c.usage()})}\n\n"
        )
    events.append("data: [DONE]\n\n")
    return events
