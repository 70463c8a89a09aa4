"""Process entry point (main.py, the `skill-trainer` script); imports only the standard
library, so it is loaded before anything slow.

Importing the CLI takes a few tenths of a second (loguru, the harness, sqlite-utils), and the
CLI installs its own Ctrl-C and SIGTERM handling only once it runs (`app.cli.main`). A Ctrl-C
that lands in between would end in a KeyboardInterrupt traceback; here it is one line and
exit code 130 (128 + SIGINT, what shells report for an interrupted command).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

INTERRUPTED = 130
STARTING = "stopped by Ctrl-C while starting; nothing was done"


class _CtrlCNoted:
    """A SIGINT handler for the import: it only notes the Ctrl-C. Python's own handler raises
    KeyboardInterrupt wherever the main thread is, and during an import that can be a weakref
    callback of importlib's module locks, where the exception is printed as "Exception
    ignored" with a traceback and then dropped: the command went on as if nothing happened."""

    def __init__(self) -> None:
        self.pressed = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True


def run() -> int:
    noted = _CtrlCNoted()
    # an ignored Ctrl-C (a background job) stays ignored; only Python's default is replaced
    replaced = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if replaced:
        signal.signal(signal.SIGINT, noted)
    try:
        from app.cli import entry
    except KeyboardInterrupt:
        return _interrupted(STARTING)
    finally:
        if replaced:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if noted.pressed:
        return _interrupted(STARTING)
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
