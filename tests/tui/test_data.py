"""The TUI's read-only query layer: paging, filters, counts, status, change detection."""

from __future__ import annotations

import json
import os
import socket

from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.harness_log import HarnessLog
from app.tui.data import (
    PredictionFilter,
    StepFilter,
    WorkspaceData,
    list_workspaces,
)
from tests.support.log_rows import insert_rows


def test_steps_page_one_row_per_report_and_filters(demo_ws):
    data = WorkspaceData(demo_ws.root)
    page = data.steps_page(StepFilter(), limit=200)
    assert page.total == len(demo_ws.step_files) == len(page.rows)
    assert {(r["epoch"], r["step"], r["task_type"]) for r in page.rows} == {
        tuple(json.loads(p.read_text())[k] for k in ("epoch", "step", "task_type"))
        for p in demo_ws.step_files
    }
    accepted = data.steps_page(StepFilter(action="accept")).rows
    assert [r["task_type"] for r in accepted] == ["ledger"]
    ledger = data.steps_page(StepFilter(task_type="ledger")).rows
    assert {r["action"] for r in ledger} == {"accept", "skip_no_change"}
    # offset paging covers every row exactly once, in the requested order
    seen = []
    for offset in range(0, page.total, 3):
        seen += [
            r["id"]
            for r in data.steps_page(
                StepFilter(), sort="e_value", descending=False, offset=offset, limit=3
            ).rows
        ]
    assert sorted(seen) == sorted(r["id"] for r in page.rows)
    assert len(seen) == len(set(seen))


def test_step_detail_has_evidence_in_ladder_order_and_diff(demo_ws):
    data = WorkspaceData(demo_ws.root)
    row = data.steps_page(StepFilter(action="accept")).rows[0]
    detail = data.step_detail(row["id"])
    assert detail["row"]["e_value"] == demo_ws.accepted_step["e_value"]
    idx = [e["idx"] for e in detail["evidence"]]
    assert idx == sorted(idx) and len(idx) == 14
    for line in demo_ws.added_lines:
        assert "+" + line in detail["report"]["diff"]


def test_prediction_keyset_pages_cover_the_run_both_ways(demo_ws):
    data = WorkspaceData(demo_ws.root)
    run, flt = demo_ws.rollout_run, PredictionFilter()
    expected = sorted(p["question_id"] for p in demo_ws.predictions)
    page = data.predictions_page(run, flt, limit=5)
    forward = [r["question_id"] for r in page.rows]
    assert not page.has_prev
    while page.has_next:
        page = data.predictions_page(run, flt, after=page.last, limit=5)
        forward += [r["question_id"] for r in page.rows]
    assert forward == expected
    page = data.predictions_page(run, flt, last=True, limit=5)
    backward = [r["question_id"] for r in page.rows]
    assert page.has_prev and not page.has_next
    while page.has_prev:
        page = data.predictions_page(run, flt, before=page.first, limit=5)
        backward = [r["question_id"] for r in page.rows] + backward
    assert backward == expected
    total, position = data.predictions_count(run, flt, first_key=expected[10])
    assert (total, position) == (24, 10)


def test_prediction_filters(demo_ws):
    data = WorkspaceData(demo_ws.root)
    run = demo_ws.rollout_run
    preds = demo_ws.predictions

    def ids(flt: PredictionFilter) -> set[str]:
        return {r["question_id"] for r in data.predictions_page(run, flt).rows}

    assert ids(PredictionFilter(correct=False)) == {
        p["question_id"] for p in preds if not p["correct"]
    }
    assert ids(PredictionFilter(correct=True)) == {p["question_id"] for p in preds if p["correct"]}
    assert ids(PredictionFilter(stop_reason="error")) == {
        p["question_id"] for p in preds if p["stop_reason"] == "error"
    }
    assert ids(PredictionFilter(task_type="units")) == {
        p["question_id"] for p in preds if p["task_type"] == "units"
    }
    target = preds[7]["question_id"]
    assert target in ids(PredictionFilter(search=target))
    assert ids(PredictionFilter(search="100%_no_such")) == set()  # LIKE wildcards escaped
    assert data.predictions_count(run, PredictionFilter(correct=False))[0] == sum(
        1 for p in preds if not p["correct"]
    )


def test_runs_page_newest_first_with_counts(demo_ws):
    data = WorkspaceData(demo_ws.root)
    page = data.runs_page(limit=4)
    assert [r["seq"] for r in page.rows] == [6, 5, 4, 3]
    assert page.has_next and not page.has_prev
    older = data.runs_page(before=page.last, limit=4)
    assert [r["seq"] for r in older.rows] == [2, 1]
    assert older.rows[0]["n_predictions"] == 24
    newer = data.runs_page(after=older.first, limit=4)
    assert [r["seq"] for r in newer.rows] == [6, 5, 4, 3]
    assert [r["seq"] for r in data.runs_page(last=True, limit=4).rows] == [4, 3, 2, 1]
    assert all(r["simulated"] for r in page.rows)


