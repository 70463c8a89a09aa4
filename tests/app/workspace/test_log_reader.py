"""The read layer over the harness log (app/harness/workspace/harness_log/reader.py): typed rows that agree with
what the run recorded, and reading never changes the log, an old-schema one included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app import api
from app.harness.workspace.harness_log import MIGRATIONS, Resume, RunStatus
from app.harness.workspace.harness_log.reader import open_reader
from app.harness.workspace.harness_log.rows import (
    BranchRow,
    EpochRow,
    ForkQuestion,
    GateEvidenceRow,
    PageCursor,
    PredictionFilter,
    PredictionRow,
    RunRow,
    StepFilter,
    StepRow,
)

SMALL = {"epochs": 1, "task_types": ["ledger", "units"]}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained workspace with a ranked fork (the demo's tables, smaller)."""
    root = tmp_path_factory.mktemp("reader") / "ws"
    api.init_workspace(root, seed="sim-starter", questions="sim-basic")
    api.train(root, overrides=SMALL)
    api.fork(root, overrides=SMALL, branches=3, limit=3, rollout_id="fork-1")
    api.rank(root, "fork-1", overrides=SMALL)
    return root


def test_runs_and_epochs_are_typed_rows_of_what_the_run_recorded(ws: Path) -> None:
    final = api.report(ws).summary
    with open_reader(ws / "harness.db") as log:
        runs = log.runs()
        epochs = log.epochs()
        train = log.run("train1")
    assert all(isinstance(r, RunRow) for r in runs)
    assert [r.seq for r in runs] == sorted(r.seq for r in runs)
    assert {"baseline", "train", "fork"} <= {r.kind for r in runs}
    assert train is not None and train.status == RunStatus.DONE
    assert train.provenance["simulated_model"] is True
    assert [r.run_id for r in runs] == [r["run_id"] for r in final["runs"]]
    assert [type(e) for e in epochs] == [EpochRow] and epochs[0].epoch == 1
    assert epochs[0].val_acc == final["epochs"][0]["val_acc"]
    assert epochs[0].report["epoch"] == 1


def test_steps_evidence_and_predictions_page_as_typed_rows(ws: Path) -> None:
    with open_reader(ws / "harness.db") as log:
        total = log.steps_count(StepFilter())
        steps = log.steps(StepFilter(), sort="order", descending=False, offset=0, limit=100)
        gated = next(s for s in steps if s.gate_run_id)
        report = log.step_report(gated.id)
        evidence = log.gate_evidence(gated.gate_run_id or "", gated.task_type, 1000)
        page = log.predictions_page("baseline", PredictionFilter(), PageCursor(), 5)
        after = log.predictions_page("baseline", PredictionFilter(), PageCursor(after="~"), 5)
        n_baseline = log.predictions_count("baseline", PredictionFilter())
    assert total == len(steps) > 0 and all(isinstance(s, StepRow) for s in steps)
    assert [(s.epoch, s.step) for s in steps] == sorted((s.epoch, s.step) for s in steps)
    assert report is not None and report.report is not None
    assert report.report["task_type"] == gated.task_type
    assert "report_json" not in report.columns
    assert evidence and all(isinstance(e, GateEvidenceRow) for e in evidence)
    assert [e.idx for e in evidence] == sorted(e.idx for e in evidence)
    assert evidence[-1].w == gated.w and evidence[-1].l == gated.l
    # one row more than a page says another page follows
    assert len(page) == 6 and all(isinstance(p, PredictionRow) for p in page)
    assert [p.question_id for p in page] == sorted(p.question_id for p in page)
    assert after == [] and n_baseline > 6


def test_call_totals_add_up_over_id_ranges(ws: Path) -> None:
    with open_reader(ws / "harness.db") as log:
        whole = {c.role: c for c in log.calls.by_role()}
        max_id, n_rows = log.calls.extent(-1, -1)
        halves = log.calls.by_role_between(0, max_id // 2) + log.calls.by_role_between(
            max_id // 2, max_id
        )
    assert n_rows == sum(c.calls for c in whole.values()) > 0
    for role, c in whole.items():
        assert sum(h.calls for h in halves if h.role == role) == c.calls
        assert sum(h.tokens_in for h in halves if h.role == role) == c.tokens_in


