"""Python tools for the tool tests (run in sandboxed children, never imported by the harness)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def add(a: int, b: int) -> int:
    """Add two integers.

    a: the first number
    b: the second number
    """
    return a + b


def write_file(path: str, text: str) -> str:
    """Write a file of the working folder."""
    Path(path).write_text(text)
    return f"wrote {len(text)} bytes to {path}"


def read_file(path: str) -> str:
    """Read a file of the working folder."""
    return Path(path).read_text()


def hang() -> str:
    """Never returns."""
    time.sleep(600)
    return "unreachable"


def loud() -> str:
    """Prints 100 MB."""
    chunk = "x" * (1 << 20)
    for _ in range(100):
        sys.stdout.write(chunk)
    return "done"


def bomb() -> str:
    """Forks without end."""
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)


def escape(target: str) -> str:
    """Writes to an absolute path, outside its folder."""
    Path(target).write_text("escaped")
    return "written"


def spread(*values: int) -> int:
    """No schema can be read from *args."""
    return sum(values)


def counter_is_3(workdir: str) -> bool:
    """The oracle of the counter fixture."""
    return Path(workdir, "value.txt").read_text().strip() == "3"
