"""loguru: concise console lines, a log file per workspace, secrets scrubbed from both."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from loguru import logger

from app.sanitize import visible
from app.secrets import scrub

if TYPE_CHECKING:  # loguru defines its record types in a stub only
    from loguru import Record


def _scrub_patch(record: Record) -> None:
    # secrets out, and no control character from data (question text, names) reaches a terminal
    record["message"] = visible(scrub(record["message"]))


def scrub_log_records() -> None:
    """Every record's message scrubbed before any sink sees it, whichever sinks the caller has
    (the API leaves loguru's own stderr handler in place). Replaces a caller's own patcher."""
    logger.configure(patcher=_scrub_patch)


def configure_console(verbose: bool = False) -> None:
    logger.remove()
    scrub_log_records()
    level = "DEBUG" if verbose else "INFO"
    fmt = "<level>{level: <7}</level> {message}" if verbose else "{message}"
    # A callable sink looks sys.stderr up on every write, so rich's live progress display
    # (which swaps sys.stderr for a proxy) keeps log lines above its bars.
    logger.add(
        _to_current_stderr,
        level=level,
        format=fmt,
        colorize=sys.stderr.isatty(),
    )


def _to_current_stderr(message: str) -> None:
    sys.stderr.write(message)


class QuietFileSink:
    """The workspace log file. A write that fails (disk full, read-only mount) turns the file
    log off for this process without a word: the command's own error says what went wrong,
    and loguru would otherwise print a "Logging error" dump for every later line.
    Rotates at `max_bytes`, keeping `keep` old files (name.1 newest)."""

    def __init__(self, path: Path, max_bytes: int = 20 * 1024 * 1024, keep: int = 5) -> None:
        self.path, self.max_bytes, self.keep = Path(path), max_bytes, keep
        self._file: TextIO | None = None
        self.broken = False
        self.write("")  # create the file now, as a plain file sink would

    def write(self, message: str) -> None:
        if self.broken:
            return
        try:
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            if not message:
                return
            # scrubbed here as well: the file must stay clean even when no patcher is set
            self._file.write(scrub(message))
            self._file.flush()
            if self._file.tell() > self.max_bytes:
                self._rotate()
        except (OSError, ValueError):
            self.broken = True
            self.stop()

    def _rotate(self) -> None:
        self.stop()
        for n in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))

    def stop(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError, ValueError):
                f.close()


def add_workspace_log(path: Path) -> int:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    return logger.add(
        QuietFileSink(path),
        level="DEBUG",
        enqueue=False,
        catch=False,
        format="{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {name}:{line} {message}",
    )
