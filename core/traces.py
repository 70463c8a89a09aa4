"""The normalised trace: one recorded agent run from any observability export.

Pure values and functions (no I/O). The parsers in app/harness/ingest/ build these from OTLP,
OpenInference, Langfuse, LangSmith, Inspect AI and chat-json records; the harness log stores
them (`ingested_traces`), and a benchmark is written from them (docs/ingest.md).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any

# Bounds on what one trace may hold: an export is untrusted input.
MAX_STEPS = 2_000
MAX_TEXT_CHARS = 100_000
TEMPLATE_CHARS = 200


class StepKind(StrEnum):
    """What one step of a trace is."""

    MESSAGE = "message"  # a system, user or assistant message
    TOOL_CALL = "tool_call"  # the model asked for a tool, with arguments
    OBSERVATION = "observation"  # what a tool returned (or the error it raised)


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class FeedbackKind(StrEnum):
    """Feedback a tool recorded about a trace."""

    SCORE = "score"  # an explicit score (numeric or boolean)
    EDITED = "edited"  # a corrected output a human wrote
    ACCEPTED = "accepted"  # the output was accepted as it was
    RETRY = "retry"  # the user asked again
    ABANDONED = "abandoned"  # the user left without an answer


class Source(StrEnum):
    OTLP = "otlp"
    OPENINFERENCE = "openinference"
    PHOENIX = "phoenix"
    LANGFUSE = "langfuse"
    LANGSMITH = "langsmith"
    INSPECT = "inspect"
    CHAT_JSON = "chat-json"
    # rebuilt from the model calls an agent made through the recording gateway
    # (app/harness/agents/gateway.py), or reported by the agent itself
    GATEWAY = "gateway"


class ReferenceMode(StrEnum):
    """Where a benchmark's reference answer may come from."""

    FEEDBACK = "feedback"  # an edited output or an explicitly good score only
    FINAL = "final"  # also the trace's own final answer (the user vouches for it)


@dataclass(frozen=True)
class Step:
    kind: StepKind
    role: Role
    text: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    arguments: str = ""  # JSON text of the call's arguments (as recorded)
    is_error: bool = False
    # how long the tool ran, when a tool span recorded it (an outside agent's own trace file,
    # app/harness/agents/agent_trace.py); 0: not recorded
    duration_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        # spelled out, and `_value_` rather than the `value` property (a Python-level call):
        # every step of every ingested trace passes here (canonical_json)
        out: dict[str, Any] = {"kind": self.kind._value_, "role": self.role._value_}
        if self.text:
            out["text"] = self.text
        if self.tool_name:
            out["tool_name"] = self.tool_name
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        if self.arguments:
            out["arguments"] = self.arguments
        if self.is_error:
            out["is_error"] = True
        if self.duration_s:
            out["duration_s"] = self.duration_s
        return out


