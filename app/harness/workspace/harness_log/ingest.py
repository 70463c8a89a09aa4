"""The `ingested_traces` table: traces ingested from observability exports, one row per
normalised trace under its content-addressed id (app/harness/ingest/,
docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.harness.workspace.harness_log.connection import LogConnection, LogRecord


@dataclass(frozen=True)
class IngestedTraceRecord(LogRecord):
    TABLE = "ingested_traces"

    trace_id: str
    source: str
    native_id: str | None
    session_id: str | None
    family: str | None
    task: str
    final_answer: str
    model: str | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    latency_s: float | None
    failed: int
    n_steps: int
    trace_json: str
    file: str
    line: int
    ingest_run: str
    ingested_at: str

    def as_dict(self) -> dict[str, Any]:
        """The columns by name (the export formats and lineage hashes take a mapping)."""
        return dataclasses.asdict(self)


class IngestTable(LogConnection):
    """Writes and reads of ingested traces."""

    def add_ingested_traces(self, rows: Sequence[IngestedTraceRecord]) -> None:
        self.insert(rows)

    def known_trace_ids(self, trace_ids: Sequence[str]) -> set[str]:
        """Those of `trace_ids` already ingested."""
        if not trace_ids:
            return set()
        marks = ",".join("?" for _ in trace_ids)
        return {
            r[0]
            for r in self.conn.execute(
                f"SELECT trace_id FROM ingested_traces WHERE trace_id IN ({marks})",
                tuple(trace_ids),
            )
        }

    def ingested_traces(self, ingest_run: str) -> list[IngestedTraceRecord]:
        """An ingest run's traces by trace id."""
        return [
            IngestedTraceRecord(**r)
            for r in self.query(
                "SELECT * FROM ingested_traces WHERE ingest_run = ? ORDER BY trace_id",
                (ingest_run,),
            )
        ]

    def ingested_trace(self, trace_id: str, ingest_run: str) -> IngestedTraceRecord | None:
        """The trace as `ingest_run` stored it."""
        rows = self.query(
            "SELECT * FROM ingested_traces WHERE trace_id = ? AND ingest_run = ?",
            (trace_id, ingest_run),
        )
        return IngestedTraceRecord(**rows[0]) if rows else None

    def recorded_model(self, trace_id: str) -> tuple[str | None] | None:
        """(the model the trace recorded,) or None when no such trace was ingested."""
        row = self.conn.execute(
            "SELECT model FROM ingested_traces WHERE trace_id = ?", (trace_id,)
        ).fetchone()
        return (row[0],) if row is not None else None
