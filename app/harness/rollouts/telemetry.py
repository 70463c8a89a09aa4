"""Model-call telemetry into `llm_calls`, tagged with the run that made the call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.calls import CallRecord

current_run_id: ContextVar[str] = ContextVar("current_run_id", default="")
FLUSH_EVERY = 500


@contextmanager
def calls_logged_as(run_id: str) -> Iterator[None]:
    """Model calls made inside (tasks started inside included) are logged under `run_id`."""
    token = current_run_id.set(run_id)
    try:
        yield
    finally:
        current_run_id.reset(token)


class LogRecorder:
    """Buffers call rows and writes them in batches (one transaction per flush).

    `owner` is the run that pays for the calls (the train run for everything a training
    does; else the run that makes the call): see `spend_tag` and the response cache's ledger.
    """

    def __init__(self, log: HarnessLog) -> None:
        self.log = log
        self.owner: str | None = None
        self._rows: list[dict[str, Any]] = []
        self.totals = {
            "calls": 0,
            "cache_hits": 0,
            "cost_usd": 0.0,
            "tokens_in": 0,
            "tokens_out": 0,
        }

    def record_call(self, row: dict[str, Any]) -> None:
        row = {"run_id": current_run_id.get(), "at": now_iso(), **row}
        self._rows.append(row)
        self.totals["calls"] += 1
        self.totals["cache_hits"] += int(bool(row.get("cache_hit")))
        if not row.get("cache_hit"):
            self.totals["cost_usd"] += row.get("cost_usd") or 0.0
        self.totals["tokens_in"] += row.get("tokens_in") or 0
        self.totals["tokens_out"] += row.get("tokens_out") or 0
        if len(self._rows) >= FLUSH_EVERY:
            self.flush()

    def spend_tag(self) -> tuple[str, str]:
        """(run that pays, run that calls) for a paid call made now."""
        run_id = current_run_id.get()
        return self.owner or run_id, run_id

    def flush(self) -> None:
        rows, self._rows = self._rows, []
        self.log.add_calls([CallRecord.from_columns(r) for r in rows])