@dataclass(frozen=True)
class Feedback:
    kind: FeedbackKind
    name: str = ""
    score: float | None = None  # normalised to 0..1 when the scale is known
    text: str = ""  # a comment, or the edited output for EDITED

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.name:
            out["name"] = self.name
        if self.score is not None:
            out["score"] = self.score
        if self.text:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class Trace:
    source: Source
    native_id: str  # the id the exporting tool gave it
    steps: tuple[Step, ...]
    session_id: str = ""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: bool = False  # the run itself failed (a span/run/observation error)
    feedback: tuple[Feedback, ...] = ()
    target: str = ""  # a recorded expected answer (Inspect `target`)
    # when the run started, as the exporting tool recorded it (ISO 8601, UTC, written by the
    # parser from a parsed time, never recorded text); stored, but not part of the content id
    started_at: str = ""

    @property
    def task(self) -> str:
        """The user's task: the first user message."""
        for s in self.steps:
            if s.kind == StepKind.MESSAGE and s.role == Role.USER and s.text.strip():
                return s.text
        return ""

    @property
    def partial(self) -> bool:
        """The recording stops on a tool call or its result: the agent's answer, if it gave
        one, is not in it (an export cut short, a sample stopped at its message limit)."""
        for s in reversed(self.steps):
            if s.kind != StepKind.MESSAGE:
                return True
            if s.text.strip():
                return False
        return False

    @property
    def final_answer(self) -> str:
        """The last assistant message with text; "" for a partial trace, whose last words
        ("Let me check.") come before a tool call and answer nothing."""
        said = False  # a message with text comes after the last tool step: not partial
        for s in reversed(self.steps):  # `partial` and the answer in one pass (hot path)
            if s.kind != StepKind.MESSAGE:
                if not said:
                    return ""
            elif s.text.strip():
                if s.role == Role.ASSISTANT:
                    return s.text
                said = True
        return ""

    @property
    def has_tool_error(self) -> bool:
        return any(s.kind == StepKind.OBSERVATION and s.is_error for s in self.steps)

    @property
    def failed(self) -> bool:
        """Kept for triage, never a memory or SFT example."""
        return self.error or self.has_tool_error

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source.value,
            "native_id": self.native_id,
            "session_id": self.session_id,
            "model": self.model,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "error": self.error,
            "target": self.target,
            "steps": [s.as_json() for s in self.steps],
            "feedback": [f.as_json() for f in self.feedback],
        }
        if self.started_at:
            out["started_at"] = self.started_at  # last: `content_id` cuts it off
        return out


def canonical_json(trace: Trace) -> str:
    """The trace as canonical JSON (`as_json` builds its keys in one fixed order): what its
    id hashes and the log stores."""
    return json.dumps(trace.as_json(), ensure_ascii=False)


def content_id(trace: Trace, canonical: str | None = None) -> str:
    """Content-addressed id: the same trace re-ingested maps to the same row. The recorded
    start time is left out (the last key of the canonical JSON, cut off here): the same run
    exported twice is one trace, and ids stay those of the versions that did not keep it."""
    text = canonical_json(trace) if canonical is None else canonical
    data = text.encode("utf-8", "surrogatepass")
    if trace.started_at:  # an ISO time `iso_from_ns` wrote: nothing in it to escape
        suffix = b', "started_at": "' + trace.started_at.encode() + b'"}'
        if data.endswith(suffix):
            digest = hashlib.sha256(memoryview(data)[: -len(suffix)])
            digest.update(b"}")
            return "tr-" + digest.hexdigest()[:24]
    return "tr-" + hashlib.sha256(data).hexdigest()[:24]


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_QUOTED = re.compile(r"\"[^\"]{0,200}\"|'[^']{0,200}'")
_SPACE = re.compile(r"\s+")


def task_template(task: str) -> str:
    """The task with numbers and quoted literals blanked: near-duplicate tasks ("refund order
    123" / "refund order 456") share a template, so they land in one family."""
    text = _QUOTED.sub("<q>", task.lower())
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:TEMPLATE_CHARS]


def family_key(trace: Trace) -> str:
    """Session or conversation id when the tool recorded one, else the task template."""
    if trace.session_id:
        basis = "session:" + trace.session_id
    else:
        basis = "task:" + task_template(trace.task)
    return "fam-" + hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()[:16]


GOOD_SCORE = 0.8  # an explicit score at or above this (on 0..1) vouches for the output


