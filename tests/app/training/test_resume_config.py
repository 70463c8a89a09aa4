"""`--resume` continues a run as it was configured, not with the defaults."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
CONFIG = """
epochs = 1
task_types = ["ledger", "units"]
edit_budget_start = 3
[gate]
n_max = 50
"""


@pytest.fixture
def setup(tmp_path: Path):
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws, config


def kill_mid_run(ws: Path, config: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "main.py",
            "train",
            "-w",
            str(ws),
            "--config",
            str(config),
            "--no-progress",
            "--set",
            "sim_latency_ms=5",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not list((ws / "reports" / "steps").glob("*.json")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_resume_without_config_uses_the_runs_config(setup, tmp_path, capsys):
    ws, config = setup
    kill_mid_run(ws, config)
    capsys.readouterr()
    # sim_latency_ms was a decision setting of the killed process: it carries over too
    assert (
        main(["train", "-w", str(ws), "--resume", "--no-progress", "--set", "sim_latency_ms=0"])
        == 0
    )
    err = capsys.readouterr().err
    assert "structural config changed" not in err
    assert "edit_budget_start" not in err and "gate.n_max" not in err
    assert "sim_latency_ms: 5.0 -> 0.0" in err
    ref = tmp_path / "ref"
    assert main(["init", str(ref), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["train", "-w", str(ref), "--config", str(config), "--no-progress"]) == 0
    assert diff_states(workspace_state(ref), workspace_state(ws)) == []


def test_a_changed_decision_setting_is_shown_before_it_applies(setup, capsys):
    ws, config = setup
    kill_mid_run(ws, config)
    capsys.readouterr()
    assert (
        main(["train", "-w", str(ws), "--resume", "--no-progress", "--set", "edit_budget_start=2"])
        == 0
    )
    err = capsys.readouterr().err
    changed = err.index("edit_budget_start: 3 -> 2")
    assert changed < err.index("resuming train1"), "shown only after the run went on"


def test_an_explicit_structural_change_still_refuses(setup, capsys):
    ws, config = setup
    kill_mid_run(ws, config)
    capsys.readouterr()
    assert main(["train", "-w", str(ws), "--resume", "--no-progress", "--set", "epochs=2"]) == 2
    assert "epochs: 1 -> 2" in capsys.readouterr().err
