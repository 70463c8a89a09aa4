"""Errors a user can act on. The CLI prints their message as one line, no traceback."""


class UserError(Exception):
    """Bad input or a refused request: exit code 2."""

    exit_code = 2


def first_leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGTERM) raised as an interrupt, so every writer unwinds as for Ctrl-C."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


STOP_SIGNAL: dict[str, str] = {}  # the signal that asked this process to stop, if any


def stop_reason(exc: BaseException) -> str:
    return getattr(exc, "reason", None) or STOP_SIGNAL.get("reason", "Ctrl-C")


def is_stop(exc: BaseException) -> bool:
    """Ctrl-C, SIGTERM, or the cancellation they cause inside an event loop."""
    import asyncio

    return isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)


class RunFailed(Exception):
    """A run started but could not finish (infrastructure, budget): exit code 1."""

    exit_code = 1


class StorageFull(RunFailed):
    """The disk (or SQLite's file) is full: exit code 1, the last committed state stays."""


class DamagedFile(UserError):
    """A workspace file is corrupt or not what it claims to be: exit code 2."""


def is_storage_failure(exc: BaseException) -> bool:
    """A full disk, a damaged file or an I/O error, as opposed to a bug in a statement."""
    import sqlite3

    codes = (
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
    )
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    return (code is not None and code & 0xFF in codes) or any(
        s in text for s in ("disk is full", "malformed", "not a database", "disk I/O error")
    )


def storage_error(path: object, exc: BaseException) -> Exception:
    """One user-facing error for an SQLite failure on the database at `path`."""
    import sqlite3

    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == sqlite3.SQLITE_FULL or "database or disk is full" in text:
        return StorageFull(
            f"{path}: disk full ({text}); every write so far is committed or "
            "rolled back whole: free space and rerun (training: --resume)"
        )
    if (
        code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
        or "malformed" in text
        or "not a database" in text
    ):
        return DamagedFile(
            f"{path}: damaged SQLite database ({text}); restore it from a "
            "backup, or `train --fresh` to archive the workspace and start over"
        )
    return RunFailed(f"{path}: SQLite error: {text}")
