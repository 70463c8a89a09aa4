"""Does a trace read back from `export --format otlp` hold every step of the trajectory it
was written from? (bench/ingest.py `ingest.roundtrip_steps_equal`, tests/app/ingest/test_ingest_roundtrip.py)

A step is compared by what a reader needs of it: a model message by its text, a tool call by
its name and arguments (as JSON values, so key order and spacing do not count), an observation
by its text, tool name and error flag; a provider error by the trace's error flag; and the
final answer. The opening messages (system and user) are rebuilt by the export from the run's
versions, so they are not compared here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from app.secrets import scrub_deep
from core.traces import Role, StepKind, Trace

Signature = tuple[Any, ...]


class Trajectory(Protocol):
    """What is compared of an exported trajectory (app/harness/data/export_otel.py's)."""

    @property
    def conversation_id(self) -> str: ...
    @property
    def steps(self) -> list[dict[str, Any]]: ...
    @property
    def final_text(self) -> str: ...


@dataclass(frozen=True)
class Comparison:
    equal: int
    total: int
    missing: int  # trajectories with no trace at all
    first_difference: str  # "" when every one is equal

    @property
    def share(self) -> float:
        return self.equal / self.total if self.total else 0.0


def _args(value: Any) -> str:
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def expected(t: Trajectory) -> list[Signature]:
    """The steps of an exported trajectory (its steps_json), as signatures."""
    out: list[Signature] = []
    for step in t.steps:
        kind = step.get("type")
        if kind in ("model", "extract"):
            text = str(step.get("text") or "")
            if text.strip():
                out.append(("message", text))
            for call in step.get("tool_calls") or [] if kind == "model" else []:
                if isinstance(call, dict):
                    out.append(
                        ("tool_call", str(call.get("name") or ""), _args(call.get("arguments")))
                    )
        elif kind == "tool":
            error = step.get("status") == "error"
            out.append(
                ("observation", str(step.get("output") or ""), str(step.get("name") or ""), error)
            )
    return out


def ingested(trace: Trace) -> list[Signature]:
    out: list[Signature] = []
    for s in trace.steps:
        if s.kind == StepKind.MESSAGE and s.role in (Role.SYSTEM, Role.USER):
            continue
        if s.kind == StepKind.MESSAGE:
            out.append(("message", s.text))
        elif s.kind == StepKind.TOOL_CALL:
            out.append(("tool_call", s.tool_name, _args(s.arguments)))
        else:
            out.append(("observation", s.text, s.tool_name, s.is_error))
    return out


def difference(t: Trajectory, trace: Trace) -> str:
    """ "" when the trace keeps every step of `t`, else what differs first."""
    want, got = expected(t), ingested(trace)
    if want != got:
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            if w != g:
                return f"step {i}: wrote {str(w)[:120]!r}, read {str(g)[:120]!r}"
        return f"wrote {len(want)} steps, read {len(got)}"
    provider_error = any(s.get("type") == "error" for s in t.steps)
    if provider_error and not trace.error:
        return "the provider error was not flagged"
    replies = {s.text.strip() for s in trace.steps if s.role == Role.ASSISTANT}
    if t.final_text.strip() and t.final_text.strip() not in replies:
        return f"final reply {t.final_text[:80]!r} not read back"
    return ""


def compare(trajectories: Iterable[Trajectory], traces: Iterable[Trace]) -> Comparison:
    """Each trajectory against the trace whose session id is its conversation id (as ingest
    stores it: redacted, where the high-entropy pass takes an id such as `run/q-u003a/0` for a
    token; the keyed placeholder still tells them apart)."""
    by_session = {trace.session_id: trace for trace in traces}
    equal = total = missing = 0
    first = ""
    for t in trajectories:
        total += 1
        trace = by_session.get(t.conversation_id) or by_session.get(scrub_deep(t.conversation_id))
        why = "no trace read back" if trace is None else difference(t, trace)
        missing += trace is None
        equal += not why
        first = first or (f"{t.conversation_id}: {why}" if why else "")
    return Comparison(equal, total, missing, first)
