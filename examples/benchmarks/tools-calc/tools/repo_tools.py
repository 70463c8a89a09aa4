"""Tools of the tools-calc example: they act inside the rollout's copy of the fixture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def read_file(path: str) -> str:
    """Read a file of the repository.

    path: the file's path, relative to the repository root
    """
    return Path(path).read_text()


def write_file(path: str, text: str) -> str:
    """Replace a file of the repository.

    path: the file's path, relative to the repository root
    text: the file's new content
    """
    Path(path).write_text(text)
    return f"wrote {len(text)} characters to {path}"


def run_tests() -> str:
    """Run the repository's tests and return their output."""
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return f"exit {done.returncode}\n{done.stderr[-2000:]}"
