"""The progress bars' ETA (app/progress.py): each bar's from its own pace, and a training run's
from the model calls its stored estimate expects (app/harness/training/run_progress.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.progress import Progress

from app.harness.training.run_progress import calls_eta
from app.harness.workspace.harness_log import HarnessLog
from app.progress import CallsEta, EtaColumn, eta_seconds, eta_text


def test_eta_is_elapsed_over_done_times_what_remains() -> None:
    assert eta_seconds(30.0, 10, 40) == pytest.approx(90.0)
    assert eta_seconds(30.0, 0, 40) is None  # no pace yet
    assert eta_seconds(30.0, 50, 40) == 0.0
    assert [eta_text(s) for s in (None, 12.4, 185, 3720)] == [
        "",
        "ETA 12s",
        "ETA 3m05s",
        "ETA 1h02m",
    ]


def test_every_bar_shows_its_eta() -> None:
    clock = [100.0]
    progress = Progress(EtaColumn(), auto_refresh=False, get_time=lambda: clock[0])
    task_id = progress.add_task("steps", total=40)
    task = progress.tasks[0]
    assert str(EtaColumn().render(task)) == ""  # nothing done: no pace yet
    clock[0] = 130.0  # 30 s in, 10 of 40 done
    progress.update(task_id, completed=10)
    assert str(EtaColumn().render(task)) == "ETA 1m30s"


def test_a_run_eta_comes_from_the_calls_its_estimate_expects() -> None:
    eta = CallsEta("train1", expected=1000, done_before=200, started=100.0)
    # 300 new calls in 60 s here: 500 of 1000 done, 500 left at 5 calls/s
    assert eta.text(300, now=160.0) == "500/1000 calls expected, ETA 1m40s"
    assert eta.text(0, now=160.0) == "200/1000 calls expected"


def test_the_run_eta_reads_the_estimate_tied_to_the_run(tmp_path: Path) -> None:
    log = HarnessLog(tmp_path / "harness.db")
    analyses = tmp_path / "analyses"
    analyses.mkdir()
    assert calls_eta(analyses, log) is None  # no estimate: no run ETA
    calls = [("baseline", 0), ("train1", 0), ("train1", 1), ("train1-probe", 0), ("eval-1", 0)]
    with log._txn():
        for run_id, hit in calls:
            log.conn.execute(
                "INSERT INTO llm_calls (run_id, cache_hit) VALUES (?, ?)", (run_id, hit)
            )
    est = {"train_id": "train1", "calls": 900, "first_call_id": 1, "same_config": True}
    (analyses / "estimate.json").write_text(json.dumps(est))
    eta = calls_eta(analyses, log)
    assert eta is not None and (eta.train_id, eta.expected, eta.done_before) == ("train1", 900, 3)
    (analyses / "estimate.json").write_text(json.dumps({**est, "same_config": False}))
    assert calls_eta(analyses, log) is None  # made for another config: its count is not this run's
