"""What a writer killed with SIGKILL left behind, cleaned by the next writer.

A writer that dies without running its `finally` blocks (kill -9, power loss, the OOM killer)
can leave: scratch folders in the workspace's `.staging/` (a version being staged, estimate's
dry-run copies), a hidden staging folder and an empty output folder of an export outside the
workspace, and a run still marked `running` in the log. Every writer holds the workspace's
writer lock (app/harness/workspace/writer_lock.py), so whatever the next lock holder finds of
these belongs to a process that is gone: `WriterLock.acquire` calls `clean_dead_writer` and
says what it removed.

A writer that stages outside the workspace first notes it in `.staging/<name>.out.json`
(`note_out_staging`), so the cleaner knows the folder without searching for it. The note is
trusted only as far as it can be checked: the folder must be a real (not linked) `.export-*`
child of the noted output folder, and the output folder is removed only when the writer made
it and it is empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from loguru import logger

from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.harness_log import HarnessLog

STAGING = ".staging"
OUT_NOTE_SUFFIX = ".out.json"
OUT_STAGING_PREFIX = ".export-"
# Runs that nothing resumes: left `running` by a dead process, they are marked failed.
# Train and fork runs are resumable (`--resume`) and keep their state.
UNRESUMABLE_RUN_KINDS = ("serve", "eval", "infer", "judge_quality")


def note_out_staging(root: Path, staging: Path, out_dir: Path, created: bool) -> Path:
    """Note, before it is made, a staging folder a writer of `root` makes outside it."""
    note = Path(root) / STAGING / f"{staging.name}{OUT_NOTE_SUFFIX}"
    note.parent.mkdir(exist_ok=True)
    record = {
        "staging": str(staging.absolute()),
        "out": str(out_dir.absolute()),
        "created": created,
    }
    write_json_atomic(note, record)
    return note


def clean_dead_writer(root: Path, command: str) -> list[str]:
    """Remove what dead writers of `root` left; one description per thing cleaned.

    Only a writer-lock holder may call this. A failure to clean is logged, never raised: the
    command that took the lock goes on and reports any real damage itself.
    """
    cleaned: list[str] = []
    try:
        cleaned += _clean_staging_folder(Path(root))
        cleaned += _close_dead_runs(Path(root), command)
    except OSError as e:
        logger.warning("{}: could not clean what a dead writer left: {}", root, e)
    if cleaned:
        logger.warning("{}: cleaned what a process that died left: {}", root, "; ".join(cleaned))
    return cleaned


def _clean_staging_folder(root: Path) -> list[str]:
    staging = root / STAGING
    if not staging.is_dir() or staging.is_symlink():
        return []
    cleaned = []
    for entry in sorted(staging.iterdir()):
        if entry.name.endswith(OUT_NOTE_SUFFIX):
            cleaned += _clean_out_staging(entry)
            entry.unlink(missing_ok=True)
            continue
        size = _size_text(entry)
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        cleaned.append(f"removed {STAGING}/{entry.name} ({size})")
    return cleaned


def _clean_out_staging(note: Path) -> list[str]:
    try:
        record = json.loads(note.read_text(encoding="utf-8"))
        staging, out = Path(record["staging"]), Path(record["out"])
        created = record["created"] is True
    except (OSError, ValueError, KeyError, TypeError):
        return [f"dropped the unreadable note {STAGING}/{note.name}"]
    cleaned = []
    if staging.parent == out and staging.name.startswith(OUT_STAGING_PREFIX):
        if staging.is_dir() and not staging.is_symlink():
            size = _size_text(staging)
            shutil.rmtree(staging, ignore_errors=True)
            cleaned.append(f"removed {staging} ({size})")
        if created and out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            out.rmdir()
            cleaned.append(f"removed the empty output folder {out}")
    return cleaned


def _close_dead_runs(root: Path, command: str) -> list[str]:
    db = root / "harness.db"
    if not db.is_file():
        return []
    try:
        with HarnessLog(db) as log:
            ids = log.close_dead_runs(UNRESUMABLE_RUN_KINDS, command)
    except Exception as e:  # a damaged log is the command's own error to report, in its words
        logger.debug("{}: dead runs not checked: {}", db, e)
        return []
    return [f"marked run {run_id} failed (its process died)" for run_id in ids]


def _size_text(path: Path) -> str:
    total = 0
    if path.is_dir() and not path.is_symlink():
        for folder, _, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
    else:
        with contextlib.suppress(OSError):
            total = os.lstat(path).st_size
    return f"{total / 1e6:.1f} MB" if total >= 100_000 else f"{total} bytes"
