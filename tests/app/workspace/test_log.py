"""HarnessLog: WAL, migrations, uniqueness, LIKE-escaped clearing, atomic batches, and a
reader polling while another process writes (docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from app.errors import UserError
from app.harness.workspace.harness_log import (
    MIGRATIONS,
    RECORD_TYPES,
    RUN_TABLES,
    SCHEMA_VERSION,
    HarnessLog,
    escape_like,
)
from app.harness.workspace.harness_log.connection import record_columns
from app.harness.workspace.harness_log.predictions import PredictionRecord
from app.secrets import process_secrets
from tests.support.log_rows import insert_rows, upsert_predictions

ROOT = Path(__file__).resolve().parents[3]
WRITER = Path(__file__).parents[1] / "scripts" / "log_writer.py"


@pytest.fixture
def log(tmp_path: Path):
    with HarnessLog(tmp_path / "harness.db") as log:
        yield log


def columns(log: HarnessLog, table: str) -> dict[str, bool]:
    """column name -> NOT NULL"""
    return {r[1]: bool(r[3]) for r in log.conn.execute(f"PRAGMA table_info({table})")}


def add_run(log: HarnessLog, run_id: str) -> None:
    """Register a run and put one row for it in every run table."""
    log.register_run(run_id, kind="test")
    for table in RUN_TABLES:
        row = {"run_id": run_id}
        if "question_id" in columns(log, table):
            row["question_id"] = "q1"
        if "branch_index" in columns(log, table):  # the best-of-N rollout tables (migration 4)
            row["branch_index"] = 0
        insert_rows(log, table, [row])


def run_ids_everywhere(log: HarnessLog) -> dict[str, set[str]]:
    found = {"_runs": {r[0] for r in log.conn.execute("SELECT run_id FROM _runs")}}
    for table in RUN_TABLES:
        found[table] = {r[0] for r in log.conn.execute(f"SELECT run_id FROM {table}")}
    return found


def assert_only(log: HarnessLog, expected: set[str]) -> None:
    for table, ids in run_ids_everywhere(log).items():
        assert ids == expected, f"{table}: {sorted(ids)} != {sorted(expected)}"


def prediction(run_id: str, qid: str, pred: str = "1", **extra) -> dict:
    return {
        "run_id": run_id,
        "question_id": qid,
        "unit_id": qid,
        "task_type": "ledger",
        "prediction": pred,
        "answer": "1",
        "correct": int(pred == "1"),
        **extra,
    }


# -- schema ------------------------------------------------------------------------------------


def test_wal_mode_and_busy_timeout(log: HarnessLog) -> None:
    assert log.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    assert log.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    # WAL is persistent: a plain second connection sees it too
    with sqlite3.connect(log.path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"


def test_migrations_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    HarnessLog(path).close()
    with HarnessLog(path) as log:  # reopening applies nothing twice
        rows = log.query(
            "SELECT version, description, applied_at FROM _migrations ORDER BY version"
        )
        assert [r["version"] for r in rows] == list(range(1, len(MIGRATIONS) + 1))
        assert [r["description"] for r in rows] == [d for d, _ in MIGRATIONS]
        assert all(r["applied_at"] for r in rows)
        assert log.schema_version() == SCHEMA_VERSION
        tables = {
            r[0] for r in log.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        assert {"_runs", "_migrations", *RUN_TABLES} <= tables
        for table in RUN_TABLES:
            assert "run_id" in columns(log, table), table
        indexes = {r["name"]: r["unique"] for r in log.query("PRAGMA index_list(predictions)")}
        assert indexes.get("idx_pred_run_q") == 1


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    with HarnessLog(path) as log:
        log.conn.execute(
            "INSERT INTO _migrations VALUES (?, 'from the future', 'later')", (SCHEMA_VERSION + 1,)
        )
    with pytest.raises(UserError) as err:
        HarnessLog(path)
    message = str(err.value)
    assert str(path) in message and "newer" in message and str(SCHEMA_VERSION + 1) in message
    with sqlite3.connect(path) as conn:  # and nothing was changed by the refused open
        assert (
            conn.execute("SELECT MAX(version) FROM _migrations").fetchone()[0] == SCHEMA_VERSION + 1
        )


def test_newer_schema_refused_through_the_cli(tmp_path: Path, capsys) -> None:
    from app.cli import main

    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    with sqlite3.connect(ws / "harness.db") as conn:
        conn.execute("INSERT INTO _migrations VALUES (?, 'future', 'later')", (SCHEMA_VERSION + 1,))
    capsys.readouterr()
    assert main(["infer", "-w", str(ws), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "newer" in lines[0] and "Traceback" not in err, err


def test_readonly_log_cannot_write(log: HarnessLog) -> None:
    add_run(log, "r1")
    with HarnessLog(log.path, readonly=True) as reader:
        assert [r.run_id for r in reader.runs()] == ["r1"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.conn.execute("DELETE FROM _runs")
    assert [r.run_id for r in log.runs()] == ["r1"]


# -- predictions ---------------------------------------------------------------------------


def test_predictions_unique_on_run_and_question(log: HarnessLog) -> None:
    insert_rows(log, "predictions", [prediction("r1", "q1"), prediction("r1", "q2")])
    with pytest.raises(sqlite3.IntegrityError):
        insert_rows(log, "predictions", [prediction("r1", "q1", "9")])
    insert_rows(log, "predictions", [prediction("r2", "q1")])  # another run: fine
    upsert_predictions(log, [prediction("r1", "q1", "7"), prediction("r1", "q3")])
    rows = log.query(
        "SELECT run_id, question_id, prediction FROM predictions ORDER BY run_id, question_id"
    )
    assert [(r["run_id"], r["question_id"], r["prediction"]) for r in rows] == [
        ("r1", "q1", "7"),
        ("r1", "q2", "1"),
        ("r1", "q3", "1"),
        ("r2", "q1", "1"),
    ]
    assert log.correctness("r1") == {"q1": False, "q2": True, "q3": True}


@pytest.mark.parametrize("bad", ["null_question_id", "duplicate_in_batch", "duplicate_of_old"])
def test_insert_is_all_or_nothing(log: HarnessLog, bad: str) -> None:
    insert_rows(log, "predictions", [prediction("old", "q0")])
    batch = [prediction("r1", f"q{i}") for i in range(1, 50)]
    if bad == "null_question_id":
        batch.append(prediction("r1", None))
    elif bad == "duplicate_in_batch":
        batch.append(prediction("r1", "q7"))
    else:  # a record has no column its table lacks: no unknown column to try
        batch.append(prediction("old", "q0"))
    with pytest.raises(sqlite3.DatabaseError):
        insert_rows(log, "predictions", batch)
    rows = log.query("SELECT run_id, question_id FROM predictions")
    assert rows == [{"run_id": "old", "question_id": "q0"}]
    # the connection is usable afterwards (no transaction left open)
    assert not log.conn.in_transaction
    insert_rows(log, "predictions", [prediction("r1", "q1")])
    assert log.conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] == 2


def test_register_run_again_replaces_its_rows(log: HarnessLog) -> None:
    add_run(log, "r1")
    add_run(log, "r2")
    log.register_run("r1", kind="retry")
    assert log.run("r1").kind == "retry"
    assert log.run("r1").seq > log.run("r2").seq
    for table, ids in run_ids_everywhere(log).items():
        expected = {"r1", "r2"} if table == "_runs" else {"r2"}
        assert ids == expected, table


# -- clearing --------------------------------------------------------------------------------


def test_escape_like() -> None:
    assert escape_like("a_b%c\\d") == "a\\_b\\%c\\\\d"


def test_clear_runs_with_prefix_underscore_never_matches_other_steps(log: HarnessLog) -> None:
    ids = [
        "t-e1_s1-rollout",
        "t-e1_s1-gate-ledger",
        "t-e1_s10-rollout",
        "t-e1_s11-rollout",
        "t-e1xs1-rollout",
        "t-e1_s2-rollout",
        "t-e10_s1-rollout",
        "xt-e1_s1-rollout",
    ]
    for run_id in ids:
        add_run(log, run_id)
    assert log.clear_runs_with_prefix("t-e1_s1-") == 2
    assert_only(log, set(ids) - {"t-e1_s1-rollout", "t-e1_s1-gate-ledger"})
    assert log.clear_runs_with_prefix("t-e1_s1-") == 0
    assert log.clear_runs_with_prefix("t-e1_s10-") == 1
    assert_only(log, set(ids) - {"t-e1_s1-rollout", "t-e1_s1-gate-ledger", "t-e1_s10-rollout"})


@pytest.mark.parametrize(
    "prefix, deleted",
    [
        ("a%b-", {"a%b-1"}),
        ("100%", {"100%-x"}),
        ("a_b", {"a_b", "a_b-2"}),
        ("back\\slash-", {"back\\slash-1"}),
        ("%", {"%lone"}),
        ("_", {"_lone"}),
    ],
)
def test_clear_runs_with_prefix_wildcards_match_only_themselves(
    log: HarnessLog, prefix: str, deleted: set[str]
) -> None:
    ids = {
        "a%b-1",
        "axxb-1",
        "ab-1",
        "a%bc",
        "100%-x",
        "1000",
        "100x",
        "a_b",
        "a_b-2",
        "axb",
        "a-b",
        "back\\slash-1",
        "backxslash-1",
        "back\\\\slash-1",
        "%lone",
        "_lone",
        "plain",
    }
    for run_id in sorted(ids):
        add_run(log, run_id)
    assert log.clear_runs_with_prefix(prefix) == len(deleted)
    assert_only(log, ids - deleted)


def test_clear_runs_with_prefix_is_case_sensitive(log: HarnessLog) -> None:
    # A user-chosen run id ("Baseline") must not lose rows when "baseline-diagnose-" is cleared.
    for run_id in ("baseline-diagnose-1", "Baseline-diagnose-1"):
        add_run(log, run_id)
    assert log.clear_runs_with_prefix("baseline-diagnose-") == 1
    assert_only(log, {"Baseline-diagnose-1"})


def test_clear_runs_after_seq(log: HarnessLog) -> None:
    for run_id in ("r1", "r2", "r3"):
        add_run(log, run_id)
    seq_r1 = log.run("r1").seq
    assert log.max_run_seq() == seq_r1 + 2
    assert log.clear_runs_after(seq_r1) == ["r2", "r3"]
    assert_only(log, {"r1"})
    assert log.max_run_seq() == seq_r1
    assert log.clear_runs_after(seq_r1) == []
    add_run(log, "r4")
    assert log.run("r4").seq == seq_r1 + 1


# -- one writer process, one reader ------------------------------------------------------------


def test_reader_polls_while_writer_process_inserts_100k_rows(tmp_path: Path) -> None:
    db = tmp_path / "harness.db"
    HarnessLog(db).close()
    total = 100_000
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(db), str(total), "500"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    counts: list[int] = []
    errors: list[str] = []
    deadline = time.monotonic() + 45
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        with HarnessLog(db, readonly=True) as reader:
            while time.monotonic() < deadline:
                finished = writer.poll() is not None
                try:
                    counts.append(
                        reader.conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0]
                    )
                    reader.runs()
                except sqlite3.OperationalError as e:
                    errors.append(str(e))
                if finished:
                    break
                time.sleep(0.002)
        assert writer.poll() is not None, "writer did not finish in time"
        out, err = writer.communicate(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    assert out.strip() == f"done {total}"
    assert not [e for e in errors if "locked" in e], errors[:5]
    assert errors == []
    assert counts[-1] == total
    assert counts == sorted(counts), "a reader saw the row count go down"
    growth = sorted(set(counts))
    assert len([c for c in growth if 0 < c < total]) >= 3, f"reader saw too few steps: {growth}"


def test_schema_2_log_gains_the_model_io_columns_in_migration_3(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE _migrations (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT)"
    )
    for version, (description, statements) in enumerate(MIGRATIONS[:2], start=1):
        for sql in statements:
            conn.execute(sql)
        conn.execute("INSERT INTO _migrations VALUES (?, ?, 'then')", (version, description))
    conn.execute("INSERT INTO llm_calls (run_id, role, status) VALUES ('r', 'agent', 'ok')")
    conn.commit()
    conn.close()
    with HarnessLog(path) as log:
        assert log.schema_version() == SCHEMA_VERSION >= 3
        calls = {r["name"] for r in log.query("PRAGMA table_info(llm_calls)")}
        assert {"attempts", "retries", "timeouts", "response_format"} <= calls
        assert "answer_source" in {r["name"] for r in log.query("PRAGMA table_info(predictions)")}
        assert "reply_attempts" in RUN_TABLES
        assert log.query("SELECT role, attempts FROM llm_calls") == [
            {"role": "agent", "attempts": None}
        ]


def test_schema_3_log_gains_the_rollout_tables_in_migration_4(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE _migrations (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT)"
    )
    for version, (description, statements) in enumerate(MIGRATIONS[:3], start=1):
        for sql in statements:
            conn.execute(sql)
        conn.execute("INSERT INTO _migrations VALUES (?, ?, 'then')", (version, description))
    conn.execute("INSERT INTO predictions (run_id, question_id) VALUES ('r', 'q')")
    conn.commit()
    conn.close()
    with HarnessLog(path) as log:
        assert log.schema_version() >= 4
        tables = {r["name"] for r in log.query("SELECT name FROM sqlite_master")}
        assert {
            "branches",
            "verdicts",
            "judgments",
            "rankings",
            "memories",
            "memories_fts",
        } <= tables
        assert log.query("SELECT question_id FROM predictions") == [{"question_id": "q"}]
        assert {"branches", "verdicts", "judgments", "rankings"} <= set(RUN_TABLES)


def test_schema_4_log_names_evolution_results_and_drops_reserved_in_migration_5(tmp_path):
    """Migration 5 backfills evolutions.result_version from the step report's new_version and
    removes the never-written `traces` table and `dual_metric.soft_score`; other rows stay."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE _migrations (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT)"
    )
    for version, (description, statements) in enumerate(MIGRATIONS[:4], start=1):
        for sql in statements:
            conn.execute(sql)
        conn.execute("INSERT INTO _migrations VALUES (?, ?, 'then')", (version, description))
    for task_type, new_version in (("ledger", "skills-v3"), ("tax", None)):
        conn.execute(
            "INSERT INTO evolutions (run_id, task_type, source_version) VALUES (?, ?, 'skills-v2')",
            ("t1-e1-s2-evolve", task_type),
        )
        conn.execute(
            "INSERT INTO step_reports (run_id, task_type, report_json) VALUES (?, ?, ?)",
            ("t1-e1-s2-report", task_type, json.dumps({"new_version": new_version})),
        )
    # the same task type one step later accepted something else: it must not leak back
    conn.execute(
        "INSERT INTO step_reports (run_id, task_type, report_json) VALUES (?, ?, ?)",
        ("t1-e1-s3-report", "tax", json.dumps({"new_version": "skills-v4"})),
    )
    conn.execute(
        "INSERT INTO dual_metric (run_id, epoch, eval_run_id, hard_acc, soft_score) "
        "VALUES ('t1-e1-slow-val', 1, 't1-e1-slow-val', 0.5, NULL)"
    )
    conn.commit()
    conn.close()
    with HarnessLog(path) as log:
        assert log.schema_version() == SCHEMA_VERSION >= 5
        assert log.query(
            "SELECT task_type, source_version, result_version FROM evolutions ORDER BY task_type"
        ) == [
            {"task_type": "ledger", "source_version": "skills-v2", "result_version": "skills-v3"},
            {"task_type": "tax", "source_version": "skills-v2", "result_version": None},
        ]
        tables = {r["name"] for r in log.query("SELECT name FROM sqlite_master")}
        assert "traces" not in tables and "traces" not in RUN_TABLES
        assert set(columns(log, "dual_metric")) == {
            "id",
            "run_id",
            "epoch",
            "eval_run_id",
            "hard_acc",
        }
        assert log.query("SELECT run_id, epoch, hard_acc FROM dual_metric") == [
            {"run_id": "t1-e1-slow-val", "epoch": 1, "hard_acc": 0.5}
        ]