def reference_answer(trace: Trace, mode: ReferenceMode) -> tuple[str, str]:
    """(reference, where it came from) or ("", why there is none).

    An edited output wins; then a recorded target; then an explicitly good score on the
    final answer; the final answer alone only when the user says so (`ReferenceMode.FINAL`).
    A failed trace never gives a reference.
    """
    if trace.failed:
        return "", "error trace (kept for triage)"
    for f in trace.feedback:
        if f.kind == FeedbackKind.EDITED and f.text.strip():
            return f.text.strip(), "edited output"
    if trace.target.strip():
        return trace.target.strip(), "recorded target"
    final = trace.final_answer.strip()
    if trace.partial:
        return "", "partial trace (it ends on a tool call)"
    if not final:
        return "", "no final answer"
    scores = [f.score for f in trace.feedback if f.kind == FeedbackKind.SCORE]
    known = [s for s in scores if s is not None]
    if known and min(known) >= GOOD_SCORE:
        return final, "good score"
    if known and min(known) < GOOD_SCORE:
        return "", "scored below the good mark"
    if any(f.kind == FeedbackKind.ACCEPTED for f in trace.feedback):
        return final, "accepted output"
    if mode == ReferenceMode.FINAL:
        return final, "final answer"
    return "", "no reference (no edit, target or good score)"


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars cut]"


def as_text(value: Any) -> str:
    """A recorded value as text: strings as they are, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return clip(value)
    try:
        return clip(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError, RecursionError):
        return clip(str(value))


def normalise_score(value: Any) -> float | None:
    """A recorded score on 0..1: booleans, numbers in 0..1, and the common words."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        v = float(value)
        return v if 0.0 <= v <= 1.0 else None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in {"c", "correct", "good", "pass", "yes", "true", "thumbs_up", "1"}:
            return 1.0
        if word in {"i", "incorrect", "bad", "fail", "no", "false", "thumbs_down", "0"}:
            return 0.0
        if word == "p":  # Inspect's PARTIAL
            return 0.5
    return None


@dataclass
class TraceBuilder:
    """Collects steps in order (bounded) while a parser walks one trace.

    `merge`: span formats send the whole history again with every model call, and a tool
    call appears both in the model's output and as its own tool span; a step already seen
    (a tool call or observation by its call id, a message by its content) is added once.
    """

    merge: bool = False
    steps: list[Step] = field(default_factory=list)
    dropped: int = 0
    _seen: set[tuple[str, ...]] = field(default_factory=set)
    _counts: dict[tuple[str, ...], int] = field(default_factory=dict)
    _scope: dict[tuple[str, ...], int] | None = None
    _late_system: bool = False

    def begin_span(self) -> None:
        """From here on, steps without a call id are merged by count, not by content: a span
        re-sends the history, so its k-th copy of a message is new only when fewer than k are
        in (the agent may say the same thing twice)."""
        self._scope = {}

    def add(self, step: Step) -> None:
        if self.merge:
            key = _merge_key(step)
            if self._scope is not None and not (step.tool_call_id and key[0] != "message"):
                n = self._scope[key] = self._scope.get(key, 0) + 1
                if n <= self._counts.get(key, 0):
                    return
                self._counts[key] = n
            elif key in self._seen:
                return
            self._seen.add(key)
        if len(self.steps) >= MAX_STEPS:
            self.dropped += 1
            return
        if step.role is Role.SYSTEM and self.steps and self.steps[-1].role is not Role.SYSTEM:
            self._late_system = True  # `system_first` has work to do
        self.steps.append(step)

    def message(self, role: Role, text: str) -> None:
        if text.strip():
            self.add(Step(StepKind.MESSAGE, role, clip(text)))

    def tool_call(self, name: str, arguments: str, call_id: str = "") -> None:
        self.add(Step(StepKind.TOOL_CALL, Role.ASSISTANT, "", name, call_id, clip(arguments)))

    def seen(self, kind: StepKind, call_id: str) -> bool:
        """A tool call or observation with this call id is already in (merge mode)."""
        return self.merge and bool(call_id) and (kind._value_, call_id) in self._seen

    def open_call_id(self, name: str, arguments: str = "") -> str:
        """The id of a call of tool `name` that has no observation yet ("" if none): the
        earliest with these arguments, else the latest. A tool span, observation or run that
        records its own id rather than the model's still lands on the model's call, so the
        call is stored once."""
        answered = {s.tool_call_id for s in self.steps if s.kind == StepKind.OBSERVATION}
        open_calls = [
            s
            for s in self.steps
            if s.kind == StepKind.TOOL_CALL
            and s.tool_name == name
            and s.tool_call_id
            and s.tool_call_id not in answered
        ]
        same = [s for s in open_calls if arguments and s.arguments == arguments]
        if same:
            return same[0].tool_call_id
        return open_calls[-1].tool_call_id if open_calls else ""

    def observation(
        self,
        text: str,
        name: str = "",
        call_id: str = "",
        error: bool = False,
        duration_s: float = 0.0,
    ) -> None:
        self.add(
            Step(StepKind.OBSERVATION, Role.TOOL, clip(text), name, call_id, "", error, duration_s)
        )

    def system_first(self) -> tuple[Step, ...]:
        """The steps, with the system messages of the opening (before the first assistant
        or tool step) ahead of its user messages: a tracer records the user's input on the
        trace or root span, which is read first, and the system prompt with the first model
        call, which comes after it; the model saw the system prompt first."""
        if not self._late_system:
            return tuple(self.steps)
        opening = next(
            (i for i, s in enumerate(self.steps) if s.role not in (Role.SYSTEM, Role.USER)),
            len(self.steps),
        )
        head = self.steps[:opening]
        system = [s for s in head if s.role == Role.SYSTEM]
        if not system or head[: len(system)] == system:
            return tuple(self.steps)
        rest = [s for s in head if s.role != Role.SYSTEM]
        return (*system, *rest, *self.steps[opening:])