def test_forks_and_branches_are_typed_rows(ws: Path) -> None:
    with open_reader(ws / "harness.db") as log:
        forks = log.forks.runs()
        questions = log.forks.questions("fork-1")
        branches = log.forks.branches("fork-1", questions[0].question_id)
        detail = log.forks.branch(branches[0].id)
    assert [f.run_id for f in forks] == ["fork-1"]
    assert len(questions) == 3 and all(isinstance(q, ForkQuestion) for q in questions)
    assert all(q.branches == 3 for q in questions)
    assert len(branches) == 3 and all(isinstance(b, BranchRow) for b in branches)
    assert branches[0].rank == 1  # ranked: the best first
    assert detail is not None and detail.columns["question_id"] == questions[0].question_id


def _every_read(path: Path) -> None:
    """Runs each kind of query the commands and the TUI run."""
    with open_reader(path, printable=True) as log:
        log.check_integrity()
        log.runs()
        log.resumes()
        log.epochs()
        log.epoch_accuracies()
        log.calls.by_role()
        log.calls.extent(0, 0)
        log.marks()
        log.steps(StepFilter(), sort="order", descending=True, offset=0, limit=10)
        log.runs_page(None, PageCursor(), 10)
        log.predictions_page("baseline", PredictionFilter(search="x"), PageCursor(), 10)
        log.calls.spend_from_calls()
        log.forks.runs()


def test_reading_leaves_the_log_file_untouched(ws: Path) -> None:
    db = ws / "harness.db"
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    _every_read(db)
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def _old_log(path: Path, version: int) -> None:
    """A log as a release with `version` migrations wrote it, with one finished run."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE _migrations (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT)"
    )
    for number, (description, statements) in enumerate(MIGRATIONS[:version], start=1):
        for sql in statements:
            conn.execute(sql)
        conn.execute("INSERT INTO _migrations VALUES (?, ?, 'then')", (number, description))
    conn.execute(
        "INSERT INTO _runs (run_id, seq, kind, status, summary_json) "
        "VALUES ('baseline', 1, 'baseline', 'done', '{\"accuracy\": 0.5}')"
    )
    conn.execute("INSERT INTO llm_calls (run_id, role, status) VALUES ('baseline', 'agent', 'ok')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("version", [2, 5])
def test_an_old_schema_log_is_read_as_it_is(tmp_path: Path, version: int) -> None:
    """No migration runs: the tables and columns later migrations add stay absent, the
    queries that need them say there is nothing, and the file keeps its bytes."""
    db = tmp_path / "old.db"
    _old_log(db, version)
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    with open_reader(db) as log:
        runs = log.runs()
        resumes: list[Resume] = log.resumes(["baseline"])
        has_replies = log.has_table("reply_attempts")
        call_columns = log.columns("llm_calls")
        calls = log.calls.by_role()
    assert [(r.run_id, r.summary["accuracy"]) for r in runs] == [("baseline", 0.5)]
    assert resumes == []  # the resumes table came with migration 6
    assert has_replies == (version >= 3) and ("retries" in call_columns) == (version >= 3)
    assert [(c.role, c.calls) for c in calls] == [("agent", 1)]
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT MAX(version) FROM _migrations").fetchone()[0] == version


@pytest.mark.parametrize("version", [6, len(MIGRATIONS)])
def test_triage_counts_read_a_log_from_before_deciders_as_the_judges(
    tmp_path: Path, version: int
) -> None:
    """Training steps' diagnoses by category and decider; before migration 7 the judge
    decided every one, so that is what an older log's rows count as."""
    db = tmp_path / "log.db"
    _old_log(db, version)
    with sqlite3.connect(db) as conn:
        rows = [
            ("train1-e1-s0-diag", "q1", "skill_gap", "judge"),
            ("train1-e1-s0-diag", "q2", "missing_context", "rule:context_unread"),
            ("train1-e1-s1-diag", "q3", "missing_context", "rule:context_unread"),
            ("baseline-diagnose-diag", "q4", "runtime_fault", "judge"),  # not a training step
        ]
        if version >= 7:
            conn.executemany(
                "INSERT INTO diagnoses (run_id, question_id, category, decided_by) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
        else:
            conn.executemany(
                "INSERT INTO diagnoses (run_id, question_id, category) VALUES (?, ?, ?)",
                [r[:3] for r in rows],
            )
    with open_reader(db) as log:
        counts = [(t.category, t.decided_by, t.failures, t.examples) for t in log.triage_counts()]
    if version >= 7:
        assert counts == [
            ("missing_context", "rule:context_unread", 2, ("q3", "q2")),
            ("skill_gap", "judge", 1, ("q1",)),
        ]
    else:
        assert counts == [
            ("missing_context", "judge", 2, ("q3", "q2")),
            ("skill_gap", "judge", 1, ("q1",)),
        ]
