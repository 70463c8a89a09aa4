"""`distill`: a teacher model's verified winners handed to a student as memories, and the student
trained (app/distill.py; docs/distill.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.api._common import _budget_is_run_failed, _run_sync, _workspace
from app.api_args import ConfigSource, workspace_config
from app.api_args import expect as _expect
from app.errors import UserError
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars

if TYPE_CHECKING:
    from app.distill import DistillOutcome


def distill(
    workspace: str | Path,
    teacher: str,
    student: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DistillOutcome:
    """Probe teacher vs student on validation; on `distill`, store the teacher's verified
    diagnosis-pool winners as memories, train the student, and write `analyses/distill.json`
    (docs/distill.md). `outcome.exit_code` is the verdict's."""
    return _run_sync(
        distill_async, workspace, teacher, student, config, overrides=overrides, progress=progress
    )


async def distill_async(
    workspace: str | Path,
    teacher: str,
    student: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = False,
) -> DistillOutcome:
    from app.distill import run_distill

    for name, model in (("teacher", teacher), ("student", student)):
        _expect(name, model, isinstance(model, str) and bool(model.strip()), "a model name")
    if teacher == student:
        raise UserError(f"teacher and student are the same model ({teacher!r})")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "distill"), _budget_is_run_failed():  # one budget for all its runs
        return await run_distill(root, run_config, teacher, student, Bars(enabled=progress))
