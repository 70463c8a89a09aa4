"""The harness log, `harness.db` (docs/architecture.md#the-harness-log): the only code that
runs SQL against it (tests/test_sql_in_store.py).

- `schema`: the migrations; `connection`: open, lock, transact, insert.
- one module per table or small group of tables, each with its frozen row types (the rows it
  writes, with the one function that builds them, and the rows it reads) and its statements:
  `runs`, `predictions`, `calls`, `gates`, `steps`, `forks`, `memories`, `ingest`.
- `log`: `HarnessLog`, every table's writes and reads on one connection.
- `reader`: `open_reader` and `LogReader`, the read-only views `report`, the API and the TUI
  use (their rows and query parameters in `rows`).
"""

from app.harness.workspace.harness_log.connection import escape_like
from app.harness.workspace.harness_log.log import RECORD_TYPES, HarnessLog
from app.harness.workspace.harness_log.reader import LogReader, QueryCancelled, open_reader
from app.harness.workspace.harness_log.runs import Resume, RunRecord, RunStatus
from app.harness.workspace.harness_log.schema import MIGRATIONS, RUN_TABLES, SCHEMA_VERSION

__all__ = [
    "MIGRATIONS",
    "RECORD_TYPES",
    "RUN_TABLES",
    "SCHEMA_VERSION",
    "HarnessLog",
    "LogReader",
    "QueryCancelled",
    "Resume",
    "RunRecord",
    "RunStatus",
    "escape_like",
    "open_reader",
]
