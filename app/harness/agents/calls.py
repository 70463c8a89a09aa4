"""What the gateway records per model call, and the trajectory and usage rebuilt from it.

A call's request history is stored as the messages it adds to the previous call's
(`prefix_len` + `new_messages`): an agent re-sends its whole history with every call, and
keeping each copy would grow a rollout's record with the square of its length.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.harness.agents.protocol import AgentUsage
from app.harness.ingest.spans import Span, tool_span
from core.protocols import Message
from core.traces import Role, Source, Trace, TraceBuilder, as_text
from core.types import ToolCall


class CallStatus(StrEnum):
    OK = "ok"
    PENDING = "pending"  # still waiting for the provider (a rollout closed while it was)
    REFUSED_CAP = "refused:call_cap"  # past the rollout's call cap
    REFUSED_TIME = "refused:time_limit"  # after the rollout's time limit
    REFUSED_CLOSED = "refused:closed"  # after close_rollout
    BUDGET = "refused:budget"  # the run's spend cap (BudgetExceeded)
    TIMEOUT = "timeout"  # the provider outlived the rollout's time limit
    ERROR = "error"  # the provider failed (after its own retries)

    @property
    def refused(self) -> bool:
        return self in (CallStatus.REFUSED_CAP, CallStatus.REFUSED_TIME, CallStatus.REFUSED_CLOSED)


@dataclass(frozen=True)
class RecordedCall:
    """One request a rollout's key sent, and what came of it."""

    index: int  # 0-based, in arrival order within the rollout
    status: CallStatus
    prefix_len: int = 0  # leading messages equal to the previous recorded request's
    new_messages: tuple[Message, ...] = ()
    tools: tuple[str, ...] = ()  # the names of the tools the request offered
    requested_model: str = ""  # what the agent asked for (the gateway answers with its own)
    stream: bool = False
    reply_text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cache_hit: bool = False
    error: str = ""  # one scrubbed line for ERROR, BUDGET and TIMEOUT
    # when the request reached the gateway (time.time(); 0: not known): where the agent's own
    # tool spans go in the trajectory (`trace_from_calls`)
    started_unix: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "status": self.status.value,
            "prefix_len": self.prefix_len,
            "new_messages": list(self.new_messages),
            "tools": list(self.tools),
            "reply_text": self.reply_text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "latency_s": round(self.latency_s, 6),
            "cache_hit": self.cache_hit,
            "error": self.error,
        }


def request_histories(calls: Sequence[RecordedCall]) -> Iterator[list[Message]]:
    """Each recorded call's full request messages, in order (refused calls carry none)."""
    previous: list[Message] = []
    for call in calls:
        if call.status.refused:
            yield []
            continue
        previous = previous[: call.prefix_len] + list(call.new_messages)
        yield previous


def usage_from_calls(calls: Sequence[RecordedCall]) -> AgentUsage:
    answered = [c for c in calls if c.status == CallStatus.OK]
    return AgentUsage(
        calls=len(answered),
        refused=sum(1 for c in calls if c.status.refused),
        tokens_in=sum(c.tokens_in for c in answered),
        tokens_out=sum(c.tokens_out for c in answered),
        cost_usd=sum(c.cost_usd for c in answered),
    )


def trace_from_calls(
    calls: Sequence[RecordedCall], native_id: str = "", tool_spans: Sequence[Span] = ()
) -> Trace:
    """The trajectory of an agent that reports nothing else: every message it sent (system,
    user, its own earlier turns with their tool calls, tool results) and every reply, each
    step once although each request re-sends the history (TraceBuilder's merge by call id
    and by count, as for span exports).

    `tool_spans`: the TOOL spans of the agent's own trace file (agent_trace.py), by start
    time. Each goes in before the first model call that reached the gateway after it started
    (the same machine's clock), ahead of that call's request messages, so the span's result,
    with its error and duration, is the one kept for its call id (the request's copy of it is
    merged away); a span that started before the first call goes after the task, before the
    first reply. A span matches the model's tool call by its recorded call id, else by tool
    name and arguments (TraceBuilder.open_call_id); one that matches none is a tool call of
    its own. Spans with no start time, or started after the last call, go at the end."""
    builder = TraceBuilder(merge=True)
    pending = list(tool_spans)

    def spans_before(started_unix: float) -> None:
        while pending and 0 < pending[0].start_ns <= started_unix * 1e9:
            _add_tool_span(builder, pending.pop(0))

    for index, (call, history) in enumerate(zip(calls, request_histories(calls), strict=True)):
        if index:
            spans_before(call.started_unix)
        builder.begin_span()
        names: dict[str, str] = {}
        for message in history:
            _add_message(builder, message, names)
        if not index:
            spans_before(call.started_unix)
        if call.status == CallStatus.OK:
            builder.message(Role.ASSISTANT, call.reply_text)
            for tc in call.tool_calls:
                builder.tool_call(tc.name, _arguments_text(tc.arguments), tc.id)
    for span in pending:
        _add_tool_span(builder, span)
    usage = usage_from_calls(calls)
    answered = [c for c in calls if c.status == CallStatus.OK]
    return Trace(
        source=Source.GATEWAY,
        native_id=native_id,
        steps=builder.system_first(),
        tokens_in=usage.tokens_in,
        tokens_out=usage.tokens_out,
        cost_usd=usage.cost_usd,
        latency_s=sum(c.latency_s for c in answered),
        error=any(c.status in (CallStatus.ERROR, CallStatus.TIMEOUT) for c in calls),
    )


def _add_tool_span(builder: TraceBuilder, span: Span) -> None:
    builder.begin_span()
    # an id of its own when it names none and matches no open model call: two runs of one
    # tool with the same arguments stay two steps
    tool_span(builder, span, timed=True, fallback_id=f"span-{span.line}-{span.span_id}")


_ROLES = {"system": Role.SYSTEM, "developer": Role.SYSTEM, "user": Role.USER}


def _add_message(builder: TraceBuilder, message: Message, names: dict[str, str]) -> None:
    role = str(message.get("role", ""))
    text = as_text(message.get("content") or "")
    if role in _ROLES:
        builder.message(_ROLES[role], text)
    elif role == "assistant":
        builder.message(Role.ASSISTANT, text)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            names[str(call.get("id", ""))] = str(function.get("name", ""))
            builder.tool_call(
                str(function.get("name", "")),
                str(function.get("arguments", "")),
                str(call.get("id", "")),
            )
    elif role == "tool":
        call_id = str(message.get("tool_call_id") or "")
        builder.observation(text, names.get(call_id, ""), call_id)


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
