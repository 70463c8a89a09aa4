"""Cheap change markers of a workspace, polled by the TUI to refresh only the screens whose
data changed (docs/architecture.md#commands-and-the-tui)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.harness.workspace.harness_log.reader import LogReader


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except (OSError, ValueError, OverflowError):
        return False
    return True


def mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def fingerprint(
    root: Path, lock: dict[str, Any] | None, reader: LogReader | None
) -> dict[str, Any]:
    """Per-kind change markers: MAX(id) on rowid tables, file mtimes, lock liveness."""
    fp: dict[str, Any] = {
        "checkpoint": mtime(root / "checkpoint.json"),
        "manifest": mtime(root / "manifest.json"),
        "versions": (mtime(root / "skills"), mtime(root / "prompts")),
    }
    fp["status"] = (
        mtime(root / "train.lock"),
        pid_alive(lock["pid"]) if lock and isinstance(lock.get("pid"), int) else None,
    )
    if reader is None:
        return fp
    marks = reader.marks()
    fp["steps"] = (marks.steps, marks.gate_evidence)
    fp["predictions"] = marks.predictions
    fp["epochs"] = marks.epochs
    fp["calls"] = marks.calls
    fp["runs"] = (marks.runs, marks.last_runs)
    fp["status"] = (*fp["status"], marks.last_runs)
    return fp
