"""The harness log's schema: the migrations that build it, one list of statements each, and
the tables a run writes (docs/architecture.md#the-harness-log). A schema change is a new
migration here plus the table module that writes and reads the table; nothing else."""

from __future__ import annotations

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
