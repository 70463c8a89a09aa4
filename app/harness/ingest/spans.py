"""Span formats: OTLP JSON (OTel GenAI conventions, current and deprecated names, and
OpenInference attributes on OTLP spans) and Phoenix's span export.

Field names checked against: open-telemetry/semantic-conventions docs/gen-ai (the JSON schemas
gen-ai-input-messages.json and gen-ai-system-instructions.json: parts `text`, `tool_call`,
`tool_call_response`; `gen_ai.system_instructions`;
`gen_ai.tool.call.*`; the deprecated `gen_ai.prompt`, `gen_ai.completion` and the event API's
`gen_ai.{system,user,assistant,tool}.message` / `gen_ai.choice`), the OTLP/JSON encoding of
opentelemetry-proto (`resourceSpans[].scopeSpans[].spans[]`, `{key, value: {stringValue...}}`,
`status.code` 2 = error) and Arize-ai/openinference spec/semantic_conventions.md and
spec/tool_calling.md (`openinference.span.kind`, `llm.input_messages.<i>.message.*`,
`message.tool_calls.<j>.tool_call.function.{name,arguments}`, `llm.token_count.*`,
`session.id`).
"""

from __future__ import annotations

import itertools
import math
import pickle
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from app.harness.ingest.messages import (
    args_text,
    chat_message,
    io_text,
    join_texts,
    parse_json,
    parts_text,
    role_of,
    tool_call,
)
from core.traces import (
    MAX_STEPS,
    Feedback,
    FeedbackKind,
    Role,
    Source,
    StepKind,
    Trace,
    TraceBuilder,
    as_text,
    iso_from_ns,
)

MAX_PENDING_SPANS = 50_000  # spans held for traces whose root has not arrived yet
QUIET_SPANS = 2_000  # spans of other traces after which a trace whose root came is complete
# What the first indexed entry of a list of messages or calls holds (`<prefix>.0.<leaf>`).
_FIRST_LEAVES = (
    "role",
    "content",
    "message.role",
    "message.content",
    "name",
    "id",
    "tool_call.id",
    "tool_call.function.name",
)
_INDEXED = re.compile(r"^(\d+)\.(.+)$")
# every key the usage sums of `spans_to_trace` read
_USAGE_KEYS = frozenset(
    {
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
        "llm.token_count.prompt",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
        "llm.cost.total",
        "gen_ai.usage.cost",
    }
)


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    error: bool
    line: int


class SpanSpill:
    """Spans set aside on disk, by trace id, until the end of the file: a private temporary
    SQLite database (deleted when closed). Only spans this process wrote are read back."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("")  # "": a temporary database on disk
        self._db.execute("CREATE TABLE spans (seq INTEGER PRIMARY KEY, trace TEXT, span BLOB)")

    def put(self, spans: list[Span]) -> None:
        self._db.executemany(
            "INSERT INTO spans (trace, span) VALUES (?, ?)",
            [(s.trace_id, pickle.dumps(s, pickle.HIGHEST_PROTOCOL)) for s in spans],
        )

    def groups(self) -> Iterator[list[Span]]:
        """Every trace's spans together, in the order they were read; then closed."""
        try:
            rows = self._db.execute("SELECT trace, span FROM spans ORDER BY trace, seq")
            for _, group in itertools.groupby(rows, key=lambda row: row[0]):
                yield [pickle.loads(blob) for _, blob in group]
        finally:
            self._db.close()


