"""HarnessLog: the SQLite log of every run, prediction, gate decision and model call
(docs/architecture.md#the-harness-log).

WAL mode so readers (TUI, `report`) never block the writer; one writer connection per process
guarded by a lock; inserts batched inside one transaction each.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import sqlite_utils

from app.errors import DamagedFile, UserError, is_storage_failure, storage_error
from app.harness.workspace.clock import now_iso
from app.secrets import process_secrets, scrub
from core.redact import redact, redact_url_credentials


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


BUSY_TIMEOUT_MS = 30_000
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024  # quick_check reads every page: ~1 s per GB

# Tables every run may write; each has a run_id column so a step's rows can be cleared.
RUN_TABLES = (
    "predictions",
    "llm_calls",
    "gate_evidence",
    "quadrant_pair",
    "dual_metric",
    "holdout_eval",
    "shadow_gate",
    "diagnoses",
    "evolutions",
    "step_reports",
    "epoch_reports",
    "reply_attempts",
    "branches",
    "verdicts",
    "judgments",
    "rankings",
    "trajectory_classes",
)  # branches..rankings: best-of-N rollouts (migration 4); trajectory_classes: curation

MIGRATIONS: list[tuple[str, list[str]]] = [
    (
        "initial schema",
        [
            """CREATE TABLE _runs (run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT,
            parent_run_id TEXT, skills_version TEXT, prompts_version TEXT, questions_ref TEXT,
            status TEXT, started_at TEXT, finished_at TEXT, config_json TEXT,
            provenance_json TEXT, summary_json TEXT)""",
            "CREATE INDEX idx_runs_seq ON _runs(seq)",
            """CREATE TABLE predictions (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, unit_id TEXT, task_type TEXT, prediction TEXT,
            answer TEXT, correct INTEGER, stop_reason TEXT, steps_json TEXT,
            tokens_in INTEGER, tokens_out INTEGER, cost_usd REAL, latency_s REAL,
            skills_version TEXT, prompts_version TEXT, created_at TEXT)""",
            "CREATE UNIQUE INDEX idx_pred_run_q ON predictions(run_id, question_id)",
            "CREATE INDEX idx_pred_run_correct ON predictions(run_id, correct)",
            "CREATE INDEX idx_pred_run_task ON predictions(run_id, task_type)",
            """CREATE TABLE traces (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, turn INTEGER, event_json TEXT)""",
            "CREATE INDEX idx_traces_run_q ON traces(run_id, question_id)",
            """CREATE TABLE llm_calls (id INTEGER PRIMARY KEY, run_id TEXT, role TEXT, model TEXT,
            tokens_in INTEGER, tokens_out INTEGER, cost_usd REAL, latency_s REAL, status TEXT,
            cache_hit INTEGER, at TEXT)""",
            "CREATE INDEX idx_calls_run ON llm_calls(run_id)",
            """CREATE TABLE gate_evidence (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, step INTEGER, task_type TEXT, idx INTEGER, unit_id TEXT,
            base INTEGER, cand INTEGER, outcome TEXT, w INTEGER, l INTEGER, e_win REAL,
            e_harm REAL)""",
            "CREATE INDEX idx_evidence_run_task ON gate_evidence(run_id, task_type, idx)",
            """CREATE TABLE quadrant_pair (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, step INTEGER, task_type TEXT, unit_id TEXT, quadrant TEXT)""",
            "CREATE INDEX idx_quadrant_run ON quadrant_pair(run_id)",
            """CREATE TABLE dual_metric (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, eval_run_id TEXT, hard_acc REAL, soft_score REAL)""",
            """CREATE TABLE holdout_eval (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, label TEXT, skills_version TEXT, prompts_version TEXT,
            accuracy REAL, eval_run_id TEXT)""",
            """CREATE TABLE shadow_gate (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, step INTEGER, task_type TEXT, strategy TEXT, action TEXT,
            e_value REAL, n_used INTEGER)""",
            """CREATE TABLE diagnoses (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT, task_type TEXT, category TEXT, target TEXT, rationale TEXT,
            degraded INTEGER)""",
            "CREATE INDEX idx_diag_run ON diagnoses(run_id)",
            """CREATE TABLE evolutions (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, step INTEGER, task_type TEXT, target_kind TEXT, target_file TEXT,
            status TEXT, request_summary TEXT, edits_json TEXT, apply_report_json TEXT,
            clip_json TEXT, source_version TEXT, result_version TEXT)""",
            "CREATE INDEX idx_evo_run ON evolutions(run_id)",
            """CREATE TABLE step_reports (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, step INTEGER, task_type TEXT, action TEXT, cand_acc REAL,
            base_acc REAL, w INTEGER, l INTEGER, e_value REAL, n_used INTEGER,
            stop_reason TEXT, edit_budget INTEGER, gate_run_id TEXT, report_json TEXT)""",
            "CREATE INDEX idx_steps_order ON step_reports(epoch, step, task_type)",
            "CREATE INDEX idx_steps_run ON step_reports(run_id)",
            """CREATE TABLE epoch_reports (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, val_acc REAL, test_acc REAL, report_json TEXT)""",
            "CREATE INDEX idx_epochs_run ON epoch_reports(run_id, epoch)",
        ],
    ),
    (
        "evolutions keep the evolver reply's parse errors",
        [
            "ALTER TABLE evolutions ADD COLUMN parse_errors_json TEXT",
        ],
    ),
    (
        "model I/O: call attempts, retries, timeouts and response formats; every structured "
        "reply attempt; how answers were found",
        [
            "ALTER TABLE llm_calls ADD COLUMN attempts INTEGER",
            "ALTER TABLE llm_calls ADD COLUMN retries INTEGER",
            "ALTER TABLE llm_calls ADD COLUMN timeouts INTEGER",
            "ALTER TABLE llm_calls ADD COLUMN response_format TEXT",
            "ALTER TABLE predictions ADD COLUMN answer_source TEXT",
            "ALTER TABLE diagnoses ADD COLUMN parse_error TEXT",
            "ALTER TABLE evolutions ADD COLUMN attempts_json TEXT",
            """CREATE TABLE reply_attempts (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            purpose TEXT, subject TEXT, attempt INTEGER, response_format TEXT, status TEXT,
            error TEXT, reply TEXT, at TEXT)""",
            "CREATE INDEX idx_reply_attempts_run ON reply_attempts(run_id)",
        ],
    ),
    # 4: best-of-N rollouts. A fork is a run (run_id = rollout id); its branches
    # carry the predictions table's columns plus the branch's own (app/harness/data/fork.py).
    (
        "best-of-N rollouts: branches, verdicts, judgments, rankings, memories",
        [
            """CREATE TABLE branches (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, branch_index INTEGER NOT NULL, session_id TEXT,
            temperature REAL, seed INTEGER, unit_id TEXT, task_type TEXT, prediction TEXT,
            answer TEXT, correct INTEGER, stop_reason TEXT, steps_json TEXT,
            tool_calls_json TEXT, final_text TEXT, tokens_in INTEGER, tokens_out INTEGER,
            cost_usd REAL, latency_s REAL, skills_version TEXT, prompts_version TEXT,
            created_at TEXT, answer_source TEXT)""",
            "CREATE UNIQUE INDEX idx_branches_key ON branches(run_id, question_id, branch_index)",
            """CREATE TABLE verdicts (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, branch_index INTEGER NOT NULL, verifier TEXT,
            status TEXT, passed INTEGER, score REAL, reason TEXT, cost_usd REAL, at TEXT)""",
            "CREATE INDEX idx_verdicts_run ON verdicts(run_id, question_id)",
            """CREATE TABLE judgments (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, kind TEXT, branch_a INTEGER, branch_b INTEGER,
            shown_first TEXT, sample INTEGER, score REAL, preferred TEXT, capped INTEGER,
            parse_error TEXT, reasoning TEXT, model TEXT, cost_usd REAL, at TEXT)""",
            "CREATE INDEX idx_judgments_run ON judgments(run_id, question_id)",
            """CREATE TABLE rankings (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, branch_index INTEGER NOT NULL, rank INTEGER,
            reward REAL, objective REAL, judge REAL, bt REAL, components_json TEXT)""",
            "CREATE INDEX idx_rankings_run ON rankings(run_id, question_id)",
            """CREATE TABLE memories (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, branch_index INTEGER NOT NULL, task_type TEXT,
            task TEXT, key_steps TEXT, final_answer TEXT, created_at TEXT)""",
            "CREATE UNIQUE INDEX idx_memories_key ON memories(run_id, question_id, branch_index)",
            "CREATE VIRTUAL TABLE memories_fts USING fts5(task, task_type UNINDEXED)",
        ],
    ),
    # 5: an evolution names the skills version it produced (`HarnessLog.set_result_version`);
    # older logs take it from their step report (the same step, run id "...-report", and task
    # type). The reserved `traces` table and `dual_metric.soft_score` were never written, so
    # they go; dual_metric is rebuilt rather than `DROP COLUMN`ed (SQLite 3.35+ only).
    (
        "evolutions name the version they produced; reserved traces and soft score removed",
        [
            """UPDATE evolutions SET result_version = (
                SELECT json_extract(s.report_json, '$.new_version') FROM step_reports s
                WHERE s.run_id = substr(evolutions.run_id, 1, length(evolutions.run_id) - 6)
                    || 'report'
                AND s.task_type = evolutions.task_type ORDER BY s.id DESC LIMIT 1)
            WHERE result_version IS NULL AND run_id LIKE '%-evolve'""",
            "DROP TABLE IF EXISTS traces",
            """CREATE TABLE dual_metric_v5 (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            epoch INTEGER, eval_run_id TEXT, hard_acc REAL)""",
            """INSERT INTO dual_metric_v5 (id, run_id, epoch, eval_run_id, hard_acc)
            SELECT id, run_id, epoch, eval_run_id, hard_acc FROM dual_metric""",
            "DROP TABLE dual_metric",
            "ALTER TABLE dual_metric_v5 RENAME TO dual_metric",
        ],
    ),
    # 6: `train --resume` leaves a trace: when, and from which checkpoint (app/harness/training/runner.py).
    # Not in RUN_TABLES: re-registering a run restarted from its setup checkpoint keeps them.
    (
        "resumes: each train --resume of a run, and the checkpoint it continued from",
        [
            """CREATE TABLE resumes (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, at TEXT,
            epoch INTEGER, phase TEXT, step_completed INTEGER, checkpoint_at TEXT)""",
            "CREATE INDEX idx_resumes_run ON resumes(run_id)",
        ],
    ),
    # 7: triage before the judge (core/evolution/triage.py): who decided each diagnosis, a
    # rule ("rule:<name>"), the probe or "judge". Older rows stay NULL: the judge decided them.
    (
        "diagnoses record who decided them",
        ["ALTER TABLE diagnoses ADD COLUMN decided_by TEXT"],
    ),
    # 8: curation: each ranked branch's trajectory class (core/curation.py) and, from
    # `rank --cascade`, how long each verifier took on it (app/harness/data/curation.py)
    (
        "trajectory classes of ranked branches; verifier elapsed time",
        [
            """CREATE TABLE trajectory_classes (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,
            question_id TEXT NOT NULL, branch_index INTEGER NOT NULL, class TEXT,
            turns INTEGER, fault_turn INTEGER, remediation_turn INTEGER,
            divergence_turn INTEGER, detail_json TEXT)""",
            """CREATE UNIQUE INDEX idx_trajectory_classes_key
            ON trajectory_classes(run_id, question_id, branch_index)""",
            "ALTER TABLE verdicts ADD COLUMN elapsed_s REAL",
        ],
    ),
    # 9: custom and rubric checkers (docs/checkers.md): each prediction's (and fork branch's)
    # score in [0, 1] (NULL without a verdict), how checking went ("ok", "check_error",
    # "invalid") and why
    (
        "predictions and branches record the checker's score, status and reason",
        [
            f"ALTER TABLE {table} ADD COLUMN {column}"
            for table in ("predictions", "branches")
            for column in ("score REAL", "check_status TEXT", "check_reason TEXT")
        ],
    ),
    # 10: traces ingested from observability exports (app/harness/ingest/), one row per
    # normalised trace under its content-addressed id, so re-ingesting adds nothing. Not the
    # `traces` table migration 5 dropped: a new name for a new shape.
    (
        "ingested traces",
        [
            """CREATE TABLE ingested_traces (trace_id TEXT PRIMARY KEY, source TEXT NOT NULL,
            native_id TEXT, session_id TEXT, family TEXT, task TEXT, final_answer TEXT,
            model TEXT, tokens_in INTEGER, tokens_out INTEGER, cost_usd REAL, latency_s REAL,
            failed INTEGER, n_steps INTEGER, trace_json TEXT, file TEXT, line INTEGER,
            ingest_run TEXT, ingested_at TEXT)""",
            "CREATE INDEX idx_ingested_family ON ingested_traces(family)",
            "CREATE INDEX idx_ingested_run ON ingested_traces(ingest_run)",
        ],
    ),
    # 11: a memory names the skills version its branch ran, so memories can be retired after
    # a number of versions (`memory_retire_after_versions`, app/harness/rollouts/memory.py);
    # older rows keep NULL and are never retired
    (
        "memories record their skills version",
        ["ALTER TABLE memories ADD COLUMN skills_version TEXT"],
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)


def _row_values(rows: Sequence[dict[str, Any]], columns: list[str]) -> list[tuple]:
    """Row tuples with secret values replaced: nothing secret is ever stored in the log."""
    secrets = process_secrets()
    return [
        tuple(_clean(v, secrets) if isinstance(v, str) else v for v in (r[c] for c in columns))
        for r in rows
    ]


def _clean(text: str, secrets: tuple[str, ...]) -> str:
    if not text.isascii():  # a lone surrogate from a model reply cannot be stored as UTF-8
        text = text.encode("utf-8", "replace").decode("utf-8")
    return redact_url_credentials(redact(text, secrets) if secrets else text)


def escape_like(text: str) -> str:
    """Escape LIKE wildcards so `..._s1` never matches `..._s10` and `%` matches only itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class HarnessLog:
    """One writer connection per process; readers open their own (`HarnessLog.reader`)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly:
            # A URI, escaped: `#`, `?` and `%` in a folder name are path, not URI syntax.
            uri = f"{self.path.absolute().as_uri()}?mode=ro"
            conn = sqlite3.connect(
                uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
                isolation_level=None,
            )
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.RLock()
        try:
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self.conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # garbage fails
            if not readonly:
                # Trajectories are KBs each: 32 KiB pages keep them off overflow chains
                # (about 1.5-2x the insert rate of 4 KiB pages). Only takes effect on creation.
                self.conn.execute("PRAGMA page_size=32768")
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise storage_error(self.path, e) from None
        except BaseException:
            conn.close()
            raise

    @contextlib.contextmanager
    def _txn(self) -> Iterator[None]:
        """One transaction (a savepoint when nested); SQLite failures become one-line errors."""
        with self._lock:
            try:
                with self.db.atomic():
                    yield
            except sqlite3.DatabaseError as e:
                if not is_storage_failure(e):
                    raise  # a bug in a statement, not storage
                raise storage_error(self.path, e) from None

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """Several writes as one transaction: all of them land, or none (ingest of one file)."""
        return self._txn()

    def check_integrity(self, max_bytes: int = QUICK_CHECK_MAX_BYTES) -> None:
        """`PRAGMA quick_check` where it is cheap (a log up to `max_bytes`): a bit-rotted log
        is refused with one line instead of being read as if it were fine."""
        try:
            if self.path.stat().st_size > max_bytes:
                return
            problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as e:
            raise storage_error(self.path, e) from None
        if problems != ["ok"]:
            raise DamagedFile(
                f"{self.path}: damaged SQLite database (quick_check: "
                f"{'; '.join(problems)}); restore it from a backup, or "
                "`train --fresh` to archive the workspace and start over"
            )

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HarnessLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._txn():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY,"
                " description TEXT, applied_at TEXT)"
            )
            done = self.schema_version()
            if done > SCHEMA_VERSION:
                raise UserError(
                    f"{self.path}: log schema {done} is newer than this "
                    f"skill-trainer supports ({SCHEMA_VERSION})"
                )
            for version, (description, statements) in enumerate(MIGRATIONS, start=1):
                if version <= done:
                    continue
                for sql in statements:
                    self.conn.execute(sql)
                self.conn.execute(
                    "INSERT INTO _migrations VALUES (?, ?, ?)", (version, description, now_iso())
                )

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT MAX(version) FROM _migrations").fetchone()
        return row[0] or 0

    # -- writes -----------------------------------------------------------------------------
    def insert_rows(
        self, table: str, rows: Sequence[dict[str, Any]], *, skip_existing: bool = False
    ) -> None:
        """All-or-nothing batched insert (one transaction, executemany). `skip_existing`:
        rows that hit a unique key already present are left out (INSERT OR IGNORE)."""
        if not rows:
            return
        columns = list(rows[0])
        verb = "INSERT OR IGNORE" if skip_existing else "INSERT"
        sql = (
            f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
        )
        with self._txn():
            self.conn.executemany(sql, _row_values(rows, columns))

    def upsert_predictions(self, rows: Sequence[dict[str, Any]]) -> None:
        """(run_id, question_id) is unique: a retried question replaces its old row."""
        if not rows:
            return
        columns = list(rows[0])
        sql = (
            f"INSERT OR REPLACE INTO predictions ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})"
        )
        with self._txn():
            self.conn.executemany(sql, _row_values(rows, columns))

    def register_run(
        self,
        run_id: str,
        *,
        kind: str,
        skills_version: str = "",
        prompts_version: str = "",
        questions_ref: str = "",
        parent_run_id: str | None = None,
        config: dict | None = None,
        provenance: dict | None = None,
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

    def finish_run(self, run_id: str, status: RunStatus, summary: dict | None = None) -> None:
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

    def set_result_version(self, run_id: str, task_type: str, version: str) -> None:
        """The version an evolution produced; known only once its gate accepted it, after
        the row was written (app/harness/training/step.py `settle`)."""
        with self._txn():
            self.conn.execute(
                "UPDATE evolutions SET result_version = ? WHERE run_id = ? AND task_type = ?",
                (version, run_id, task_type),
            )

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
                self.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
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
        return self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM _runs").fetchone()[0]

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        try:
            cur = self.conn.execute(sql, tuple(params))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        except sqlite3.DatabaseError as e:
            if not is_storage_failure(e):
                raise
            raise storage_error(self.path, e) from None

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM _runs WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def runs(self) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM _runs ORDER BY seq")

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

    def correctness(self, run_id: str) -> dict[str, bool]:
        return {
            r[0]: bool(r[1])
            for r in self.conn.execute(
                "SELECT question_id, correct FROM predictions WHERE run_id = ?", (run_id,)
            )
        }

    def scores(self, run_id: str) -> dict[str, float]:
        """question_id -> score, for the run's answers with a verdict."""
        return {
            r[0]: float(r[1])
            for r in self.conn.execute(
                "SELECT question_id, score FROM predictions WHERE run_id = ? AND score IS NOT NULL",
                (run_id,),
            )
        }
