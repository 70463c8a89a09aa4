"""One small training on the built-in sim-basic benchmark, through the CLI, for tests that read
what a run wrote (step reports, diagnoses, gate evidence)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]


def train_on_sim_basic(tmp_path: Path, config: str) -> Path:
    """Init `tmp_path/ws` from a copy of the built-in store (seed sim-starter, benchmark
    sim-basic) and train it with `config` (TOML text); returns the workspace."""
    ws = init_sim_basic(tmp_path)
    cfg = tmp_path / "run.toml"
    cfg.write_text(config)
    assert main(["train", "-w", str(ws), "--config", str(cfg), "--no-progress"]) == 0
    return ws


def init_sim_basic(tmp_path: Path) -> Path:
    """`tmp_path/ws`, initialised from a copy of the built-in store (seed sim-starter,
    benchmark sim-basic)."""
    store = tmp_path / "store"
    shutil.copytree(ROOT / "store", store)
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]
    assert main([*init, "--store", str(store)]) == 0
    return ws


def run_patched_cli(patch: str, argv: list[str], kill_at: str | None = None) -> int:
    """`main.py ARGV` in a child process that first runs `patch` (Python statements, e.g. a
    scripted model installed), optionally SIGKILLed at the kill point `kill_at`; returns its
    exit code (0, or -9 when killed) and fails the test on any other."""
    env = {k: v for k, v in os.environ.items() if k != "SKILL_TRAINER_KILL_AT"}
    if kill_at:
        env["SKILL_TRAINER_KILL_AT"] = kill_at
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); {patch}; " + (
        "from app.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode in (0, -9), proc.stderr[-2000:]
    return proc.returncode