@dataclass
class SpanGroups:
    """Spans by trace id. A trace is complete once its root span has arrived and the spans
    after it are no longer its own: SDK exporters send a span when it ends, so the root comes
    last, but an export written in start order (Phoenix's span export, this project's own
    `export --format otlp`) puts the root first. So a trace whose root has come is handed on
    at the end of the record holding it (an OTLP batch holds whole subtrees: `end_record`),
    or once `QUIET_SPANS` spans of other traces have arrived since its last span (one span a
    record: Phoenix). The rest are flushed at the end of the file.

    Memory stays bounded when roots never come (a partial export): past `MAX_PENDING_SPANS`
    waiting spans, the trace that has waited longest is set aside on disk (`SpanSpill`),
    and so is every later span of that trace; they are read back together, one trace each,
    at the end of the file (handing them on early split traces into fragments)."""

    source: Source
    pending: dict[str, list[Span]] = field(default_factory=dict)
    rooted: dict[str, int] = field(default_factory=dict)  # trace id -> `added` at its last span
    count: int = 0
    added: int = 0
    spilled: set[str] = field(default_factory=set)  # trace ids whose spans wait on disk
    spill: SpanSpill | None = None

    def add(self, span: Span) -> list[list[Span]]:
        """The groups now complete (usually none)."""
        if span.trace_id in self.spilled:
            self._spill().put([span])
            return []
        group = self.pending.setdefault(span.trace_id, [])
        group.append(span)
        self.count += 1
        self.added += 1
        if not span.parent_id or span.trace_id in self.rooted:
            self.rooted.pop(span.trace_id, None)  # re-inserted last: dicts keep order
            self.rooted[span.trace_id] = self.added
        done: list[list[Span]] = []
        while self.rooted:
            oldest, last = next(iter(self.rooted.items()))
            if self.added - last < QUIET_SPANS:
                break
            done.append(self._pop(oldest))
        while self.count > MAX_PENDING_SPANS and self.pending:
            if self.rooted:  # a trace whose root came is complete enough to hand on
                done.append(self._pop(next(iter(self.rooted))))
                continue
            oldest = next(iter(self.pending))
            self._spill().put(self._pop(oldest))
            self.spilled.add(oldest)
        return done

    def end_record(self) -> list[list[Span]]:
        """The traces whose root came in the record just read."""
        return [self._pop(trace_id) for trace_id in list(self.rooted)]

    def rest(self) -> Iterator[list[Span]]:
        self.rooted.clear()
        while self.pending:
            _, group = self.pending.popitem()
            self.count -= len(group)
            yield group
        if self.spill is not None:
            yield from self.spill.groups()
            self.spill = None

    def _spill(self) -> SpanSpill:
        if self.spill is None:
            self.spill = SpanSpill()
        return self.spill

    def _pop(self, trace_id: str) -> list[Span]:
        self.rooted.pop(trace_id, None)
        group = self.pending.pop(trace_id)
        self.count -= len(group)
        return group


