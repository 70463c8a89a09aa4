"""The `_runs` and `resumes` tables: registering, finishing, clearing and reading runs
(docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log.connection import (
    LogConnection,
    LogQueries,
    LogRecord,
    escape_like,
)
from app.harness.workspace.harness_log.rows import (
    RUNS_KEYSET,
    PageCursor,
    RunListRow,
    RunRow,
    json_object,
)
from app.harness.workspace.harness_log.schema import RUN_TABLES
from app.sanitize import visible_tree
from app.secrets import scrub


class RunStatus(StrEnum):
    """A run's status in `_runs.status`."""

    RUNNING = "running"  # started and not finished (or the process died: no live train.lock)
    DONE = "done"
    STOPPED = "stopped"  # SIGTERM, Ctrl-C or the cost cap; `--resume` continues it
    FAILED = "failed"


@dataclass(frozen=True)
class Resume:
    """One `train --resume` (the `resumes` table): when, and the checkpoint it went on from."""

    run_id: str
    at: str
    epoch: int | None
    phase: str | None
    step_completed: int | None
    checkpoint_at: str | None

    def text(self) -> str:
        """`2026-… from the checkpoint of 2026-… (epoch 4, in_epoch, step 1 done)`."""
        where = f"epoch {self.epoch}, {self.phase}"
        if self.step_completed is not None and self.step_completed >= 0:
            where += f", step {self.step_completed} done"
        return f"{self.at} from the checkpoint of {self.checkpoint_at or '?'} ({where})"


@dataclass(frozen=True)
class RunRecord(LogRecord):
    """One `_runs` row with every column as stored (the JSON columns as text); written by
    `register_run` and `finish_run`, column by column."""

    TABLE = "_runs"

    run_id: str
    seq: int
    kind: str
    parent_run_id: str | None
    skills_version: str  # register_run writes a string ("" when none), never NULL
    prompts_version: str
    questions_ref: str
    status: str
    started_at: str | None
    finished_at: str | None
    config_json: str | None
    provenance_json: str | None
    summary_json: str | None


