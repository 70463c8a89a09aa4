"""Progress bars for long work (rich, which ships with textual); silent when not a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from app.sanitize import markup_safe


def eta_seconds(elapsed_s: float, done: float, total: float) -> float | None:
    """Time left at the pace so far: elapsed / done x what remains; None before anything is
    done (no pace yet)."""
    if done <= 0 or elapsed_s < 0:
        return None
    return elapsed_s / done * max(total - done, 0)


def eta_text(seconds: float | None) -> str:
    """`ETA 1h02m`, `ETA 3m05s`, `ETA 12s`; empty when there is no pace yet."""
    if seconds is None:
        return ""
    s = round(seconds)
    if s >= 3600:
        return f"ETA {s // 3600}h{s % 3600 // 60:02d}m"
    return f"ETA {s // 60}m{s % 60:02d}s" if s >= 60 else f"ETA {s}s"


class EtaColumn(ProgressColumn):
    """Each bar's ETA from its own pace (elapsed / done x remaining)."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.elapsed is None:
            return Text("")
        return Text(eta_text(eta_seconds(task.elapsed, task.completed, task.total)))


@dataclass(frozen=True)
class CallsEta:
    """A whole run's ETA from the model calls `estimate` expected of it: the pace of this
    process's new calls applied to the calls still expected (`done_before`: the run's new
    calls made by earlier processes, for a resumed run)."""

    train_id: str
    expected: int
    done_before: int
    started: float  # time.monotonic() when this process began the run

    def text(self, done_here: int, now: float | None = None) -> str:
        elapsed = (time.monotonic() if now is None else now) - self.started
        done = self.done_before + done_here
        left = max(self.expected - done, 0)
        eta = eta_text(eta_seconds(elapsed, done_here, done_here + left))
        return f"{done}/{self.expected} calls expected" + (f", {eta}" if eta else "")


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
                EtaColumn(),
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