# -- OTLP JSON ----------------------------------------------------------------------------------
def otlp_value(value: Any) -> Any:
    """`{stringValue: ...}` and friends as plain values (intValue comes as a string)."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [otlp_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return otlp_attributes((value["kvlistValue"] or {}).get("values") or [])
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def otlp_attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for kv in items:
            if not isinstance(kv, dict) or not isinstance(key := kv.get("key"), str):
                continue
            value = kv.get("value")
            # most attributes are strings: read them without the general decoder's call
            if isinstance(value, dict) and "stringValue" in value:
                out[key] = value["stringValue"]
            else:
                out[key] = otlp_value(value)
    return out


def otlp_spans(record: dict[str, Any], line: int) -> Iterator[Span]:
    for resource in _list(record.get("resourceSpans")):
        scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
        for scope in _list(scopes):
            for raw in _list(scope.get("spans")):
                yield _otlp_span(raw, line)


def _otlp_span(raw: dict[str, Any], line: int) -> Span:
    status = raw.get("status") or {}
    code = status.get("code") if isinstance(status, dict) else None
    return Span(
        trace_id=str(raw.get("traceId") or ""),
        span_id=str(raw.get("spanId") or ""),
        parent_id=str(raw.get("parentSpanId") or ""),
        name=str(raw.get("name") or ""),
        start_ns=_int(raw.get("startTimeUnixNano")),
        end_ns=_int(raw.get("endTimeUnixNano")),
        attrs=otlp_attributes(raw.get("attributes")),
        events=[
            (str(e.get("name") or ""), otlp_attributes(e.get("attributes")))
            for e in _list(raw.get("events"))
        ],
        error=code in (2, "2", "STATUS_CODE_ERROR"),
        line=line,
    )


# -- Phoenix span export ------------------------------------------------------------------------
def phoenix_span(record: dict[str, Any], line: int) -> Span:
    context = record.get("context") or {}
    raw = record.get("attributes") or {}
    attrs = flatten(raw) if isinstance(raw, dict) else {}
    if record.get("span_kind") and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = str(record["span_kind"])  # top-level in the export
    return Span(
        trace_id=str(context.get("trace_id") or ""),
        span_id=str(context.get("span_id") or ""),
        parent_id=str(record.get("parent_id") or ""),
        name=str(record.get("name") or ""),
        start_ns=_iso_ns(record.get("start_time")),
        end_ns=_iso_ns(record.get("end_time")),
        attrs=attrs,
        events=[
            (str(e.get("name") or ""), flatten(e.get("attributes") or {}))
            for e in _list(record.get("events"))
        ],
        error=str(record.get("status_code") or "").upper() == "ERROR",
        line=line,
    )


def flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Phoenix nests attributes ({"llm": {"input_messages": [{"message": ...}]}}): dotted keys
    with list indices, the form OpenInference defines, so one reader handles both."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(flatten(item, name + "."))
        elif isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
            for index, sub in enumerate(item):
                out.update(flatten(sub, f"{name}.{index}."))
        else:
            out[name] = item
    return out


# -- spans -> a trace ---------------------------------------------------------------------------
def spans_to_trace(spans: list[Span], default_source: Source) -> Trace:
    spans = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    openinference = any("openinference.span.kind" in s.attrs for s in spans)
    b = TraceBuilder(merge=True)
    model, tokens_in, tokens_out, cost, session, error = "", 0, 0, 0.0, "", False
    root_output = ""
    feedback: tuple[Feedback, ...] = ()
    deferred: dict[str, Any] = {}
    for span in spans:
        b.begin_span()
        a = span.attrs
        if not span.parent_id and len(spans) > 1 and "gen_ai.output.messages" in a:
            # an agent span's reply is the last thing said, though the span starts first
            a = dict(a)
            deferred["gen_ai.output.messages"] = a.pop("gen_ai.output.messages")
        kind = str(a.get("openinference.span.kind") or "").upper()
        op = str(a.get("gen_ai.operation.name") or "")
        is_tool = _is_tool(kind, op, a)
        if span.error and not is_tool:
            error = True
        session = session or str(
            a.get("gen_ai.conversation.id")
            or a.get("session.id")
            or a.get("langfuse.session.id")
            or ""
        )
        model = model or str(
            a.get("gen_ai.request.model")
            or a.get("gen_ai.response.model")
            or a.get("llm.model_name")
            or ""
        )
        if not _USAGE_KEYS.isdisjoint(a):  # tool and agent spans record none: skip the look-ups
            tokens_in += _int(
                a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))
                or a.get("llm.token_count.prompt")
            )
            tokens_out += _int(
                a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
                or a.get("llm.token_count.completion")
            )
            cost += finite(a.get("llm.cost.total") or a.get("gen_ai.usage.cost"))
        if is_tool:
            tool_span(b, span)
        elif kind in ("LLM", "") or op:
            # flattened lists (`<prefix>.0.<leaf>`) are looked for only when a key has an index
            indexed = ".0." in "\0".join(a)  # one C scan; a match cannot straddle two keys
            _genai_messages(b, a, span.events, indexed)
            if indexed:
                _openinference_messages(b, a)
        if not span.parent_id:
            if "skill_trainer.feedback" in a:  # this project's own export of an ingest run
                feedback = _own_feedback(a["skill_trainer.feedback"])
            if kind and kind != "LLM" and "input.value" in a:
                b.message(Role.USER, io_text(a.get("input.value")))
            root_output = io_text(a.get("output.value")) if kind and kind != "LLM" else ""
        if len(b.steps) >= MAX_STEPS:
            break
    if deferred:
        b.begin_span()
        _genai_messages(b, deferred, [], indexed=False)
    if root_output:
        b.begin_span()
        b.message(Role.ASSISTANT, root_output)
    starts = [s.start_ns for s in spans if s.start_ns]
    ends = [s.end_ns for s in spans if s.end_ns]
    latency = (max(ends) - min(starts)) / 1e9 if starts and ends else 0.0
    source = (
        Source.OPENINFERENCE if openinference and default_source == Source.OTLP else default_source
    )
    return Trace(
        source=source,
        native_id=spans[0].trace_id,
        steps=b.system_first(),
        session_id=session,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round(cost, 8),
        latency_s=round(max(latency, 0.0), 6),
        error=error,
        feedback=feedback,
        started_at=iso_from_ns(min(starts)) if starts else "",
    )


def _own_feedback(value: Any) -> tuple[Feedback, ...]:
    """The recorded scores `export --format otlp` writes for an ingest run's trace
    (`skill_trainer.feedback`: Feedback.as_json shapes); anything else in it is skipped."""
    out = []
    for f in _list(parse_json(value)):
        score = f.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            out.append(
                Feedback(
                    FeedbackKind.SCORE,
                    as_text(f.get("name")),
                    finite(score),
                    as_text(f.get("text")),
                )
            )
    return tuple(out)


def _is_tool(kind: str, op: str, a: dict[str, Any]) -> bool:
    # pydantic-ai's format 2 names no operation on its `running tool` spans
    return kind == "TOOL" or op == "execute_tool" or (not op and not kind and _TOOL_NAME in a)


def is_tool_span(span: Span) -> bool:
    """A span that records one tool's run (OpenInference TOOL, GenAI `execute_tool`)."""
    a = span.attrs
    kind = str(a.get("openinference.span.kind") or "").upper()
    return _is_tool(kind, str(a.get("gen_ai.operation.name") or ""), a)


