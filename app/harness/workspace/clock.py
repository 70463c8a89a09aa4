"""The timestamp every workspace file and log row carries: UTC, ISO 8601, whole seconds.

A module of its own, below everything that writes, so the log and the workspace (which both
stamp rows) need not import each other.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