def test_status_from_lock_and_runs(fresh_ws):
    data = WorkspaceData(fresh_ws.root)
    assert data.run_status().state == "stopped"  # train run "running", no live process
    lock = fresh_ws.root / "train.lock"
    write_json_atomic(
        lock,
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": "2025-01-02T03:04:05+00:00",
        },
    )
    assert data.run_status().state == "running"
    write_json_atomic(lock, {"pid": 2**22 + 12345, "host": socket.gethostname(), "started_at": "x"})
    assert data.run_status().state == "stopped"  # stale lock: dead pid
    lock.unlink()
    with HarnessLog(fresh_ws.root / "harness.db") as log:
        log.finish_run("train-20250102-0304", "done")
    assert data.run_status().state == "finished"
    with HarnessLog(fresh_ws.root / "harness.db") as log:
        log.finish_run("train-20250102-0304", "failed")
    assert data.run_status().state == "failed"


def test_cost_totals_incremental_and_after_deletes(fresh_ws):
    data = WorkspaceData(fresh_ws.root)
    with data.reader() as r:
        before = {c["role"]: c for c in data.calls_by_role(r)}
    assert before["agent"]["calls"] == 20
    row = {
        "run_id": "x",
        "role": "agent",
        "model": "m",
        "tokens_in": 5,
        "tokens_out": 1,
        "cost_usd": 1.0,
        "latency_s": 0.0,
        "status": "ok",
        "cache_hit": 0,
        "at": "t",
    }
    with HarnessLog(fresh_ws.root / "harness.db") as log:
        insert_rows(log, "llm_calls", [row, row])
    with data.reader() as r:
        after = {c["role"]: c for c in data.calls_by_role(r)}
    assert after["agent"]["calls"] == 22
    assert after["agent"]["cost_usd"] == before["agent"]["cost_usd"] + 2.0
    with HarnessLog(fresh_ws.root / "harness.db") as log:
        log.clear_run("e1_s1_rollout")  # deletes below the high-water mark
        insert_rows(log, "llm_calls", [row])
    with data.reader() as r:
        final = {c["role"]: c for c in data.calls_by_role(r)}
    assert set(final) == {"agent"} and final["agent"]["calls"] == 3


def test_fingerprint_changes_only_what_changed(fresh_ws):
    data = WorkspaceData(fresh_ws.root)
    a = data.fingerprint()
    assert data.fingerprint() == a
    with HarnessLog(fresh_ws.root / "harness.db") as log:
        insert_rows(
            log,
            "step_reports",
            [{"run_id": "r", "epoch": 3, "step": 1, "task_type": "ledger", "action": "reject"}],
        )
    b = data.fingerprint()
    assert {k for k in a if a[k] != b[k]} == {"steps"}


def test_versions_and_diff(demo_ws):
    data = WorkspaceData(demo_ws.root)
    skills = data.versions("skills")
    assert [v.version for v in skills] == demo_ws.skills_versions
    assert skills[1].parent == "v1" and skills[1].source == "evolve:e1_s1_ledger"
    diff = data.version_diff("skills", "v1", "v2", "ledger.md")
    assert all("+" + line in diff for line in demo_ws.added_lines)
    assert data.version_diff("skills", "v1", "v2", "../manifest.json") == ""


def test_list_workspaces(tmp_path, demo_ws):
    (tmp_path / "not-a-workspace").mkdir()
    found = list_workspaces(demo_ws.root.parent)
    assert [w["name"] for w in found] == [demo_ws.root.name]
    assert found[0]["status"] == "stopped" and found[0]["skills"] == "skills/v4"
    assert list_workspaces(tmp_path) == []


def test_a_gate_draw_shows_the_question_it_asks_again(demo_ws):
    """A gate draw's prediction (`[gate] draws`) is of `<question id>#d<r>`: the trajectory
    screen shows the benchmark question it draws."""
    data = WorkspaceData(demo_ws.root)
    qid = demo_ws.predictions[0]["question_id"]
    asked = data.question(qid)
    assert asked is not None and asked["question_id"] == qid
    assert data.question(f"{qid}#d2") == asked
    assert data.question(f"{qid}#d0") is None  # draw 0 is the question itself, never marked
    assert data.question(f"{qid}#dx") is None
    assert data.question("no-such-question#d1") is None
