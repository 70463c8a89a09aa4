"""Crash injection and pauses for reliability tests, at named points of a run.

`SKILL_TRAINER_KILL_AT=name:n` kills the process (SIGKILL) the n-th time `name` is reached.
`SKILL_TRAINER_PAUSE_AT=name:FILE` holds the process the first time `name` is reached: it
creates `FILE.paused`, then waits until the test creates FILE (at most `PAUSE_LIMIT_S`), so a
test can act on a run it knows is live (a second writer, a signal) without racing the clock.
Unset (the normal case) each costs one comparison.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

_SPEC = os.environ.get("SKILL_TRAINER_KILL_AT", "")
_TARGET = (_SPEC.split(":")[0], int(_SPEC.split(":")[1])) if ":" in _SPEC else None
_PAUSE_SPEC = os.environ.get("SKILL_TRAINER_PAUSE_AT", "")
_PAUSE = tuple(_PAUSE_SPEC.split(":", 1)) if ":" in _PAUSE_SPEC else None
PAUSE_LIMIT_S = 600.0  # a test that never releases the run fails on its own timeout, not hangs
_seen: Counter[str] = Counter()


def reached(name: str) -> None:
    if _PAUSE is not None and name == _PAUSE[0]:
        _pause_once(Path(_PAUSE[1]))
    if _TARGET is None or name != _TARGET[0]:
        return
    _seen[name] += 1
    if _seen[name] == _TARGET[1]:
        os.kill(os.getpid(), signal.SIGKILL)


def _pause_once(release: Path) -> None:
    """Blocks the whole process, event loop included, on purpose: nothing of the run moves
    while the test acts on it."""
    global _PAUSE
    _PAUSE = None
    Path(f"{release}.paused").write_text(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
