"""What the TUI says about a workspace's training: the latest train run's shown status (from
train.lock and the log) and the Overview's decision counts."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.harness.training.vocabulary import Count, SkipAction
from app.harness.workspace.harness_log import RunStatus
from app.harness.workspace.harness_log.reader import LogReader
from app.harness.workspace.harness_log.rows import EpochRow
from app.sanitize import visible
from app.tui.fingerprints import pid_alive
from core.evolution.gate import GateAction


class ShownStatus(StrEnum):
    """The latest train run's status as the TUI shows it (from train.lock and `_runs`)."""

    RUNNING = "running"  # train.lock names a live process on this host
    STOPPED = "stopped"  # stopped, or marked running with no live process: resumable
    FINISHED = "finished"
    FAILED = "failed"
    NOT_STARTED = "not started"
    UNKNOWN = "unknown"  # train.lock is held on another host


SHOWN_STATUS: dict[str, ShownStatus] = {
    RunStatus.RUNNING: ShownStatus.STOPPED,  # no live process holds train.lock: resumable
    RunStatus.STOPPED: ShownStatus.STOPPED,
    RunStatus.DONE: ShownStatus.FINISHED,
    RunStatus.FAILED: ShownStatus.FAILED,
}
# The Overview's decision counts: step reports tallied by action (rolled back comes from the
# epoch reports).
COUNT_LABELS: tuple[str, ...] = (
    Count.ACCEPTED,
    Count.PROVISIONAL,
    Count.REJECTED,
    Count.ROLLED_BACK,
    Count.COOLDOWN,
    Count.SKIPPED,
    Count.EVOLVE_FAILED,
)
ACTION_TO_COUNT: dict[str, Count] = {
    GateAction.ACCEPT: Count.ACCEPTED,
    GateAction.ACCEPT_PROVISIONAL: Count.PROVISIONAL,
    GateAction.REJECT: Count.REJECTED,
    SkipAction.SKIP_COOLDOWN: Count.COOLDOWN,
    SkipAction.SKIP_PROBATION: Count.SKIPPED,
    SkipAction.SKIP_NO_CHANGE: Count.SKIPPED,
    SkipAction.SKIP_NO_FAILURES: Count.SKIPPED,
    SkipAction.SKIP_NO_SKILL_GAPS: Count.SKIPPED,
    SkipAction.SKIP_REPEAT: Count.SKIPPED,  # its own colour in the step list (format.py)
    SkipAction.EVOLVE_FAILED: Count.EVOLVE_FAILED,
}


@dataclass(frozen=True)
class TrainStatus:
    state: str  # a ShownStatus, or `_runs.status` as stored when it is none of RunStatus
    detail: str = ""
    run_id: str | None = None
    pid: int | None = None


def lock_status(lock: dict[str, Any] | None) -> TrainStatus | None:
    """running when train.lock names a live pid on this host, unknown on another host; None
    when the lock says nothing (the log decides)."""
    if not lock or not isinstance(lock.get("pid"), int):
        return None
    host = lock.get("host") or ""
    if host and host != socket.gethostname():
        return TrainStatus(
            ShownStatus.UNKNOWN, f"train.lock held by pid {lock['pid']} on {host}", pid=lock["pid"]
        )
    if pid_alive(lock["pid"]):
        return TrainStatus(
            ShownStatus.RUNNING,
            f"pid {lock['pid']} since {lock.get('started_at', '?')}",
            pid=lock["pid"],
        )
    return None


def status_from_runs(reader: LogReader | None) -> TrainStatus:
    """The latest train run's status as stored, with why it stopped and its resumes."""
    if reader is None:
        return TrainStatus(ShownStatus.NOT_STARTED)
    r = reader.latest_run("train")
    if r is None:
        return TrainStatus(ShownStatus.NOT_STARTED, "no train run in the log")
    state = SHOWN_STATUS.get(r.status or "", r.status or ShownStatus.UNKNOWN)
    when = r.finished_at or r.started_at or ""
    detail = (
        f"{r.run_id} (no live process; resume with train --resume)"
        if state == ShownStatus.STOPPED
        else f"{r.run_id} {when}"
    )
    reason = r.summary.get("reason")
    if reason and r.status in (RunStatus.FAILED, RunStatus.STOPPED):  # say why, where people look
        detail += f": {str(reason)[:200]}"
    resumes = reader.resumes([r.run_id])
    if resumes:  # a resumed run is not a plain "done"
        detail += f"; resumed {times(len(resumes))}, last {resumes[-1].text()}"
    return TrainStatus(state, visible(detail), run_id=r.run_id)


def action_counts(reader: LogReader, epochs: list[EpochRow]) -> dict[str, int]:
    """Counts from the step reports (live, includes the epoch in flight); rolled back
    comes from the epoch reports (only the slow update rolls back)."""
    counts = dict.fromkeys(COUNT_LABELS, 0)
    for action, n in reader.step_action_counts().items():
        label = ACTION_TO_COUNT.get(action or "")
        if label:
            counts[label] += n
    counts[Count.ROLLED_BACK] = sum(
        int((e.report.get("counts") or {}).get(Count.ROLLED_BACK) or 0) for e in epochs
    )
    return counts


def times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
