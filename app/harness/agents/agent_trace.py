"""An outside agent's own trace, in a file the run names (docs/agents.md#the-agents-own-trace).

A command agent is told `SKILL_TRAINER_TRACE_FILE`, a path inside its private folder. If the
agent writes its instrumentor's spans there, one JSON document a line (an OTLP/JSON export,
`resourceSpans[].scopeSpans[].spans[]`, or one OpenInference span as Phoenix exports it), the
file is read after the process ends with the ingest parsers (app/harness/ingest/spans.py) and
its TOOL spans join the trajectory the gateway recorded (calls.py `trace_from_calls`): the
gateway's model turns stay the record of the model calls, the spans add what each tool was
given, what it returned or raised, and how long it ran.

The file is the agent's, so untrusted: a link, a fifo or anything but a regular file is not
read, nor is one over `TRACE_FILE_MAX_BYTES`; a line that is not JSON, or not a span format,
is skipped and counted. Nothing in it raises out of the rollout.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.harness.ingest.detect import Kind, classify
from app.harness.ingest.spans import Span, is_tool_span, otlp_spans, phoenix_span

TRACE_FILE = "agent-trace.jsonl"
TRACE_FILE_MAX_BYTES = 8 << 20
MAX_TOOL_SPANS = 1_000  # a trajectory holds at most core.traces.MAX_STEPS steps anyway


@dataclass(frozen=True)
class AgentTraceFile:
    """What the agent's trace file gave: its tool spans (by start time), how many spans it
    held in all, the lines skipped, and why it was not read (`note`, else "")."""

    tool_spans: tuple[Span, ...] = ()
    spans: int = 0
    lines_skipped: int = 0
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trace_spans": self.spans, "trace_lines_skipped": self.lines_skipped}
        if self.note:
            out["trace_note"] = self.note
        return out


def read_trace_file(folder: Path, name: str = TRACE_FILE) -> AgentTraceFile | None:
    """The agent's trace file in `folder` (None: it wrote none)."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:  # a link (ELOOP), no permission
        return AgentTraceFile(note=f"trace file not read: {e.strerror or e}")
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return AgentTraceFile(note="trace file not read: not a regular file")
            if info.st_size > TRACE_FILE_MAX_BYTES:
                return AgentTraceFile(note=_too_large())
            raw = handle.read(TRACE_FILE_MAX_BYTES + 1)
    except OSError as e:
        return AgentTraceFile(note=f"trace file not read: {e.strerror or e}")
    if len(raw) > TRACE_FILE_MAX_BYTES:  # grew while read
        return AgentTraceFile(note=_too_large())
    return parse_trace_lines(raw)


def parse_trace_lines(raw: bytes) -> AgentTraceFile:
    """Every line's spans; a line that is not a JSON span document is skipped and counted."""
    tools: list[Span] = []
    spans = skipped = 0
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found = _line_spans(json.loads(line), number)
        except Exception:  # noqa: BLE001 - the agent's bytes: not JSON, too deep, odd shapes
            found = None
        if found is None:
            skipped += 1
            continue
        spans += len(found)
        tools += [s for s in found if is_tool_span(s)][: MAX_TOOL_SPANS - len(tools)]
    tools.sort(key=lambda s: (s.start_ns, s.end_ns))
    return AgentTraceFile(tuple(tools), spans, skipped)


def _line_spans(value: Any, line: int) -> list[Span] | None:
    kind = classify(value)
    if kind == Kind.OTLP:
        return list(otlp_spans(value, line))
    if kind == Kind.PHOENIX:
        return [phoenix_span(value, line)]
    return None


def _too_large() -> str:
    return f"trace file not read: larger than {TRACE_FILE_MAX_BYTES} bytes"
