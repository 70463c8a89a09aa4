"""The `step_reports` and `epoch_reports` tables: what each training step and epoch
decided, as written by app/harness/training/observation.py (docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from app.harness.workspace.harness_log.connection import LogConnection, LogQueries, LogRecord
from app.harness.workspace.harness_log.rows import (
    STEP_COLUMNS,
    STEP_SORTS,
    EpochAccuracy,
    EpochRow,
    GateEvidenceRow,
    StepFilter,
    StepReportRow,
    StepRow,
    TriageCount,
)
from app.sanitize import visible_tree


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


# Latest row per (epoch, step, task type): a redone step's stale rows never show twice.
_LATEST_STEPS = "id IN (SELECT MAX(id) FROM step_reports GROUP BY epoch, step, task_type)"
_LATEST_EPOCHS = "id IN (SELECT MAX(id) FROM epoch_reports GROUP BY epoch)"


class StepViews(LogQueries):
    """Epochs, steps and gate evidence as `report`, the API and the TUI list them (`LogReader`)."""

    def epoch_accuracies(self) -> list[EpochAccuracy]:
        """Every epoch report row in the order written (a redone epoch shows twice)."""
        return [
            EpochAccuracy(**r)
            for r in self._rows(
                "SELECT run_id, epoch, val_acc, test_acc FROM epoch_reports ORDER BY id"
            )
        ]

    def epochs(self) -> list[EpochRow]:
        """The latest report of each epoch, by epoch."""
        rows = self._rows(
            f"SELECT run_id, epoch, val_acc, test_acc, report_json FROM epoch_reports "
            f"WHERE {_LATEST_EPOCHS} ORDER BY epoch"
        )
        out = []
        for r in rows:
            try:
                report = visible_tree(json.loads(r.pop("report_json") or "{}"))
            except (ValueError, RecursionError):
                report = {}
            out.append(EpochRow(**r, report=report if isinstance(report, dict) else {}))
        return out

    def step_action_counts(self) -> dict[str | None, int]:
        """Latest step reports counted by action."""
        return {
            r["action"]: r["n"]
            for r in self._rows(
                f"SELECT action, COUNT(*) AS n FROM step_reports WHERE {_LATEST_STEPS} "
                "GROUP BY action"
            )
        }

    def triage_counts(self, examples: int = 3) -> list[TriageCount]:
        """Training steps' diagnoses (run ids `...-diag`; not the `diagnose` command's
        `<run>-diagnose-diag`, which re-diagnoses a run) by category and decider."""
        if not self.has_table("diagnoses"):
            return []
        who = (
            "COALESCE(decided_by, 'judge')"
            if "decided_by" in self.columns("diagnoses")
            else "'judge'"
        )
        rows = self._rows(
            f"SELECT category, {who} AS decided_by, COUNT(*) AS failures, "
            "json_group_array(question_id) AS ids FROM "
            "(SELECT * FROM diagnoses WHERE run_id LIKE '%-diag' "
            "AND run_id NOT LIKE '%-diagnose-diag' ORDER BY id DESC) "
            "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2"
        )
        return [
            TriageCount(
                str(r["category"]),
                str(r["decided_by"]),
                r["failures"],
                tuple(str(q) for q in json.loads(r["ids"])[:examples]),
            )
            for r in rows
        ]

    def step_task_types(self) -> list[str]:
        return self._column("SELECT DISTINCT task_type FROM step_reports ORDER BY task_type")

    def step_actions(self) -> list[str]:
        return self._column("SELECT DISTINCT action FROM step_reports ORDER BY action")

    @staticmethod
    def _step_where(flt: StepFilter) -> tuple[str, list[Any]]:
        where, params = [_LATEST_STEPS], []
        if flt.task_type:
            where.append("task_type = ?")
            params.append(flt.task_type)
        if flt.action:
            where.append("action = ?")
            params.append(flt.action)
        return " AND ".join(where), params

    def steps_count(self, flt: StepFilter) -> int:
        clause, params = self._step_where(flt)
        return int(self._scalar(f"SELECT COUNT(*) FROM step_reports WHERE {clause}", params))

    def steps(
        self, flt: StepFilter, *, sort: str, descending: bool, offset: int, limit: int
    ) -> list[StepRow]:
        """A page of the latest step reports sorted by a STEP_SORTS key."""
        terms = STEP_SORTS.get(sort, STEP_SORTS["order"])
        direction = "DESC" if descending else "ASC"
        # the chosen column in the chosen direction; ties read naturally (task type A-Z)
        order = (
            ", ".join(
                f"{t} {'ASC' if t == 'task_type' and i else direction}" for i, t in enumerate(terms)
            )
            + f", id {direction}"
        )
        clause, params = self._step_where(flt)
        return [
            StepRow(**r)
            for r in self._rows(
                f"SELECT {', '.join(STEP_COLUMNS)} FROM step_reports "
                f"WHERE {clause} ORDER BY {order} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        ]

    def step_report(self, step_id: int) -> StepReportRow | None:
        rows = self._rows("SELECT * FROM step_reports WHERE id = ?", (step_id,))
        if not rows:
            return None
        columns = rows[0]
        report: Any = None
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            report = visible_tree(json.loads(columns.pop("report_json", None) or "null"))
        return StepReportRow(columns, report if isinstance(report, dict) else None)

    def gate_evidence(self, run_id: str, task_type: str, limit: int) -> list[GateEvidenceRow]:
        """The families a gate run observed for a task type, in ladder order."""
        return [
            GateEvidenceRow(**r)
            for r in self._rows(
                "SELECT idx, unit_id, base, cand, outcome, w, l, e_win, e_harm "
                "FROM gate_evidence WHERE run_id = ? AND task_type = ? ORDER BY idx LIMIT ?",
                (run_id, task_type, limit),
            )
        ]
