"""Read-only views of a workspace: `report` (the summary `report` prints or writes as JSON) and
`html_report` (the self-contained web page, docs/serving.md#the-web-report)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import paths
from app.api._common import _workspace
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.errors import DamagedFile, UserError
from app.harness.workspace.atomic import write_text_atomic
from app.report import format_summary, workspace_summary


@dataclass(frozen=True)
class WorkspaceReport:
    """What `report` prints: `summary` is the JSON `report --json` writes, `text` the table."""

    workspace: Path
    summary: dict[str, Any]

    @property
    def text(self) -> str:
        return format_summary(self.summary)

    @property
    def spent_usd(self) -> float:
        return float(self.summary["spent_usd"])

    @property
    def best(self) -> dict[str, Any] | None:
        best: dict[str, Any] | None = self.summary["best"]
        return best


def report(workspace: str | Path) -> WorkspaceReport:
    """A read-only summary of a workspace: versions, runs, epochs, spend, progress."""
    root = _workspace(workspace)
    try:
        return WorkspaceReport(root, workspace_summary(root))
    except sqlite3.OperationalError as e:  # an emptied or foreign file: the tables are missing
        raise DamagedFile(
            f"{root / 'harness.db'}: not a complete harness log ({e}); restore it from a backup"
        ) from None


def html_report(workspace: str | Path, out: str | Path) -> Path:
    """Write the workspace's web report to `out`: one self-contained HTML page (read-only on
    the workspace; docs/serving.md#the-web-report). Returns the path written."""
    from app.harness.serving.page_data import gather
    from app.harness.serving.webpage import render_page

    root = _workspace(workspace)
    _expect("out", out, _is_path(out), "a file path")
    target = paths.absolute(out)
    if target.is_dir():
        raise UserError(f"--html {target}: a folder; give the file to write (e.g. report.html)")
    if not target.parent.is_dir():
        raise UserError(f"--html {target}: no folder {target.parent} to write into")
    try:
        page = render_page(gather(root), served=False)
    except sqlite3.OperationalError as e:
        raise DamagedFile(
            f"{root / 'harness.db'}: not a complete harness log ({e}); restore it from a backup"
        ) from None
    write_text_atomic(target, page)
    return target
