"""Record formats other than spans: Langfuse traces, LangSmith runs and feedback, Inspect AI
samples, chat-json conversations.

Field names checked against: Langfuse's public API (`TraceWithFullDetails`: `observations` with
`type` GENERATION/SPAN/EVENT/TOOL..., `parentObservationId`, `level`, `statusMessage`, `model`,
`usage`/`usageDetails`, `calculatedTotalCost`/`costDetails`; `scores` with `value`, `dataType`,
`stringValue`; the list endpoint's `TraceWithDetails` whose `observations` are ids only),
langchain-ai/langsmith-sdk schemas (`Run`: `run_type`, `inputs`, `outputs`, `parent_run_id`,
`trace_id`, `error`, `extra.metadata`, `prompt_tokens`, `completion_tokens`, `total_cost`;
`Feedback`: `run_id`, `key`, `score`, `value`, `comment`, `correction`), and the installed
inspect_ai package (`EvalSample`: `id`, `epoch`, `input`, `target`, `messages`, `output`,
`scores`, `error`, `total_time`; `ChatMessageTool.error`; `ToolCall.function/arguments`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from app.harness.ingest.messages import (
    args_text,
    chat_message,
    io_text,
    parts_text,
    role_of,
)
from app.harness.ingest.spans import count, finite, iso_seconds
from core.traces import (
    Feedback,
    FeedbackKind,
    Role,
    Source,
    StepKind,
    Trace,
    TraceBuilder,
    as_text,
    iso_from_ns,
    normalise_score,
)


class RecordError(ValueError):
    """A record that cannot be read; the caller adds file:line."""


# -- chat-json ----------------------------------------------------------------------------------
def chat_trace(record: dict[str, Any], line: int) -> Trace:
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise RecordError("'messages' must be a list of {role, content} objects")
    b = TraceBuilder()
    for m in messages:
        if not isinstance(m, dict):
            raise RecordError("every message must be an object with 'role' and 'content'")
        chat_message(b, m)
    native = record.get("id") or record.get("conversation_id") or f"line-{line}"
    return Trace(
        source=Source.CHAT_JSON,
        native_id=str(native),
        steps=tuple(b.steps),
        session_id=str(record.get("conversation_id") or record.get("session_id") or ""),
        model=str(record.get("model") or ""),
    )


# -- Langfuse -----------------------------------------------------------------------------------
def langfuse_trace(record: dict[str, Any]) -> Trace:
    observations = record.get("observations")
    if isinstance(observations, list) and any(isinstance(o, str) for o in observations):
        raise RecordError(
            "a Langfuse list page holds only observation ids; export each trace with its "
            "observations (GET /api/public/traces/<id>)"
        )
    b = TraceBuilder(merge=True)
    b.message(Role.USER, _task_text(record.get("input")))
    obs = sorted(
        (o for o in observations or [] if isinstance(o, dict)),
        key=lambda o: (str(o.get("startTime") or ""), str(o.get("id") or "")),
    )
    model, tokens_in, tokens_out, cost, error = "", 0, 0, 0.0, False
    for o in obs:
        kind = str(o.get("type") or "").upper()
        failed = str(o.get("level") or "").upper() == "ERROR"
        if kind == "GENERATION":
            model = model or str(o.get("model") or "")
            tokens_in, tokens_out = _langfuse_usage(o, tokens_in, tokens_out)
            cost += _num(o.get("calculatedTotalCost") or (o.get("costDetails") or {}).get("total"))
            _messages_in(b, o.get("input"))
            _message_out(b, o.get("output"))
            error = error or failed
        elif kind == "TOOL":
            name = str(o.get("name") or "tool")
            text = io_text(o.get("output")) or str(o.get("statusMessage") or "")
            _tool_run(b, name, args_text(o.get("input")), str(o.get("id") or ""), text, failed)
        elif failed:
            error = True
    b.message(Role.ASSISTANT, _answer_text(record.get("output")))
    latency = _num(record.get("latency"))
    return Trace(
        source=Source.LANGFUSE,
        native_id=str(record.get("id") or ""),
        steps=b.system_first(),
        session_id=str(record.get("sessionId") or ""),
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round(cost or _num(record.get("totalCost")), 8),
        latency_s=latency,
        error=error,
        feedback=tuple(_langfuse_scores(record.get("scores"))),
        started_at=iso_from_ns(int(iso_seconds(record.get("timestamp")) * 1e9)),
    )


def _langfuse_usage(o: dict[str, Any], tokens_in: int, tokens_out: int) -> tuple[int, int]:
    usage = o.get("usageDetails") or o.get("usage") or {}
    if not isinstance(usage, dict):
        return tokens_in, tokens_out
    got_in = usage.get("input", usage.get("promptTokens", usage.get("input_tokens")))
    got_out = usage.get("output", usage.get("completionTokens", usage.get("output_tokens")))
    return tokens_in + count(got_in), tokens_out + count(got_out)


def _langfuse_scores(scores: Any) -> Iterator[Feedback]:
    for s in scores or []:
        if not isinstance(s, dict):
            continue
        value = s.get("value")
        if str(s.get("dataType") or "").upper() == "CATEGORICAL":
            value = s.get("stringValue", value)
        yield Feedback(
            FeedbackKind.SCORE,
            str(s.get("name") or ""),
            normalise_score(value),
            str(s.get("comment") or ""),
        )


# -- LangSmith ----------------------------------------------------------------------------------
@dataclass
class LangSmithGroups:
    """Runs by trace id, and feedback by run id, until the end of the file."""

    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    run_trace: dict[str, str] = field(default_factory=dict)
    feedback: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_run(self, run: dict[str, Any]) -> None:
        run_id = str(run.get("id") or "")
        trace_id = str(run.get("trace_id") or run.get("parent_run_id") or run_id)
        if not run_id:
            raise RecordError("a LangSmith run without 'id'")
        self.run_trace[run_id] = trace_id
        self.runs.setdefault(trace_id, []).append(_slim_run(run))

    def add_feedback(self, record: dict[str, Any]) -> None:
        self.feedback.setdefault(str(record.get("run_id") or ""), []).append(record)

    def orphan_feedback(self) -> int:
        return sum(len(v) for k, v in self.feedback.items() if k not in self.run_trace)

    def traces(self) -> Iterator[Trace]:
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for run_id, records in self.feedback.items():
            trace_id = self.run_trace.get(run_id, run_id)
            by_trace.setdefault(trace_id, []).extend(records)
        for trace_id, runs in self.runs.items():
            yield langsmith_trace(trace_id, runs, by_trace.get(trace_id, []))


def _slim_run(run: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "id",
        "name",
        "run_type",
        "inputs",
        "outputs",
        "error",
        "parent_run_id",
        "start_time",
        "end_time",
        "extra",
        "prompt_tokens",
        "completion_tokens",
        "total_cost",
        "dotted_order",
    )
    return {k: run[k] for k in keep if k in run}


def langsmith_trace(
    trace_id: str, runs: list[dict[str, Any]], feedback: list[dict[str, Any]]
) -> Trace:
    runs = sorted(
        runs, key=lambda r: (str(r.get("dotted_order") or ""), str(r.get("start_time") or ""))
    )
    root = next((r for r in runs if not r.get("parent_run_id")), runs[0])
    b = TraceBuilder(merge=True)
    b.message(Role.USER, _task_text(root.get("inputs")))
    model, tokens_in, tokens_out, cost, error, session = "", 0, 0, 0.0, bool(root.get("error")), ""
    for run in runs:
        meta = (run.get("extra") or {}).get("metadata") or {}
        if isinstance(meta, dict):
            session = session or str(
                meta.get("thread_id") or meta.get("session_id") or meta.get("conversation_id") or ""
            )
            model = model or str(meta.get("ls_model_name") or "")
        kind = str(run.get("run_type") or "")
        if kind == "llm":
            tokens_in += count(run.get("prompt_tokens"))
            tokens_out += count(run.get("completion_tokens"))
            cost += _num(run.get("total_cost"))
            inputs = run.get("inputs") or {}
            _messages_in(b, inputs.get("messages") if isinstance(inputs, dict) else None)
            _langsmith_generations(b, run.get("outputs"))
            error = error or bool(run.get("error"))
        elif kind == "tool":
            name = str(run.get("name") or "tool")
            inputs = run.get("inputs") or {}
            args = inputs.get("input", inputs) if isinstance(inputs, dict) else inputs
            outputs = run.get("outputs") or {}
            out = outputs.get("output", outputs) if isinstance(outputs, dict) else outputs
            text = io_text(_lc_content(out)) if out else str(run.get("error") or "")
            failed = bool(run.get("error"))
            _tool_run(b, name, args_text(args), str(run.get("id") or ""), text, failed)
    b.message(Role.ASSISTANT, _answer_text(root.get("outputs")))
    start, end = iso_seconds(root.get("start_time")), iso_seconds(root.get("end_time"))
    return Trace(
        source=Source.LANGSMITH,
        native_id=trace_id,
        steps=b.system_first(),
        session_id=session,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round(cost, 8),
        latency_s=round(end - start, 6) if start and end >= start else 0.0,
        error=error,
        feedback=tuple(_langsmith_feedback(feedback)),
        started_at=iso_from_ns(int(start * 1e9)),
    )


def _langsmith_generations(b: TraceBuilder, outputs: Any) -> None:
    if not isinstance(outputs, dict):
        return
    for batch in outputs.get("generations") or []:
        for gen in batch if isinstance(batch, list) else [batch]:
            if not isinstance(gen, dict):
                continue
            message = gen.get("message")
            if isinstance(message, dict):
                chat_message(b, _lc_message(message), Role.ASSISTANT)
            else:
                b.message(Role.ASSISTANT, as_text(gen.get("text")))


def _langsmith_feedback(records: list[dict[str, Any]]) -> Iterator[Feedback]:
    for f in records:
        key = str(f.get("key") or "")
        correction = f.get("correction")
        if correction:
            text = (
                correction.get("output", correction) if isinstance(correction, dict) else correction
            )
            yield Feedback(FeedbackKind.EDITED, key, None, io_text(text))
            continue
        value = f.get("score", f.get("value"))
        yield Feedback(FeedbackKind.SCORE, key, normalise_score(value), str(f.get("comment") or ""))


def _lc_message(m: dict[str, Any]) -> dict[str, Any]:
    """A serialised LangChain message ({lc, type: constructor, id: [..., "AIMessage"], kwargs})
    as a plain {role, content, tool_calls}."""
    if "kwargs" in m and isinstance(m["kwargs"], dict):
        kwargs = dict(m["kwargs"])
        ident = m.get("id") or []
        name = str(ident[-1]) if isinstance(ident, list) and ident else ""
        role = {
            "AIMessage": "assistant",
            "HumanMessage": "user",
            "SystemMessage": "system",
            "ToolMessage": "tool",
        }
        kwargs.setdefault("role", role.get(name.replace("Chunk", ""), kwargs.get("type", "user")))
        return kwargs
    return m


def _lc_content(value: Any) -> Any:
    if isinstance(value, dict) and "kwargs" in value:
        return (value.get("kwargs") or {}).get("content")
    return value


# -- Inspect AI ---------------------------------------------------------------------------------
def inspect_trace(sample: dict[str, Any], model: str = "") -> Trace:
    b = TraceBuilder()
    for m in sample.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = role_of(m.get("role"))
        content = m.get("content")
        text = parts_text(content) if isinstance(content, list) else as_text(content)
        if role == Role.TOOL:
            err = m.get("error")
            if isinstance(err, dict) and not text:
                text = str(err.get("message") or "")
            b.observation(
                text,
                str(m.get("function") or ""),
                str(m.get("tool_call_id") or ""),
                error=bool(err),
            )
            continue
        b.message(role, text)
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict):
                b.tool_call(
                    str(call.get("function") or ""),
                    args_text(call.get("arguments")),
                    str(call.get("id") or ""),
                )
    if not b.steps:
        b.message(Role.USER, _task_text(sample.get("input")))
    output = sample.get("output") or {}
    tokens_in, tokens_out = _inspect_usage(sample, output)
    target = sample.get("target")
    if isinstance(target, list):
        target = target[0] if len(target) == 1 else "\n".join(str(t) for t in target)
    feedback = [
        Feedback(
            FeedbackKind.SCORE,
            str(name),
            normalise_score((s or {}).get("value")),
            as_text((s or {}).get("explanation")),
        )
        for name, s in (sample.get("scores") or {}).items()
        if isinstance(s, dict)
    ]
    return Trace(
        source=Source.INSPECT,
        native_id=f"{sample.get('id')}#{sample.get('epoch', 1)}",
        steps=tuple(b.steps),
        model=str((output.get("model") if isinstance(output, dict) else "") or model),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        latency_s=_num(sample.get("total_time")),
        error=bool(sample.get("error")),
        feedback=tuple(feedback),
        target=as_text(target) if target else "",
        started_at=iso_from_ns(int(iso_seconds(sample.get("started_at")) * 1e9)),
    )


def _inspect_usage(sample: dict[str, Any], output: Any) -> tuple[int, int]:
    """The sample's tokens: `model_usage` sums every model call of the sample (by model);
    `output.usage` is the last call's only, read when the sample has no sums. Input counts
    the cached tokens too (Inspect's input_tokens leaves them out)."""
    by_model = sample.get("model_usage")
    usages = (
        [u for u in by_model.values() if isinstance(u, dict)] if isinstance(by_model, dict) else []
    )
    if not usages:
        last = output.get("usage") if isinstance(output, dict) else None
        usages = [last] if isinstance(last, dict) else []
    tokens_in = sum(
        count(u.get("input_tokens"))
        + count(u.get("input_tokens_cache_read"))
        + count(u.get("input_tokens_cache_write"))
        for u in usages
    )
    return tokens_in, sum(count(u.get("output_tokens")) for u in usages)


# -- shared -------------------------------------------------------------------------------------
def _tool_run(b: TraceBuilder, name: str, args: str, own_id: str, text: str, failed: bool) -> None:
    """A tool's own record (a Langfuse TOOL observation, a LangSmith tool run): it carries
    the tracer's id, not the model's call id, so it answers the model's open call of that
    tool when the model's messages hold one; only a tool the model's messages never asked
    for becomes a call of its own."""
    call_id = b.open_call_id(name, args) or own_id
    if not b.seen(StepKind.TOOL_CALL, call_id):
        b.tool_call(name, args, call_id)
    b.observation(text, name, call_id, error=failed)


def _messages_in(b: TraceBuilder, value: Any) -> None:
    """Chat messages given to a model: a list, a list of lists (LangChain batches), or a dict
    holding `messages`."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        if value is not None:
            b.message(Role.USER, io_text(value))
        return
    for m in value:
        for item in m if isinstance(m, list) else [m]:
            if isinstance(item, dict):
                chat_message(b, _lc_message(item))


def _message_out(b: TraceBuilder, value: Any) -> None:
    if isinstance(value, dict) and ("role" in value or "content" in value or "tool_calls" in value):
        chat_message(b, value, Role.ASSISTANT)
    elif isinstance(value, list):
        for m in value:
            if isinstance(m, dict):
                chat_message(b, m, Role.ASSISTANT)
    elif value is not None:
        b.message(Role.ASSISTANT, io_text(value))


_TASK_KEYS = ("input", "question", "query", "prompt", "task", "text")
_ANSWER_KEYS = ("output", "answer", "result", "response", "text", "content")


def _task_text(value: Any) -> str:
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list):
            users = [
                m
                for m in messages
                if isinstance(m, dict) and role_of(m.get("role") or m.get("type")) == Role.USER
            ]
            if users:
                content = users[0].get("content")
                return parts_text(content) if isinstance(content, list) else as_text(content)
        for key in _TASK_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and role_of(m.get("role")) == Role.USER]
        if users:
            return as_text(users[0].get("content"))
    return io_text(value)


def _answer_text(value: Any) -> str:
    if isinstance(value, dict):
        for key in _ANSWER_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
        if isinstance(value.get("output"), dict):
            return _answer_text(value["output"])
    return io_text(value) if value is not None else ""


def _num(value: Any) -> float:
    return finite(value)