def tool_span(b: TraceBuilder, span: Span, timed: bool = False, fallback_id: str = "") -> None:
    """The tool's call (unless the model's call with its id is already in) and what it
    returned or raised. `timed`: the observation keeps the span's duration (ingest leaves it
    out, so the content ids of ingested traces stay what they were). `fallback_id`: the call
    id when the span records none and no open call of the tool is in."""
    a = span.attrs
    name = str(a.get("gen_ai.tool.name") or a.get("tool.name") or span.name)
    args = _first(a, _TOOL_ARGS)
    call_id = str(
        a.get("gen_ai.tool.call.id")
        or a.get("tool_call.id")
        or b.open_call_id(name, args_text(args))
        or fallback_id
    )
    result = _first(a, _TOOL_RESULT)
    if result is None:
        result = _exception_text(span)
    if not b.seen(StepKind.TOOL_CALL, call_id):
        b.tool_call(name, args_text(args), call_id)
    if result is None and not span.error:
        # the span does not record what the tool returned (pydantic-ai's format 2 without
        # content): the model's next messages do, and an empty observation would hide it
        return
    timing = timed and 0 < span.start_ns < span.end_ns
    duration = round((span.end_ns - span.start_ns) / 1e9, 6) if timing else 0.0
    b.observation(io_text(result), name, call_id, error=span.error, duration_s=duration)


def _exception_text(span: Span) -> str | None:
    """The recorded exception as its type and message (`ValueError: bad date`), or None."""
    for event_name, attrs in span.events:
        if event_name == "exception":
            kind = as_text(attrs.get("exception.type")).strip()
            message = as_text(attrs.get("exception.message")).strip()
            return f"{kind}: {message}" if kind and message else kind or message
    return None


_TOOL_NAME = "gen_ai.tool.name"
# where tool spans record their arguments and result: the GenAI conventions, OpenInference,
# older OpenLLMetry, and pydantic-ai's format 2 (`tool_arguments`, `tool_response`)
_TOOL_ARGS = ("gen_ai.tool.call.arguments", "input.value", "tool.parameters", "tool_arguments")
_TOOL_RESULT = ("gen_ai.tool.call.result", "output.value", "gen_ai.tool.message", "tool_response")


