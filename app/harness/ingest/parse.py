"""An export file as a stream of normalised traces (each with the line it came from).

Auto-detection reads each record's shape (app/harness/ingest/detect.py); the first record fixes
the file's format, and a record of another format, or of none, stops the file with its
file:line and the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.ingest import documents, spans
from app.harness.ingest.detect import FAMILY, SOURCES, Kind, classify, describe_unknown
from app.harness.ingest.records import Digest, Record, records
from core.traces import Source, Trace


@dataclass
class Detected:
    """What auto-detection found, for the summary."""

    family: str = ""
    first_line: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    spans: int = 0
    orphan_feedback: int = 0  # LangSmith feedback whose run is not in the file
    spilled: int = 0  # traces set aside on disk while their root span was awaited

    def text(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        orphans = (
            f"; {self.orphan_feedback} feedback records name runs not in the file (not used)"
            if self.orphan_feedback
            else ""
        )
        if self.spilled:
            orphans += (
                f"; {self.spilled} traces waited on disk for their root span "
                "(too many spans waiting in memory)"
            )
        return f"{self.family} ({kinds}){orphans}" if self.family else "nothing"


def traces(
    path: Path,
    source: str = "auto",
    detected: Detected | None = None,
    on_bytes: Callable[[int], None] = lambda n: None,
    digest: Digest | None = None,
) -> Iterator[tuple[Trace, int]]:
    """(trace, line) for every trace of the file, in bounded memory for span formats;
    `digest` is fed the bytes parsed (app/harness/ingest/records.py)."""
    if source != "auto" and source not in SOURCES:
        raise UserError(f"--source {source!r}: unknown (known: auto, {', '.join(SOURCES)})")
    found = detected if detected is not None else Detected()
    otlp = spans.SpanGroups(Source.OTLP)
    phoenix = spans.SpanGroups(Source.PHOENIX)
    smith = documents.LangSmithGroups()
    for rec in records(path, on_bytes, digest):
        for value, kind in _expand(rec, path):
            where = _where(path, rec)
            known = _check_family(kind, value, found, where, rec.line, source)
            try:
                yield from _one(known, value, rec, otlp, phoenix, smith, found)
            except (documents.RecordError, ValueError) as e:
                raise UserError(f"{where}: {e}") from None
            except RecursionError:
                raise UserError(f"{where}: record nested too deeply") from None
    try:
        for group in otlp.rest():
            yield spans.spans_to_trace(group, Source.OTLP), group[0].line
        for group in phoenix.rest():
            yield spans.spans_to_trace(group, Source.PHOENIX), group[0].line
        for trace in smith.traces():
            yield trace, 0
    except (documents.RecordError, ValueError) as e:
        raise UserError(f"{path}: {e}") from None
    except RecursionError:
        raise UserError(f"{path}: a record nested too deeply") from None
    found.orphan_feedback = smith.orphan_feedback()
    found.spilled = len(otlp.spilled) + len(phoenix.spilled)
    if not found.family:
        raise UserError(f"{path}:1: no records")


def _expand(rec: Record, path: Path) -> Iterator[tuple[Any, Kind | None]]:
    """A record, or the records inside a page / whole eval log / one resourceSpans item."""
    value = rec.value
    if isinstance(value, dict) and "scopeSpans" in value and "resourceSpans" not in value:
        value = {"resourceSpans": [value]}  # one item of a streamed OTLP document
    kind = classify(value)
    # a page on one line, as Phoenix's REST API returns it compact (`{"data": [...],
    # "next_cursor": ...}`): read as JSON Lines, it is one record whose items are the records
    paged = kind is None and isinstance(value, dict) and isinstance(value.get("data"), list)
    if kind == Kind.LANGFUSE_PAGE or paged:
        for item in value["data"]:
            yield item, classify(item)
    elif kind == Kind.INSPECT_LOG:
        model = str((value.get("eval") or {}).get("model") or "")
        for sample in value.get("samples") or []:
            if isinstance(sample, dict):
                sample.setdefault("_eval_model", model)
            yield sample, Kind.INSPECT_SAMPLE
    else:
        yield value, kind


def _where(path: Path, rec: Record) -> str:
    return f"{path}:{rec.line}" if rec.exact_line else f"{path}:{rec.line} (near)"


def _check_family(
    kind: Kind | None, value: Any, found: Detected, where: str, line: int, source: str
) -> Kind:
    if kind is None:
        raise UserError(
            f"{where}: unknown record: {describe_unknown(value)} is none of OTLP JSON, "
            "OpenInference/Phoenix spans, a Langfuse trace, a LangSmith run or feedback, an "
            "Inspect AI sample, or a chat-json conversation"
        )
    if source != "auto" and kind not in SOURCES[source]:
        raise UserError(f"{where}: this record is {FAMILY[kind]}, not --source {source}")
    family = FAMILY[kind]
    if not found.family:
        found.family, found.first_line = family, line
    elif family != found.family:
        raise UserError(
            f"{where}: mixed file: this record is {family}, the file began as "
            f"{found.family} (line {found.first_line}); ingest one format per file"
        )
    found.kinds[kind.value] = found.kinds.get(kind.value, 0) + 1
    return kind


def _one(
    kind: Kind,
    value: dict[str, Any],
    rec: Record,
    otlp: spans.SpanGroups,
    phoenix: spans.SpanGroups,
    smith: documents.LangSmithGroups,
    found: Detected,
) -> Iterator[tuple[Trace, int]]:
    if kind == Kind.OTLP:
        for span in spans.otlp_spans(value, rec.line):
            found.spans += 1
            for group in otlp.add(span):
                yield spans.spans_to_trace(group, Source.OTLP), group[0].line
        for group in otlp.end_record():
            yield spans.spans_to_trace(group, Source.OTLP), group[0].line
    elif kind == Kind.PHOENIX:
        found.spans += 1
        for group in phoenix.add(spans.phoenix_span(value, rec.line)):
            yield spans.spans_to_trace(group, Source.PHOENIX), group[0].line
    elif kind == Kind.LANGFUSE:
        found.spans += 1
        yield documents.langfuse_trace(value), rec.line
    elif kind == Kind.LANGSMITH_RUN:
        found.spans += 1
        smith.add_run(value)
    elif kind == Kind.LANGSMITH_FEEDBACK:
        smith.add_feedback(value)
    elif kind == Kind.INSPECT_SAMPLE:
        found.spans += 1
        yield documents.inspect_trace(value, str(value.get("_eval_model") or "")), rec.line
    elif kind == Kind.CHAT:
        found.spans += 1
        yield documents.chat_trace(value, rec.line), rec.line
