"""Crash injection for reliability tests: SIGKILL this process at a named point.

`SKILL_TRAINER_KILL_AT=name:n` kills the process the n-th time `name` is reached. Unset (the
normal case) it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

_SPEC = os.environ.get("SKILL_TRAINER_KILL_AT", "")
_TARGET = (_SPEC.split(":")[0], int(_SPEC.split(":")[1])) if ":" in _SPEC else None
_seen: Counter[str] = Counter()


def reached(name: str) -> None:
    if _TARGET is None or name != _TARGET[0]:
        return
    _seen[name] += 1
    if _seen[name] == _TARGET[1]:
        os.kill(os.getpid(), signal.SIGKILL)
