"""The final look's coin (core/evolution/gate.py, `[gate] final_look_coin`): a test that ends
one win short of the exact level is accepted when its coin, drawn from the run's seed and the
test's id before any outcome (core/evolution/acceptance.py `draw_coin`), falls below the chance
that spends α exactly. Trained through the CLI on a 72-unit simulated world, as
bench/acceptance.py trains it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.paths import builtin_store
from core.evolution.acceptance import draw_coin
from tests.app.training.test_train import ROOT, run_cli

# bench/acceptance.py's world 2 at 72 units in its default setting (3% of answers noisy)
WORLD = ["sim_world_seed=2", "sim_units_per_type=72", "sim_noise_share=0.03"]
NAME = "sim-w2-u72"


def _train(root: Path, *more: str) -> Path:
    """bench/acceptance.py's world 2 at 72 units, trained with app/demo.toml."""
    store = root / "store"
    if not store.exists():
        shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
        out = store / "questions" / NAME
        gen = [sys.executable, "-m", "app.providers.sim.generate", "--seed", "2", "--units", "72"]
        gen += ["--name", NAME, "--out", str(out)]
        subprocess.run(gen, cwd=ROOT, check=True, capture_output=True)
    ws = root / f"ws{len(list(root.glob('ws*')))}"
    where = ["--questions", NAME, "--store", str(store)]
    assert main(["init", str(ws), "--seed", "sim-starter", *where]) == 0
    config = str(ROOT / "app" / "demo.toml")
    sets = [arg for kv in WORLD for arg in ("--set", kv)]
    proc = run_cli("train", "-w", str(ws), "--config", config, *sets, *more, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def _reports(ws: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((ws / "reports" / "steps").glob("*.json"))]


@pytest.fixture(scope="module")
def coin_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("coin")
    return _train(root), _train(root, "--set", "gate.final_look_coin=false")


def test_an_accept_on_the_coin_is_one_win_short_and_says_so(coin_runs: tuple[Path, Path]) -> None:
    """Each accept on the coin had the run's own coin below its chance, says so in its
    summary, and is a test the same run without the coin rejects at that step."""
    with_coin, without = coin_runs
    on_coin = [r for r in _reports(with_coin) if r.get("chance") is not None and r["chance"] < 1]
    assert on_coin, "no test of this world ended one win short (the fixture's premise)"
    plain = {(r["epoch"], r["step"], r["task_type"]): r for r in _reports(without)}
    first = min(on_coin, key=lambda r: (r["epoch"], r["step"]))
    for r in on_coin:
        assert r["action"] == "accept" and 0 < r["chance"] < 1
        assert draw_coin(1, r["gate_run_id"]) < r["chance"]  # config seed 1: the default
        assert "accepted on the test's coin (chance" in r["summary"]
    # before the two runs part ways, the same test without the coin rejects what it accepted
    twin = plain[(first["epoch"], first["step"], first["task_type"])]
    assert (twin["W"], twin["L"]) == (first["W"], first["L"])
    assert twin["action"] == "reject"
    assert all(r.get("chance") in (None, 1.0) for r in plain.values())
