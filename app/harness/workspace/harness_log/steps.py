"""The `step_reports` and `epoch_reports` tables: what each training step and epoch
decided, as written by app/harness/training/observation.py (docs/architecture.md#the-harness-log)."""

from __future__ import annotations

from dataclasses import dataclass

from app.harness.workspace.harness_log.connection import LogConnection, LogRecord


@dataclass(frozen=True)
class StepReportRecord(LogRecord):
    """One step's report of one task type; the whole report is `report_json`."""

    TABLE = "step_reports"

    run_id: str
    epoch: int
    step: int
    task_type: str
    action: str | None
    cand_acc: float | None
    base_acc: float | None
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, named as the column
    e_value: float | None
    n_used: int | None
    stop_reason: str | None
    edit_budget: int | None
    gate_run_id: str | None
    report_json: str


@dataclass(frozen=True)
class EpochReportRecord(LogRecord):
    TABLE = "epoch_reports"

    run_id: str
    epoch: int
    val_acc: float | None
    test_acc: float | None
    report_json: str


@dataclass(frozen=True)
class StepOutcome:
    """What a step's gate decided for a task type (a step report without its accuracies)."""

    action: str | None
    stop_reason: str | None
    gate_run_id: str | None
    report_json: str | None
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, named as the column
    n_used: int | None


class StepsTable(LogConnection):
    """Writes and reads of step and epoch reports."""

    def add_step_report(self, row: StepReportRecord) -> None:
        self.insert([row])

    def add_epoch_report(self, row: EpochReportRecord) -> None:
        self.insert([row])

    def step_outcomes(self, run_like: str, task_type: str) -> list[StepOutcome]:
        """The step reports of a task type by runs `LIKE run_like`."""
        return [
            StepOutcome(*r)
            for r in self.conn.execute(
                "SELECT action, stop_reason, gate_run_id, report_json, w, l, n_used "
                "FROM step_reports WHERE run_id LIKE ? AND task_type = ?",
                (run_like, task_type),
            )
        ]

    def reported_task_types(self, run_like: str) -> set[str]:
        """Task types that runs `LIKE run_like` reported a step of or diagnosed."""
        return {
            str(r[0])
            for r in self.conn.execute(
                "SELECT DISTINCT task_type FROM step_reports WHERE run_id LIKE ? "
                "UNION SELECT DISTINCT task_type FROM diagnoses WHERE run_id LIKE ?",
                (run_like, run_like),
            )
            if r[0]
        }
