"""The read side of the harness log (docs/architecture.md#the-harness-log): every read-only
query that `report`, the API and the TUI run, each returning typed rows.

`LogReader` opens the log read-only (`HarnessLog(readonly=True)`: a `mode=ro` connection that
never migrates), so a log written by an older schema is read as it is and its bytes are left
alone; a query that needs a column or table a later migration added checks for it first. Runs,
epochs, steps and predictions are read here; model calls in `calls.py` (`CallReader`), forks
in `forks.py` (`ForkReader`). A schema change touches its migration (`schema.py`), the table's
module and these views, nothing outside this package.

The rows and the query parameters are in `rows.py`. Nothing here loads a
whole table for the TUI: pages are bounded (LIMIT, keyset on indexed
columns) and call totals are summed over an id range so the caller can keep them incrementally.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from app.harness.workspace.harness_log.calls import CallReader
from app.harness.workspace.harness_log.connection import LogQueries
from app.harness.workspace.harness_log.forks import ForkReader
from app.harness.workspace.harness_log.log import HarnessLog
from app.harness.workspace.harness_log.rows import (
    PREDICTION_COLUMNS,
    PREDICTIONS_KEYSET,
    RUNS_KEYSET,
    STEP_COLUMNS,
    STEP_SORTS,
    EpochAccuracy,
    EpochRow,
    GateEvidenceRow,
    LogMarks,
    PageCursor,
    PredictionFilter,
    PredictionRow,
    RunListRow,
    RunRow,
    StepFilter,
    StepReportRow,
    StepRow,
    TriageCount,
    json_object,
)
from app.harness.workspace.harness_log.runs import Resume, RunStatus
from app.sanitize import visible_sqlite_text, visible_tree

# Latest row per (epoch, step, task type): a redone step's stale rows never show twice.
_LATEST_STEPS = "id IN (SELECT MAX(id) FROM step_reports GROUP BY epoch, step, task_type)"
_LATEST_EPOCHS = "id IN (SELECT MAX(id) FROM epoch_reports GROUP BY epoch)"
# The `_runs` columns a runs page reads (not the config, which can be large).
_RUN_LIST_COLUMNS = (
    "seq",
    "run_id",
    "kind",
    "parent_run_id",
    "skills_version",
    "prompts_version",
    "status",
    "started_at",
    "finished_at",
    "provenance_json",
    "summary_json",
)
# Interrupt a long query every this many SQLite VM steps to check for cancellation.
_PROGRESS_STEPS = 20_000


class QueryCancelled(Exception):
    """A long query was interrupted (the worker that asked for it was cancelled)."""


# -- the reader -------------------------------------------------------------------------------
def open_reader(
    path: Path,
    *,
    printable: bool = False,
    cancelled: Callable[[], bool] | None = None,
    time_limit: float | None = None,
) -> LogReader:
    """A read-only reader of the log at `path`. `printable` makes every string it returns
    printable (the TUI shows them); `cancelled`/`time_limit` interrupt a long query."""
    log = HarnessLog(path, readonly=True)
    if printable:
        log.conn.text_factory = visible_sqlite_text
    if cancelled is not None or time_limit is not None:
        deadline = time.monotonic() + time_limit if time_limit else None

        def check() -> int:
            if cancelled is not None and cancelled():
                return 1
            return 1 if deadline is not None and time.monotonic() > deadline else 0

        log.conn.set_progress_handler(check, _PROGRESS_STEPS)
    return LogReader(log)


class LogReader(LogQueries):
    """Typed read-only queries over one open log (see `open_reader`): runs, epochs, steps and
    predictions here; model calls and spend in `calls`, forks in `forks`."""

    def __init__(self, log: HarnessLog) -> None:
        super().__init__(log)
        self.calls = CallReader(log)
        self.forks = ForkReader(log)

    @property
    def tables(self) -> HarnessLog:
        """Every table's typed reads on this reader's read-only connection (the reads only a
        report needs are kept with their table, not here)."""
        return self.log

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[LogReader]:
        """Turns SQLite's `interrupted` (the progress handler said stop) into QueryCancelled."""
        try:
            yield self
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e):
                raise QueryCancelled(str(e)) from None
            raise

    def check_integrity(self) -> None:
        self.log.check_integrity()

    # -- runs -------------------------------------------------------------------------------
    @staticmethod
    def _run(r: dict[str, Any]) -> RunRow:
        return RunRow(
            seq=r["seq"],
            run_id=r["run_id"],
            kind=r["kind"],
            parent_run_id=r["parent_run_id"],
            skills_version=r["skills_version"],
            prompts_version=r["prompts_version"],
            status=r["status"],
            started_at=r["started_at"],
            finished_at=r["finished_at"],
            summary=json_object(r.get("summary_json")),
            provenance=json_object(r.get("provenance_json")),
        )

    def runs(self) -> list[RunRow]:
        """Every run, oldest first."""
        return [self._run(r) for r in self._rows("SELECT * FROM _runs ORDER BY seq")]

    def run(self, run_id: str) -> RunRow | None:
        rows = self._rows("SELECT * FROM _runs WHERE run_id = ?", (run_id,))
        return self._run(rows[0]) if rows else None

    def run_columns(self, run_id: str) -> dict[str, Any] | None:
        """One `_runs` row with every column as stored (the TUI's run detail shows them)."""
        rows = self._rows("SELECT * FROM _runs WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def run_config(self, run_id: str) -> str | None:
        """The run's config as recorded (JSON text; None without the run)."""
        run = self.log.run(run_id)
        return run.config_json if run is not None else None

    def latest_run(self, kind: str) -> RunRow | None:
        rows = self._rows("SELECT * FROM _runs WHERE kind = ? ORDER BY seq DESC LIMIT 1", (kind,))
        return self._run(rows[0]) if rows else None

    def baseline_accuracy_on(self, kind: str) -> float | None:
        """Unit accuracy of the latest baseline run on the questions of the latest run of
        `kind` ("validation", "test"): a learning curve's epoch-0 point. The trainer scores its
        baseline on the same pools (app/harness/training/runner.py, a unit right only when
        every member is); None before both runs exist."""
        baseline, pool = self.latest_run("baseline"), self.latest_run(kind)
        if baseline is None or pool is None:
            return None
        value = self._scalar(
            "SELECT AVG(ok) FROM (SELECT MIN(COALESCE(b.correct, 0)) AS ok FROM predictions b "
            "WHERE b.run_id = ? AND b.question_id IN "
            "(SELECT question_id FROM predictions WHERE run_id = ?) "
            "GROUP BY COALESCE(b.unit_id, b.question_id))",
            (baseline.run_id, pool.run_id),
        )
        return float(value) if value is not None else None

    def done_run_ids(self, kinds: Sequence[str]) -> list[str]:
        """Finished runs of these kinds, oldest first."""
        marks = ", ".join("?" for _ in kinds)
        return [
            r["run_id"]
            for r in self._rows(
                f"SELECT run_id FROM _runs WHERE kind IN ({marks}) AND status = ? ORDER BY seq",
                [*kinds, RunStatus.DONE],
            )
        ]

    def run_kinds(self) -> list[str]:
        return self._column("SELECT DISTINCT kind FROM _runs ORDER BY kind")

    def any_model(self, model: str) -> bool:
        """Whether any run recorded `model` for one of its roles in its provenance."""
        return (
            self.log.conn.execute(
                "SELECT 1 FROM _runs, json_each(_runs.provenance_json, '$.models') AS m "
                "WHERE json_valid(provenance_json) AND m.value = ? LIMIT 1",
                (model,),
            ).fetchone()
            is not None
        )

    def any_simulated(self) -> bool:
        """Whether any run recorded the simulated model in its provenance."""
        return (
            self.log.conn.execute(
                "SELECT 1 FROM _runs WHERE json_valid(provenance_json) AND "
                "json_extract(provenance_json, '$.simulated_model') = 1 LIMIT 1"
            ).fetchone()
            is not None
        )

    def runs_page(self, kind: str | None, cursor: PageCursor, limit: int) -> list[RunListRow]:
        """Up to limit + 1 runs of the cursor's page (RUNS_KEYSET), in query order."""
        conditions, keys, order = RUNS_KEYSET.where(cursor)
        where, params = (["kind = ?", *conditions], [kind, *keys]) if kind else (conditions, keys)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = [
            self._run(r)
            for r in self._rows(
                f"SELECT {', '.join(_RUN_LIST_COLUMNS)} FROM _runs {clause} {order} LIMIT ?",
                [*params, limit + 1],
            )
        ]
        ids = [r.run_id for r in rows]
        resumed: dict[str, int] = {}
        for x in self.resumes(ids):
            resumed[x.run_id] = resumed.get(x.run_id, 0) + 1
        counts = {
            c["run_id"]: c
            for c in (
                self._rows(
                    f"SELECT run_id, COUNT(*) AS n, SUM(correct) AS n_correct FROM predictions "
                    f"WHERE run_id IN ({', '.join('?' for _ in ids)}) GROUP BY run_id",
                    ids,
                )
                if ids
                else []
            )
        }
        return [self._list_row(r, counts.get(r.run_id), resumed.get(r.run_id, 0)) for r in rows]

    @staticmethod
    def _list_row(r: RunRow, count: dict[str, Any] | None, resumes: int) -> RunListRow:
        return RunListRow(
            seq=r.seq,
            run_id=r.run_id,
            kind=r.kind,
            parent_run_id=r.parent_run_id,
            skills_version=r.skills_version,
            prompts_version=r.prompts_version,
            status=r.status,
            started_at=r.started_at,
            finished_at=r.finished_at,
            n_predictions=count["n"] if count else 0,
            n_correct=(count["n_correct"] or 0) if count else 0,
            simulated=bool(visible_tree(r.provenance).get("simulated_model")),
            accuracy=visible_tree(r.summary).get("accuracy"),
            resumes=resumes,
        )

    def resumes(self, run_ids: Sequence[str] | None = None) -> list[Resume]:
        """The recorded resumes (of the given runs), oldest first ([] before migration 6)."""
        return self.log.resumes(run_ids)

    # -- epochs and steps -------------------------------------------------------------------
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

    # -- predictions ------------------------------------------------------------------------
    @staticmethod
    def _prediction_where(run_id: str, flt: PredictionFilter) -> tuple[list[str], list[Any]]:
        where: list[str] = ["run_id = ?"]
        params: list[Any] = [run_id]
        if flt.correct is not None:
            where.append("correct = ?")
            params.append(int(flt.correct))
        if flt.task_type:
            where.append("task_type = ?")
            params.append(flt.task_type)
        if flt.stop_reason:
            where.append("stop_reason = ?")
            params.append(flt.stop_reason)
        if flt.search:
            like = (
                "%" + flt.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            where.append(
                "(question_id LIKE ? ESCAPE '\\' OR prediction LIKE ? ESCAPE '\\' "
                "OR answer LIKE ? ESCAPE '\\' OR steps_json LIKE ? ESCAPE '\\')"
            )
            params += [like] * 4
        return where, params

    def predictions_page(
        self, run_id: str, flt: PredictionFilter, cursor: PageCursor, limit: int
    ) -> list[PredictionRow]:
        """Up to limit + 1 predictions of the cursor's page (PREDICTIONS_KEYSET) on the unique
        index (run_id, question_id), so a page costs the same however large the run."""
        where, params = self._prediction_where(run_id, flt)
        conditions, keys, order = PREDICTIONS_KEYSET.where(cursor)
        sql = (
            f"SELECT {', '.join(PREDICTION_COLUMNS)} FROM predictions "
            f"INDEXED BY idx_pred_run_q WHERE {' AND '.join(where + conditions)} {order} LIMIT ?"
        )
        return [PredictionRow(**r) for r in self._rows(sql, [*params, *keys, limit + 1])]

    def predictions_count(self, run_id: str, flt: PredictionFilter) -> int:
        where, params = self._prediction_where(run_id, flt)
        return int(
            self._scalar(f"SELECT COUNT(*) FROM predictions WHERE {' AND '.join(where)}", params)
        )

    def predictions_before(self, run_id: str, question_id: str) -> int:
        """How many of the run's predictions sort before `question_id` (covering index)."""
        return int(
            self._scalar(
                "SELECT COUNT(*) FROM predictions WHERE run_id = ? AND question_id < ?",
                (run_id, question_id),
            )
        )

    def prediction_task_types(self, run_id: str) -> list[str]:
        return self._column(
            "SELECT DISTINCT task_type FROM predictions WHERE run_id = ? LIMIT 100", (run_id,)
        )

    def prediction_columns(self, pred_id: int) -> dict[str, Any] | None:
        """One prediction with every column as stored (its trajectory in `steps_json`)."""
        rows = self._rows("SELECT * FROM predictions WHERE id = ?", (pred_id,))
        return rows[0] if rows else None

    def ingested_counts(self) -> dict[str, dict[str, int]]:
        """Ingested traces by source: how many, and how many failed (schema 8 and later)."""
        if not self.has_table("ingested_traces"):
            return {}
        return {
            r["source"]: {"traces": r["n"], "failed": r["failed"] or 0, "families": r["fam"]}
            for r in self._rows(
                "SELECT source, COUNT(*) AS n, SUM(failed) AS failed, COUNT(DISTINCT family) AS fam "
                "FROM ingested_traces GROUP BY source ORDER BY source"
            )
        }

    def answer_sources(self) -> dict[str, int]:
        """Predictions by how their answer was found (schema 3 and later)."""
        return {
            r["answer_source"]: r["n"]
            for r in self._rows(
                "SELECT answer_source, COUNT(*) AS n FROM predictions WHERE answer_source IS NOT NULL "
                "GROUP BY answer_source"
            )
        }

    def extracted_correct(self) -> int:
        """Right answers found without an `ANSWER:` line."""
        return int(
            self._scalar(
                "SELECT COUNT(*) AS n FROM predictions WHERE answer_source IS NOT NULL AND "
                "answer_source != 'answer_line' AND correct = 1"
            )
        )

    def prediction_latencies(self, run_id: str) -> list[float]:
        """latency_s of every answered question of a run, sorted (savings: p50/p95)."""
        return sorted(
            r["latency_s"]
            for r in self._rows(
                "SELECT latency_s FROM predictions WHERE run_id = ? AND latency_s IS NOT NULL",
                (run_id,),
            )
        )

    def prediction_count(self, run_id: str) -> int:
        return int(self._scalar("SELECT COUNT(*) FROM predictions WHERE run_id = ?", (run_id,)))

    # -- change marks -----------------------------------------------------------------------
    def marks(self) -> LogMarks:
        row = self.log.conn.execute(
            "SELECT (SELECT MAX(id) FROM step_reports), (SELECT MAX(id) FROM gate_evidence),"
            " (SELECT MAX(id) FROM predictions), (SELECT MAX(id) FROM epoch_reports),"
            " (SELECT MAX(id) FROM llm_calls), (SELECT MAX(seq) FROM _runs)"
        ).fetchone()
        last_runs = self._scalar(
            "SELECT group_concat(status || ':' || COALESCE(finished_at, '')) FROM "
            "(SELECT status, finished_at FROM _runs ORDER BY seq DESC LIMIT 3)"
        )
        steps, evidence, predictions, epochs, calls, runs = row
        return LogMarks(steps, evidence, predictions, epochs, calls, runs, last_runs)
