"""A run against an unhealthy endpoint leaves nothing behind that a healthy rerun replays:
the simulated model's malformed replies (fault injection) reach the run that got them, but the
response cache never keeps them (app/providers/cache.py, LLMResponse.defect)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app import api

FAULTY = {"sim_fault_rate": 1.0}  # every attempt faults: rate limit, timeout or malformed


def fresh(path: Path) -> Path:
    return api.init_workspace(path, seed="sim-starter", questions="sim-basic").root


def test_a_healthy_infer_after_a_faulty_one_scores_like_a_fresh_workspace(tmp_path):
    clean = api.infer(fresh(tmp_path / "clean")).samples[0]
    ws = fresh(tmp_path / "ws")
    with pytest.raises(api.RunFailed, match="unhealthy"):
        api.infer(ws, overrides=FAULTY)
    after = api.infer(ws).samples[0]
    assert after.stop_reason_counts == clean.stop_reason_counts  # no replayed refusals
    assert (after.accuracy, after.correct) == (clean.accuracy, clean.correct)


def test_a_resumed_train_after_a_faulty_start_has_the_fresh_baseline(tmp_path):
    one_epoch = {"epochs": 1, "task_types": ["ledger", "units"]}
    clean = api.train(fresh(tmp_path / "clean"), overrides=one_epoch)
    ws = fresh(tmp_path / "ws")
    with pytest.raises(api.RunFailed, match="unhealthy"):
        api.train(ws, overrides=one_epoch | FAULTY)
    resumed = api.train(ws, resume=True, overrides=one_epoch | {"sim_fault_rate": 0.0})
    assert resumed.baseline_test_accuracy == clean.baseline_test_accuracy
    assert resumed.test_accuracy == clean.test_accuracy


def test_defective_replies_are_logged_as_failed_calls(tmp_path):
    ws = fresh(tmp_path / "ws")
    with pytest.raises(api.RunFailed, match="unhealthy"):
        api.infer(ws, overrides=FAULTY)
    conn = sqlite3.connect(ws / "harness.db")
    try:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM llm_calls GROUP BY status"))
    finally:
        conn.close()
    assert statuses.get("defect:malformed", 0) > 0, statuses
    assert "ok" not in statuses, statuses  # every attempt faulted: no call reads as fine
