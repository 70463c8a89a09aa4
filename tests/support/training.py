"""One small training on the built-in sim-basic benchmark, through the CLI, for tests that read
what a run wrote (step reports, diagnoses, gate evidence)."""

from __future__ import annotations

import shutil
from pathlib import Path

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]


def train_on_sim_basic(tmp_path: Path, config: str) -> Path:
    """Init `tmp_path/ws` from a copy of the built-in store (seed sim-starter, benchmark
    sim-basic) and train it with `config` (TOML text); returns the workspace."""
    store = tmp_path / "store"
    shutil.copytree(ROOT / "store", store)
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]
    assert main([*init, "--store", str(store)]) == 0
    cfg = tmp_path / "run.toml"
    cfg.write_text(config)
    assert main(["train", "-w", str(ws), "--config", str(cfg), "--no-progress"]) == 0
    return ws
