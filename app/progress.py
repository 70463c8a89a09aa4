"""Progress bars for long work (rich, which ships with textual); silent when not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from app.sanitize import markup_safe


class _NullTask:
    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


class _Task:
    def __init__(self, progress: Progress, task_id: TaskID) -> None:
        self._progress, self._id = progress, task_id

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._id, n)

    def done(self) -> None:
        self._progress.remove_task(self._id)


# What Bars.task hands out: a live bar, or nothing when bars are off
BarTask = _Task | _NullTask


class Bars:
    """One live display; tasks come and go (epoch, step, questions)."""

    def __init__(self, enabled: bool | None = None) -> None:
        enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress = (
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[extra]}"),
                console=Console(stderr=True),
                transient=True,
            )
            if enabled
            else None
        )

    @contextmanager
    def live(self) -> Iterator[Bars]:
        if self._progress is None:
            yield self
            return
        with self._progress:
            yield self

    def task(self, description: str, total: int, extra: str = "") -> BarTask:
        if self._progress is None:
            return _NullTask()
        return _Task(
            self._progress,
            self._progress.add_task(
                markup_safe(description), total=total, extra=markup_safe(extra)
            ),
        )

    def set_extra(self, task: BarTask, extra: str) -> None:
        if self._progress is not None and isinstance(task, _Task):
            self._progress.update(task._id, extra=markup_safe(extra))


NO_BARS = Bars(enabled=False)
