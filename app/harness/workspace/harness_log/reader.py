"""The read side of the harness log (docs/architecture.md#the-harness-log): the read-only
reader `report`, the API and the TUI open, each of its queries returning typed rows.

`LogReader` opens the log read-only (`HarnessLog(readonly=True)`: a `mode=ro` connection that
never migrates), so a log written by an older schema is read as it is and its bytes are left
alone; a query that needs a column or table a later migration added checks for it first. Its
queries live with their tables: runs in `runs.py` (`RunViews`), epochs and steps in `steps.py`
(`StepViews`), predictions in `predictions.py` (`PredictionViews`), model calls in `calls.py`
(`CallReader`), forks in `forks.py` (`ForkReader`); only the change marks, which span tables,
are here. A schema change touches its migration (`schema.py`) and the table's module, nothing
outside this package.

The rows and the query parameters are in `rows.py`. Nothing here loads a
whole table for the TUI: pages are bounded (LIMIT, keyset on indexed
columns) and call totals are summed over an id range so the caller can keep them incrementally.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from app.harness.workspace.harness_log.calls import CallReader
from app.harness.workspace.harness_log.forks import ForkReader
from app.harness.workspace.harness_log.log import HarnessLog
from app.harness.workspace.harness_log.predictions import PredictionViews
from app.harness.workspace.harness_log.rows import (
    LogMarks,
)
from app.harness.workspace.harness_log.runs import RunViews
from app.harness.workspace.harness_log.steps import StepViews
from app.sanitize import visible_sqlite_text

# Interrupt a long query every this many SQLite VM steps to check for cancellation.
_PROGRESS_STEPS = 20_000


class QueryCancelled(Exception):
    """A long query was interrupted (the worker that asked for it was cancelled)."""


# -- the reader -------------------------------------------------------------------------------
def open_reader(
    path: Path,
    *,
    printable: bool = False,
    cancelled: Callable[[], bool] | None = None,
    time_limit: float | None = None,
) -> LogReader:
    """A read-only reader of the log at `path`. `printable` makes every string it returns
    printable (the TUI shows them); `cancelled`/`time_limit` interrupt a long query."""
    log = HarnessLog(path, readonly=True)
    if printable:
        log.conn.text_factory = visible_sqlite_text
    if cancelled is not None or time_limit is not None:
        deadline = time.monotonic() + time_limit if time_limit else None

        def check() -> int:
            if cancelled is not None and cancelled():
                return 1
            return 1 if deadline is not None and time.monotonic() > deadline else 0

        log.conn.set_progress_handler(check, _PROGRESS_STEPS)
    return LogReader(log)


class LogReader(RunViews, StepViews, PredictionViews):
    """Typed read-only queries over one open log (see `open_reader`): runs (`runs.py`),
    epochs and steps (`steps.py`) and predictions (`predictions.py`); model calls and spend in
    `calls`, forks in `forks`, every table's own reads in `tables`."""

    def __init__(self, log: HarnessLog) -> None:
        super().__init__(log)
        self.calls = CallReader(log)
        self.forks = ForkReader(log)

    @property
    def tables(self) -> HarnessLog:
        """Every table's typed reads on this reader's read-only connection (the reads only a
        report needs are kept with their table, not here)."""
        return self.log

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[LogReader]:
        """Turns SQLite's `interrupted` (the progress handler said stop) into QueryCancelled."""
        try:
            yield self
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e):
                raise QueryCancelled(str(e)) from None
            raise

    def check_integrity(self) -> None:
        self.log.check_integrity()

    # -- change marks -----------------------------------------------------------------------
    def marks(self) -> LogMarks:
        row = self.log.conn.execute(
            "SELECT (SELECT MAX(id) FROM step_reports), (SELECT MAX(id) FROM gate_evidence),"
            " (SELECT MAX(id) FROM predictions), (SELECT MAX(id) FROM epoch_reports),"
            " (SELECT MAX(id) FROM llm_calls), (SELECT MAX(seq) FROM _runs)"
        ).fetchone()
        last_runs = self._scalar(
            "SELECT group_concat(status || ':' || COALESCE(finished_at, '')) FROM "
            "(SELECT status, finished_at FROM _runs ORDER BY seq DESC LIMIT 3)"
        )
        steps, evidence, predictions, epochs, calls, runs = row
        return LogMarks(steps, evidence, predictions, epochs, calls, runs, last_runs)
