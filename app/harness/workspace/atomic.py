"""Crash-safe file writes: a kill at any instant leaves the old file or the new one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.secrets import scrub


def check_no_links(root: Path, target: Path) -> Path:
    """`target`, if it lies inside `root` and no existing path below `root` on the way to it
    (the target included) is a symbolic link; else a UserError naming the link.

    Every writer calls this before it writes, so nothing is ever written through a link the
    command did not create. `root` itself (a workspace, an `--out`, a store: the folder the
    user named) may be a link."""
    root, target = Path(root), Path(target)
    try:
        parts = target.relative_to(root).parts
    except ValueError:
        raise UserError(f"{target}: not inside {root}; refusing to write it") from None
    if ".." in parts:
        raise UserError(f"{target}: leaves {root}; refusing to write it")
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise UserError(
                f"{current}: is a symbolic link; nothing is written through a link the "
                "command did not create (remove the link, or choose another folder)"
            )
    return target


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, `os.replace`, fsync the folder."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; readers (TUI, report) may be other users
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(scrub(text))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from a workspace file, or a UserError naming the file."""
    try:
        data = read_json(path)
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: corrupt {what}: {e}") from None
    except RecursionError:
        raise UserError(f"{path}: corrupt {what}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: corrupt {what}: expected a JSON object")
    return data


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