def _merge_key(step: Step) -> tuple[str, ...]:
    if step.tool_call_id and step.kind != StepKind.MESSAGE:
        return (step.kind._value_, step.tool_call_id)
    return (step.kind._value_, step.role._value_, step.text, step.tool_name, step.arguments)


def trace_from_json(data: dict[str, Any]) -> Trace:
    """The inverse of `Trace.as_json` (for a trace after redaction, or read back from the log)."""
    return Trace(
        source=Source(data["source"]),
        native_id=str(data.get("native_id", "")),
        steps=tuple(
            Step(
                StepKind(s["kind"]),
                Role(s["role"]),
                str(s.get("text", "")),
                str(s.get("tool_name", "")),
                str(s.get("tool_call_id", "")),
                str(s.get("arguments", "")),
                bool(s.get("is_error", False)),
                float(s.get("duration_s", 0.0)),
            )
            for s in data.get("steps", [])
        ),
        session_id=str(data.get("session_id", "")),
        model=str(data.get("model", "")),
        tokens_in=int(data.get("tokens_in", 0)),
        tokens_out=int(data.get("tokens_out", 0)),
        cost_usd=float(data.get("cost_usd", 0.0)),
        latency_s=float(data.get("latency_s", 0.0)),
        error=bool(data.get("error", False)),
        feedback=tuple(
            Feedback(
                FeedbackKind(f["kind"]),
                str(f.get("name", "")),
                None if f.get("score") is None else float(f["score"]),
                str(f.get("text", "")),
            )
            for f in data.get("feedback", [])
        ),
        target=str(data.get("target", "")),
        started_at=str(data.get("started_at", "")),
    )


def redact_trace(trace: Trace, redact_text: Callable[[str], str], min_len: int = 1) -> Trace:
    """`trace` with `redact_text` applied to every string it records: what
    `redact_json(trace.as_json(), redact_text)` changes, without the detour through JSON (and
    the rebuild `trace_from_json` would do). The enum fields are this module's own words, not
    recorded text, and are kept. Strings shorter than `min_len` are not passed (the empty
    string, by default; `core.redact.MIN_SECRET_LEN` for its passes, which find nothing
    shorter): most of a trace's strings are ids and names, and a call each adds up. Unchanged
    parts are the same objects, and a trace in which nothing changed comes back as itself."""
    f, n = redact_text, min_len
    steps = tuple(_redact_step(s, f, n) for s in trace.steps)
    feedback = tuple(_redact_feedback(fb, f, n) for fb in trace.feedback)
    fields: dict[str, Any] = {
        "native_id": f(trace.native_id) if len(trace.native_id) >= n else trace.native_id,
        "session_id": f(trace.session_id) if len(trace.session_id) >= n else trace.session_id,
        "model": f(trace.model) if len(trace.model) >= n else trace.model,
        "target": f(trace.target) if len(trace.target) >= n else trace.target,
    }
    changed = {k: v for k, v in fields.items() if v != getattr(trace, k)}
    # tuple equality checks identity first, in C: an unchanged step is the same object
    if steps != trace.steps:
        changed["steps"] = steps
    if feedback != trace.feedback:
        changed["feedback"] = feedback
    return replace(trace, **changed) if changed else trace