class RunsTable(LogConnection):
    """Runs: a run is registered (its rows of an earlier attempt cleared), then finished."""

    def register_run(
        self,
        run_id: str,
        *,
        kind: str,
        skills_version: str = "",
        prompts_version: str = "",
        questions_ref: str = "",
        parent_run_id: str | None = None,
        config: dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        with self._txn():
            self.clear_run(run_id)
            seq = self.conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM _runs").fetchone()[0]
            self.conn.execute(
                "INSERT INTO _runs (run_id, seq, kind, parent_run_id, skills_version, "
                "prompts_version, questions_ref, status, started_at, config_json, "
                "provenance_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    seq,
                    kind,
                    parent_run_id,
                    skills_version,
                    prompts_version,
                    questions_ref,
                    RunStatus.RUNNING,
                    now_iso(),
                    scrub(json.dumps(config or {}, sort_keys=True)),
                    scrub(json.dumps(provenance or {}, sort_keys=True)),
                ),
            )

    def finish_run(
        self, run_id: str, status: RunStatus, summary: dict[str, Any] | None = None
    ) -> None:
        with self._txn():
            self.conn.execute(
                "UPDATE _runs SET status=?, finished_at=?, summary_json=? WHERE run_id=?",
                (status, now_iso(), scrub(json.dumps(summary or {}, sort_keys=True)), run_id),
            )

    def close_dead_runs(self, kinds: Sequence[str], found_by: str) -> list[str]:
        """Mark `failed` the top-level runs of `kinds` still `running`, and return their ids.

        Only for a caller that holds the writer lock: every run is written by a lock holder, so
        a run still `running` then is one whose process died (kill -9, power loss). Train and
        fork runs are left as they are: `--resume` continues them from that state.
        """
        marks = ",".join("?" for _ in kinds)
        with self._txn():
            ids = [
                r[0]
                for r in self.conn.execute(
                    f"SELECT run_id FROM _runs WHERE status = ? AND parent_run_id IS NULL "
                    f"AND kind IN ({marks}) ORDER BY seq",
                    (RunStatus.RUNNING, *kinds),
                )
            ]
            summary = json.dumps(
                {"stopped_by": "killed", "reason": f"its process died; found by `{found_by}`"},
                sort_keys=True,
            )
            for run_id in ids:
                self.conn.execute(
                    "UPDATE _runs SET status=?, finished_at=?, summary_json=? WHERE run_id=?",
                    (RunStatus.FAILED, now_iso(), summary, run_id),
                )
        return ids

    def record_resume(self, run_id: str, progress: dict[str, Any]) -> None:
        """One `train --resume` of `run_id`, from the checkpoint whose progress is given."""
        with self._txn():
            self.conn.execute(
                "INSERT INTO resumes (run_id, at, epoch, phase, step_completed, checkpoint_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    now_iso(),
                    progress.get("epoch"),
                    str(progress.get("phase")),
                    progress.get("step_completed"),
                    progress.get("at"),
                ),
            )

    def clear_run(self, run_id: str) -> None:
        with self._txn():
            for table in RUN_TABLES:
                self._delete_run_rows(table, run_id)
            self.conn.execute("DELETE FROM _runs WHERE run_id = ?", (run_id,))

    def clear_runs_with_prefix(self, prefix: str) -> int:
        """Delete every run whose id starts with `prefix`, and all its rows."""
        pattern = escape_like(prefix) + "%"
        with self._txn():
            # LIKE (escaped) narrows by index; substr makes the match exact and case-sensitive.
            where = "run_id LIKE ? ESCAPE '\\' AND substr(run_id, 1, ?) = ?"
            args = (pattern, len(prefix), prefix)
            ids = [r[0] for r in self.conn.execute(f"SELECT run_id FROM _runs WHERE {where}", args)]
            for table in RUN_TABLES:
                self.conn.execute(f"DELETE FROM {table} WHERE {where}", args)
            self.conn.execute(f"DELETE FROM _runs WHERE {where}", args)
        return len(ids)

    def clear_runs_after(self, seq: int) -> list[str]:
        """Forget runs registered after a checkpoint (their step will be redone)."""
        with self._txn():
            ids = [
                r[0] for r in self.conn.execute("SELECT run_id FROM _runs WHERE seq > ?", (seq,))
            ]
            for run_id in ids:
                self.clear_run(run_id)
        return ids

    # -- reads ------------------------------------------------------------------------------
    def max_run_seq(self) -> int:
        return int(self._scalar("SELECT COALESCE(MAX(seq), 0) FROM _runs"))

    def run(self, run_id: str) -> RunRecord | None:
        rows = self.query("SELECT * FROM _runs WHERE run_id = ?", (run_id,))
        return RunRecord(**rows[0]) if rows else None

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        return [RunRecord(**r) for r in self.query("SELECT * FROM _runs ORDER BY seq")]

    def resumes(self, run_ids: Sequence[str] | None = None) -> list[Resume]:
        """The recorded resumes (of the given runs), oldest first; none in a log from before
        migration 5 opened read-only (report and the TUI never migrate)."""
        if run_ids is not None and not run_ids:
            return []
        if not self.query("SELECT name FROM sqlite_master WHERE name = 'resumes'"):
            return []
        where, params = "", list(run_ids or [])
        if run_ids is not None:
            where = f"WHERE run_id IN ({', '.join('?' for _ in params)})"
        rows = self.query(
            "SELECT run_id, at, epoch, phase, step_completed, checkpoint_at FROM resumes "
            f"{where} ORDER BY id",
            params,
        )
        return [Resume(**r) for r in rows]

    def reopen_run(self, run_id: str, status: RunStatus) -> None:
        """A finished run set back to `status` with no finish time (a fork that grows)."""
        with self._txn():
            self.conn.execute(
                "UPDATE _runs SET status=?, finished_at=NULL WHERE run_id=?", (status, run_id)
            )

    def latest_done_eval_id(self, skills_version: str) -> str | None:
        """The latest finished `eval` run of a skills version, else training's final `test`
        run of it."""
        rows = self.query(
            "SELECT run_id FROM _runs WHERE kind IN ('eval', 'test') AND status = "
            "'done' AND skills_version = ? ORDER BY kind = 'eval' DESC, seq DESC "
            "LIMIT 1",
            (skills_version,),
        )
        return rows[0]["run_id"] if rows else None

    def ingest_runs_before(self, run_ids: Sequence[str]) -> list[RunRecord]:
        """Every ingest run registered before the newest of `run_ids`, oldest first."""
        marks = ",".join("?" * len(run_ids))
        return [
            RunRecord(**r)
            for r in self.query(
                f"SELECT * FROM _runs WHERE kind = 'ingest' AND seq < "
                f"(SELECT COALESCE(MAX(seq), 0) FROM _runs WHERE run_id IN ({marks})) "
                "ORDER BY seq",
                run_ids,
            )
        ]

    def fork_run_ids_with_branches(self) -> list[str]:
        """Fork runs that wrote branches, oldest first."""
        return [
            r["run_id"]
            for r in self.query(
                "SELECT run_id FROM _runs WHERE kind = 'fork' AND run_id IN "
                "(SELECT DISTINCT run_id FROM branches) ORDER BY seq"
            )
        ]


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


class RunViews(LogQueries):
    """The runs as `report`, the API and the TUI list them (`LogReader`)."""

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
