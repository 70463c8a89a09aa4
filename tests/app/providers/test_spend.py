"""Spend is a property of the run: kept across kills and resumes, bounded by max_cost_usd."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main
from app.report import workspace_summary

ROOT = Path(__file__).resolve().parents[3]
ARGS = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def paid_in_cache(ws: Path) -> float:
    """Every paid call leaves exactly one response-cache row holding its cost: the real spend."""
    conn = sqlite3.connect(ws / "response_cache.db")
    try:
        return sum(
            json.loads(r[0])["cost_usd"]
            for r in conn.execute("SELECT response_json FROM responses")
        )
    finally:
        conn.close()


def test_max_cost_bounds_the_run_across_resumes(ws, capsys):
    cap = 0.04
    assert main(["train", "-w", str(ws), *ARGS, "--set", f"max_cost_usd={cap}"]) == 1
    for _ in range(5):
        assert (
            main(["train", "-w", str(ws), "--resume", *ARGS, "--set", f"max_cost_usd={cap}"]) == 1
        )
    err = capsys.readouterr().err
    assert "cost budget of $0.0400 reached" in err
    spent = paid_in_cache(ws)
    assert spent < cap + 0.005, f"five resumes spent ${spent:.4f} against a ${cap} cap"
    summary = workspace_summary(ws)
    assert summary["spent_usd"] == pytest.approx(spent)
    ckpt = json.loads((ws / "checkpoint.json").read_text())
    assert ckpt["progress"]["spent_usd"] == pytest.approx(spent, abs=0.005)
    # raising the cap continues the same run, still counting what it spent before
    assert main(["train", "-w", str(ws), "--resume", *ARGS, "--set", "max_cost_usd=5.0"]) == 0
    assert workspace_summary(ws)["spent_usd"] == pytest.approx(paid_in_cache(ws))


def test_a_killed_process_keeps_its_real_cost(ws):
    proc = subprocess.Popen(
        [sys.executable, "main.py", "train", "-w", str(ws), *ARGS, "--set", "sim_latency_ms=3"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (ws / "checkpoint.json").exists() or paid_in_cache(ws) < 0.03:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    paid_before_resume = paid_in_cache(ws)
    assert main(["train", "-w", str(ws), "--resume", *ARGS]) == 0
    summary = workspace_summary(ws)
    real = paid_in_cache(ws)
    assert real >= paid_before_resume
    # the killed process's calls count; the redone step's cache hits do not erase them
    assert summary["spent_usd"] >= real - 1e-9
    assert summary["spent_usd"] <= real + 0.002  # at most a call or two paid twice
    logged = sum((c["cost_usd"] or 0) for c in summary["llm_calls"])
    assert summary["spent_usd"] >= logged


def test_report_prints_what_was_really_spent(ws, capsys):
    assert main(["train", "-w", str(ws), *ARGS]) == 0
    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    out = capsys.readouterr().out
    assert f"spent      ${paid_in_cache(ws):.4f} in paid model calls" in out
