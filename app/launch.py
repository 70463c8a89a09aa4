"""Process entry point (main.py, the `skill-trainer` script); imports only the standard
library, so it is loaded before anything slow.

Importing the CLI takes a few tenths of a second (loguru, the harness, sqlite-utils), and the
CLI installs its own Ctrl-C and SIGTERM handling only once it runs (`app.cli.main`). A Ctrl-C
that lands in between would end in a KeyboardInterrupt traceback; here it is one line and
exit code 130 (128 + SIGINT, what shells report for an interrupted command).
"""

from __future__ import annotations

import sys

INTERRUPTED = 130


def run() -> int:
    try:
        from app.cli import entry
    except KeyboardInterrupt:
        return _interrupted("stopped by Ctrl-C while starting; nothing was done")
    try:
        return entry()
    except KeyboardInterrupt:  # outside the command itself (parsing arguments, set-up)
        return _interrupted("stopped by Ctrl-C")


def _interrupted(message: str) -> int:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the exit code still says it
        pass
    return INTERRUPTED
