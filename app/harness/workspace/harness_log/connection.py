"""The harness log's connection (docs/architecture.md#the-harness-log): open, migrate, lock,
transact, and the few primitives the table modules build their statements on.

WAL mode so readers (TUI, `report`) never block the writer; one writer connection per process
guarded by a lock; inserts batched inside one transaction each. Only the modules of this
package run SQL against the log (tests/test_sql_in_store.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import sqlite_utils

from app.errors import DamagedFile, UserError, is_storage_failure, storage_error
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log.schema import MIGRATIONS, SCHEMA_VERSION
from app.secrets import process_secrets
from core.redact import redact, redact_url_credentials

if TYPE_CHECKING:
    from app.harness.workspace.harness_log.log import HarnessLog

BUSY_TIMEOUT_MS = 30_000
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024  # quick_check reads every page: ~1 s per GB


@dataclasses.dataclass(frozen=True)
class LogRecord:
    """A row to write to one table (`TABLE`); its fields are the table's columns, `id` left
    to SQLite. Each table module defines its own and the one function that builds it."""

    TABLE: ClassVar[str]

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> Self:
        """The record of a row given by column name; a column it lacks is NULL, a key that
        is no column is left out."""
        fields = dataclasses.fields(cls)
        return cls(**{f.name: columns.get(f.name.removesuffix("_")) for f in fields})


_COLUMNS: dict[type[LogRecord], tuple[str, ...]] = {}
_GETTERS: dict[type[LogRecord], operator.attrgetter[Any]] = {}


def record_columns(kind: type[LogRecord]) -> tuple[str, ...]:
    """The record's columns: its field names, a trailing `_` dropped (`class_` is `class`)."""
    if kind not in _COLUMNS:
        _COLUMNS[kind] = tuple(f.name.removesuffix("_") for f in dataclasses.fields(kind))
    return _COLUMNS[kind]


def _values_of(kind: type[LogRecord]) -> operator.attrgetter[Any]:
    """A record's values in column order, as one tuple (attrgetter: no per-field call)."""
    if kind not in _GETTERS:
        _GETTERS[kind] = operator.attrgetter(*(f.name for f in dataclasses.fields(kind)))
    return _GETTERS[kind]


def _record_values(records: Sequence[LogRecord], columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Row tuples with secret values replaced: nothing secret is ever stored in the log."""
    secrets = process_secrets()
    values = _values_of(type(records[0]))
    return [
        tuple(_clean(v, secrets) if isinstance(v, str) else v for v in values(r)) for r in records
    ]


def _clean(text: str, secrets: tuple[str, ...]) -> str:
    if not text.isascii():  # a lone surrogate from a model reply cannot be stored as UTF-8
        text = text.encode("utf-8", "replace").decode("utf-8")
    return redact_url_credentials(redact(text, secrets) if secrets else text)


def escape_like(text: str) -> str:
    """Escape LIKE wildcards so `..._s1` never matches `..._s10` and `%` matches only itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class LogConnection:
    """One connection to the log: the writer's (one per process) or a read-only one. The
    table modules add their statements to it (app/harness/workspace/harness_log/log.py)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly:
            # A URI, escaped: `#`, `?` and `%` in a folder name are path, not URI syntax.
            uri = f"{self.path.absolute().as_uri()}?mode=ro"
            conn = sqlite3.connect(
                uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
                isolation_level=None,
            )
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.RLock()
        try:
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self.conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # garbage fails
            if not readonly:
                # Trajectories are KBs each: 32 KiB pages keep them off overflow chains
                # (about 1.5-2x the insert rate of 4 KiB pages). Only takes effect on creation.
                self.conn.execute("PRAGMA page_size=32768")
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise storage_error(self.path, e) from None
        except BaseException:
            conn.close()
            raise

    @contextlib.contextmanager
    def _txn(self) -> Iterator[None]:
        """One transaction (a savepoint when nested); SQLite failures become one-line errors."""
        with self._lock:
            try:
                with self.db.atomic():
                    yield
            except sqlite3.DatabaseError as e:
                if not is_storage_failure(e):
                    raise  # a bug in a statement, not storage
                raise storage_error(self.path, e) from None

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """Several writes as one transaction: all of them land, or none (ingest of one file)."""
        return self._txn()

    def check_integrity(self, max_bytes: int = QUICK_CHECK_MAX_BYTES) -> None:
        """`PRAGMA quick_check` where it is cheap (a log up to `max_bytes`): a bit-rotted log
        is refused with one line instead of being read as if it were fine."""
        try:
            if self.path.stat().st_size > max_bytes:
                return
            problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as e:
            raise storage_error(self.path, e) from None
        if problems != ["ok"]:
            raise DamagedFile(
                f"{self.path}: damaged SQLite database (quick_check: "
                f"{'; '.join(problems)}); restore it from a backup, or "
                "`train --fresh` to archive the workspace and start over"
            )

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._txn():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY,"
                " description TEXT, applied_at TEXT)"
            )
            done = self.schema_version()
            if done > SCHEMA_VERSION:
                raise UserError(
                    f"{self.path}: log schema {done} is newer than this "
                    f"skill-trainer supports ({SCHEMA_VERSION})"
                )
            for version, (description, statements) in enumerate(MIGRATIONS, start=1):
                if version <= done:
                    continue
                for sql in statements:
                    self.conn.execute(sql)
                self.conn.execute(
                    "INSERT INTO _migrations VALUES (?, ?, ?)", (version, description, now_iso())
                )

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT MAX(version) FROM _migrations").fetchone()
        return row[0] or 0

    # -- primitives of the table modules ----------------------------------------------------
    def insert(self, records: Sequence[LogRecord], *, verb: str = "INSERT") -> None:
        """All-or-nothing batched insert of one table's records (one transaction,
        executemany); `verb` "INSERT OR IGNORE" skips rows whose unique key is present,
        "INSERT OR REPLACE" replaces them."""
        if not records:
            return
        kind = type(records[0])
        columns = record_columns(kind)
        sql = (
            f"{verb} INTO {kind.TABLE} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})"
        )
        with self._txn():
            self.conn.executemany(sql, _record_values(records, columns))

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        """Rows as dicts: for the table modules to turn into their typed rows."""
        try:
            cur = self.conn.execute(sql, tuple(params))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        except sqlite3.DatabaseError as e:
            if not is_storage_failure(e):
                raise
            raise storage_error(self.path, e) from None

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, tuple(params)).fetchone()[0]

    def _column(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The first column of every row, empty values left out."""
        return [r[0] for r in self.conn.execute(sql, tuple(params)) if r[0]]

    def _delete_run_rows(self, table: str, run_id: str) -> None:
        self.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    def has_table(self, name: str) -> bool:
        return bool(self.query("SELECT name FROM sqlite_master WHERE name = ?", (name,)))

    def columns(self, table: str) -> set[str]:
        return {r["name"] for r in self.query(f"PRAGMA table_info({table})")}


class LogQueries:
    """A read-only view over one open log; the views of a reader share its connection."""

    def __init__(self, log: HarnessLog) -> None:
        self.log = log

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.log.query(sql, params)

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.log._scalar(sql, params)

    def _column(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.log._column(sql, params)

    def has_table(self, name: str) -> bool:
        return self.log.has_table(name)

    def columns(self, table: str) -> set[str]:
        return self.log.columns(table)