def _first(a: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in a:
            return a[key]
    return None


def _genai_messages(
    b: TraceBuilder,
    a: dict[str, Any],
    events: list[tuple[str, dict[str, Any]]],
    indexed: bool = True,
) -> None:
    """Current names, then the deprecated ones older exporters still send (an absent key
    adds nothing, so it is not looked at further)."""
    if "gen_ai.system_instructions" in a:
        system = parse_json(a["gen_ai.system_instructions"])
        if isinstance(system, list):
            b.message(Role.SYSTEM, parts_text(system))
        elif isinstance(system, str):
            b.message(Role.SYSTEM, system)
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        messages = parse_json(a.get(key))
        if isinstance(messages, list):
            for m in messages:
                if isinstance(m, dict):
                    _genai_message(b, m)
    for key in ("gen_ai.prompt", "gen_ai.completion"):  # deprecated: a list of {role, content}
        if key in a:
            role = Role.USER if key == "gen_ai.prompt" else Role.ASSISTANT
            _legacy_messages(b, a[key], role)
        if indexed:
            _indexed_messages(b, a, key)  # OpenLLMetry: gen_ai.prompt.<i>.role / .content
    if "gen_ai.tool.message" in a and "gen_ai.tool.name" not in a:
        b.observation(io_text(a.get("gen_ai.tool.message")))
    for name, attrs in events:
        _legacy_event(b, name, attrs)


def _genai_message(b: TraceBuilder, m: dict[str, Any]) -> None:
    role = role_of(m.get("role"))
    parts = m.get("parts")
    if not isinstance(parts, list):  # some exporters write the OpenAI shape
        chat_message(b, m)
        return
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(as_text(part.get("content")))
        elif kind == "tool_call":
            if texts:
                b.message(role, texts[0] if len(texts) == 1 else join_texts(texts))
                texts = []
            call_id = str(part.get("id") or "")
            if not b.seen(StepKind.TOOL_CALL, call_id):  # history re-sent: skip the work
                b.tool_call(str(part.get("name") or ""), args_text(part.get("arguments")), call_id)
        elif kind == "tool_call_response":
            call_id = str(part.get("id") or "")
            if not b.seen(StepKind.OBSERVATION, call_id):
                b.observation(io_text(part.get("response")), "", call_id)
    if texts:
        b.message(role, texts[0] if len(texts) == 1 else join_texts(texts))


def _legacy_messages(b: TraceBuilder, value: Any, default: Role) -> None:
    parsed = parse_json(value)
    if isinstance(parsed, list):
        for m in parsed:
            if isinstance(m, dict):
                chat_message(b, m, default)
    elif isinstance(parsed, str) and parsed.strip():
        b.message(default, parsed)


def _indexed_messages(b: TraceBuilder, a: dict[str, Any], prefix: str) -> None:
    default = Role.USER if prefix == "gen_ai.prompt" else Role.ASSISTANT
    for fields in _indexed(a, prefix):
        role = role_of(fields.get("role"), default)
        content = fields.get("content")
        if role == Role.TOOL:
            b.observation(io_text(content), "", str(fields.get("tool_call_id") or ""))
        else:
            b.message(role, io_text(content))
        for call in _indexed(fields, "tool_calls"):
            b.tool_call(
                str(call.get("name") or ""),
                args_text(call.get("arguments")),
                str(call.get("id") or ""),
            )


def _legacy_event(b: TraceBuilder, name: str, attrs: dict[str, Any]) -> None:
    """The event API (gen_ai.*.message / gen_ai.choice) and the older content events."""
    if name == "gen_ai.content.prompt":
        _legacy_messages(b, attrs.get("gen_ai.prompt"), Role.USER)
    elif name == "gen_ai.content.completion":
        _legacy_messages(b, attrs.get("gen_ai.completion"), Role.ASSISTANT)
    elif name == "gen_ai.tool.message":
        b.observation(io_text(attrs.get("content")), "", str(attrs.get("id") or ""))
    elif name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message"):
        role = role_of(name.split(".")[1])
        b.message(role, io_text(attrs.get("content")))
        for call in _list(parse_json(attrs.get("tool_calls"))):
            tool_call(b, call)
    elif name == "gen_ai.choice":
        message = parse_json(attrs.get("message"))
        if isinstance(message, dict):
            chat_message(b, message, Role.ASSISTANT)
        else:
            b.message(Role.ASSISTANT, io_text(attrs.get("content")))


def _openinference_messages(b: TraceBuilder, a: dict[str, Any]) -> None:
    for prefix in ("llm.input_messages", "llm.output_messages"):
        for fields in _indexed(a, prefix):
            message = {k.removeprefix("message."): v for k, v in fields.items()}
            role = role_of(message.get("role"))
            if role == Role.TOOL:
                b.observation(
                    io_text(message.get("content")),
                    str(message.get("name") or ""),
                    str(message.get("tool_call_id") or ""),
                )
                continue
            b.message(role, io_text(message.get("content")))
            for call in _indexed(message, "tool_calls"):
                call = {k.removeprefix("tool_call."): v for k, v in call.items()}
                b.tool_call(
                    str(call.get("function.name") or ""),
                    args_text(call.get("function.arguments")),
                    str(call.get("id") or ""),
                )


def _indexed(a: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.<i>.rest` keys as a list of {rest: value}, in index order."""
    dot = prefix + "."
    if not any(f"{dot}0.{leaf}" in a for leaf in _FIRST_LEAVES):
        return []  # indices start at 0: most spans use another naming, found in O(1)
    found: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        if not key.startswith(dot):
            continue
        match = _INDEXED.match(key[len(dot) :])
        if match is None:
            continue
        found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[i] for i in sorted(found)]


# -- small helpers ------------------------------------------------------------------------------
def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    """A recorded count or time; what is not a number SQLite can hold (a string, Infinity,
    NaN, past 64 bits) counts as not recorded."""
    try:
        number = int(value) if value is not None and not isinstance(value, bool) else 0
    except (TypeError, ValueError, OverflowError):  # int(inf): OverflowError
        return 0
    return number if -_INT64 < number < _INT64 else 0


def count(value: Any) -> int:
    """A recorded count that may be written as a float or a numeric string ("12.0")."""
    return _int(finite(value))


def finite(value: Any) -> float:
    """A recorded amount as a finite float; anything else (Infinity, NaN, text) is 0."""
    if value is None or isinstance(value, bool):
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


_INT64 = 2**63


def _iso_ns(value: Any) -> int:
    """An ISO 8601 time as nanoseconds since the epoch; one without a zone is UTC (LangSmith
    writes them so), never the machine's local time."""
    from datetime import UTC, datetime

    if not isinstance(value, str) or not value:
        return 0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1e9)
    except (ValueError, OverflowError, OSError):
        return 0


def iso_seconds(value: Any) -> float:
    return _iso_ns(value) / 1e9
