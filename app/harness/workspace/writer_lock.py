"""One writer per workspace: an exclusive kernel lock on `<workspace>/writer.lock`.

Every command that writes a workspace (train, train --resume/--fresh, infer, eval, diagnose,
promote, demo) holds this lock for its whole life. It is an `flock`, so the kernel releases it
when the holder exits for any reason, SIGKILL included: there is no stale lock to clean up.
The lock file also names its holder (pid, command, start time) so a refused second writer can
say who is writing. Readers (`report`, the TUI) never take it and never wait for it.
Whoever takes it cleans what a writer killed with SIGKILL left (app/harness/workspace/leftovers.py).
Taking it first refuses a workspace where a path commands write is a symbolic link
(app.harness.workspace.workspace.check_workspace_links), before the lock file itself is opened.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.workspace.clock import now_iso
from app.harness.workspace.leftovers import clean_dead_writer
from app.harness.workspace.workspace import check_workspace_links

LOCK_FILE = "writer.lock"


class WorkspaceBusy(UserError):
    """Another process holds the workspace's writer lock (exit code 2)."""


class WriterLock:
    """`with WriterLock(root, "train --resume"):` -- refuses at once if another writer holds it."""

    def __init__(self, root: Path, command: str) -> None:
        self.root = Path(root)
        self.command = command
        self.started_at = now_iso()
        self._fd: int | None = None
        self._held_in: Path | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> WriterLock:
        if not (self.root / "manifest.json").is_file():
            raise UserError(f"{self.root}: not a workspace (no manifest.json)")
        check_workspace_links(self.root)  # before the lock file itself is opened
        self._fd = self._lock(self.root)
        self._held_in = self.root
        clean_dead_writer(self.root, self.command)  # only a holder may: what it finds is dead
        return self

    def move_into(self, folder: Path) -> None:
        """Lock `folder` (a workspace being built, not yet visible), then drop the old lock.

        `train --fresh` and `demo` build the new workspace next to the old one and rename it
        into place; locking it before the rename means no other writer can slip in between.
        """
        fd = self._lock(Path(folder))
        self.release()
        self._fd, self._held_in = fd, Path(folder)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the holder line must not outlive the holder
        os.close(fd)  # closing the last descriptor releases the flock

    def _lock(self, folder: Path) -> int:
        path = folder / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder_when_written(fd)
            os.close(fd)
            raise WorkspaceBusy(
                f"{self.root}: another process is writing this workspace "
                f"({describe_holder(holder)}); wait for it to finish or stop "
                "it, then rerun"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._write_holder(fd)
        return fd

    def _write_holder(self, fd: int) -> None:
        line = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": self.command,
                "started_at": self.started_at,
            }
        )
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (line + "\n").encode(), 0)
        except OSError:  # disk full: the lock holds all the same, only the holder line is lost
            pass

    def __enter__(self) -> WriterLock:
        if not self.held:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder_when_written(fd: int, tries: int = 20, pause_s: float = 0.025) -> dict[str, Any]:
    """The holder line; a holder that has just taken the lock writes it a moment later, so a
    refused writer waits up to half a second for it rather than say "still starting"."""
    holder = _read_holder(fd)
    for _ in range(tries):
        if holder.get("pid"):
            break
        time.sleep(pause_s)
        holder = _read_holder(fd)
    return holder


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def describe_holder(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "holder still starting"
    return (
        f"pid {holder.get('pid')}, `{holder.get('command', '?')}`, started "
        f"{holder.get('started_at', '?')}"
    )


def holder(root: Path) -> dict[str, Any] | None:
    """Who holds the workspace's writer lock, or None; never waits and never takes it."""
    path = Path(root) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = _read_holder(fd)
    finally:
        os.close(fd)
    return data or None