def test_set_result_version_names_one_evolution(log: HarnessLog) -> None:
    insert_rows(
        log,
        "evolutions",
        [{"run_id": "t1-e1-s1-evolve", "task_type": t} for t in ("ledger", "tax")],
    )
    log.set_result_version("t1-e1-s1-evolve", "tax", "skills-v2")
    assert log.query("SELECT task_type, result_version FROM evolutions ORDER BY task_type") == [
        {"task_type": "ledger", "result_version": None},
        {"task_type": "tax", "result_version": "skills-v2"},
    ]


# -- records -------------------------------------------------------------------------------


def test_each_record_type_has_its_tables_columns(log: HarnessLog) -> None:
    """A record's fields are its table's columns (`id` left to SQLite), so a migration that
    adds a column fails here until the record has it."""
    assert set(RECORD_TYPES) | {"memories", "resumes"} >= set(RUN_TABLES)
    for table, kind in RECORD_TYPES.items():
        assert set(record_columns(kind)) - {"id"} == set(columns(log, table)) - {"id"}, table


def test_one_builder_makes_every_predictions_row(
    log: HarnessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer and trajectory are scrubbed of secrets and `correct` stored as 0/1 or
    NULL, whichever writer builds the row."""
    monkeypatch.setenv("SKILL_TRAINER_TEST_SECRET_KEY", "hunter2-hunter2-hunter2")
    process_secrets.cache_clear()
    try:
        row = PredictionRecord.build(
            run_id="r1",
            question_id="q1",
            unit_id="q1",
            task_type="ledger",
            prediction="hunter2-hunter2-hunter2 is the key",
            answer="42",
            correct=True,
            stop_reason="final",
            steps=[{"type": "model", "text": "hunter2-hunter2-hunter2"}],
            tokens=(10, 2),
            cost_usd=0.001,
            latency_s=0.5,
            versions=("v1", "v1"),
            created_at="2026-01-01T00:00:00+00:00",
        )
    finally:
        monkeypatch.delenv("SKILL_TRAINER_TEST_SECRET_KEY")
        process_secrets.cache_clear()
    assert "hunter2" not in row.prediction and "hunter2" not in row.steps_json
    assert row.correct == 1 and json.loads(row.steps_json)[0]["type"] == "model"
    log.upsert_predictions([row, replace(row, question_id="q2", correct=None)])
    assert log.correctness("r1") == {"q1": True, "q2": False}
    assert [t.question_id for t in log.trajectories("r1")] == ["q1", "q2"]