def _redact_step(step: Step, f: Callable[[str], str], n: int) -> Step:
    text = f(step.text) if len(step.text) >= n else step.text
    name = f(step.tool_name) if len(step.tool_name) >= n else step.tool_name
    call_id = f(step.tool_call_id) if len(step.tool_call_id) >= n else step.tool_call_id
    arguments = f(step.arguments) if len(step.arguments) >= n else step.arguments
    if (
        text == step.text
        and name == step.tool_name
        and call_id == step.tool_call_id
        and arguments == step.arguments
    ):
        return step
    return replace(step, text=text, tool_name=name, tool_call_id=call_id, arguments=arguments)


def _redact_feedback(feedback: Feedback, f: Callable[[str], str], n: int) -> Feedback:
    name = f(feedback.name) if len(feedback.name) >= n else feedback.name
    text = f(feedback.text) if len(feedback.text) >= n else feedback.text
    if name == feedback.name and text == feedback.text:
        return feedback
    return replace(feedback, name=name, text=text)


def iso_from_ns(ns: int) -> str:
    """Nanoseconds since the epoch as ISO 8601 UTC with microseconds ("" for 0 or a time out
    of range). Once a trace on the ingest path: the date and time of a second are formatted
    once (the traces of an export start close together)."""
    if ns <= 0:
        return ""
    seconds, rest = divmod(ns, 1_000_000_000)
    prefix = _second_iso(seconds)
    return f"{prefix}.{rest // 1000:06d}+00:00" if prefix else ""


@lru_cache(maxsize=1024)
def _second_iso(seconds: int) -> str:
    try:
        t = time.gmtime(seconds)
    except (OverflowError, OSError, ValueError):
        return ""
    if t.tm_year > 9999:
        return ""
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    )


def sampled(family: str, rate: float, seed: int) -> bool:
    """Whether a family is kept by `--sample RATE --seed N`: whole families in or out, so a
    sample never splits one; the same seed keeps the same families."""
    if rate >= 1.0:
        return True
    digest = hashlib.sha256(f"{seed}:{family}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def observation_context(trace: Trace, limit: int = 8_000) -> str:
    """The recorded tool observations as a question's context: what the agent saw."""
    lines: list[str] = []
    calls = {
        s.tool_call_id: s for s in trace.steps if s.kind == StepKind.TOOL_CALL and s.tool_call_id
    }
    for s in trace.steps:
        if s.kind != StepKind.OBSERVATION or s.is_error or not s.text.strip():
            continue
        call = calls.get(s.tool_call_id)
        name = s.tool_name or (call.tool_name if call else "") or "tool"
        args = call.arguments if call else ""
        lines.append(f"{name}({args}) -> {s.text.strip()}")
    return clip("\n".join(lines), limit)


def with_derived_feedback(trace: Trace) -> Trace:
    """Feedback the trace itself shows: a user task that got no answer and no error was
    abandoned (the user left, or the agent never replied)."""
    abandoned = trace.task and not trace.final_answer and not trace.failed and not trace.partial
    if abandoned and all(f.kind != FeedbackKind.ABANDONED for f in trace.feedback):
        return replace(trace, feedback=(*trace.feedback, Feedback(FeedbackKind.ABANDONED)))
    return trace
