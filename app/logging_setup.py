"""loguru: concise console lines, a log file per workspace, secrets scrubbed from both."""

from __future__ import annotations

import sys
from pathlib import Path

from loguru import logger

from app.sanitize import visible
from app.secrets import scrub


def _scrub_patch(record) -> None:
    # secrets out, and no control character from data (question text, names) reaches a terminal
    record["message"] = visible(scrub(record["message"]))


def configure_console(verbose: bool = False) -> None:
    logger.remove()
    logger.configure(patcher=_scrub_patch)
    level = "DEBUG" if verbose else "INFO"
    fmt = "<level>{level: <7}</level> {message}" if verbose else "{message}"
    # A callable sink looks sys.stderr up on every write, so rich's live progress display
    # (which swaps sys.stderr for a proxy) keeps log lines above its bars.
    logger.add(lambda message: sys.stderr.write(message), level=level, format=fmt,
               colorize=sys.stderr.isatty())


def add_workspace_log(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return logger.add(path, level="DEBUG", rotation="20 MB", retention=5, enqueue=False,
                      format="{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {name}:{line} {message}")
