"""A workspace remembers the config its training ran with: every command that runs models
(`eval`, `infer`, `estimate`, `serve`, `train --resume`, ...) uses it unless given `--config`
(app/api_args.py `workspace_config`); `--set` applies on top."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app import api
from app.cli import main
from tests.app.oracle_bench import NAME, SEED, write_store

# a model setting the defaults do not have: sim/oracle (the default sim/basic refuses this
# benchmark) answering every question right
TRAINED_WITH = """
agent_model = "sim/oracle"
evolver_model = "sim/oracle"
judge_model = "sim/oracle"
sim_oracle_accuracy = 1.0
epochs = 1
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace-config")
    store, ws, config = write_store(root / "store"), root / "ws", root / "oracle.toml"
    config.write_text(TRAINED_WITH)
    init = ["init", "-w", str(ws), "--seed", SEED, "--questions", NAME, "--store", str(store)]
    assert main(init) == 0
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0
    return ws


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json", "--no-progress"]) == 0, argv
    return json.loads(capsys.readouterr().out)


def test_eval_infer_and_estimate_use_the_config_the_workspace_trained_with(
    trained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_json(capsys, "eval", "-w", str(trained), "v1")["accuracy"] == 1.0
    assert run_json(capsys, "infer", "-w", str(trained))["samples"][0]["accuracy"] == 1.0
    roles = run_json(capsys, "estimate", "-w", str(trained))["roles"]
    assert {r["role"]: r["model"] for r in roles} == dict.fromkeys(
        ("agent", "evolver", "judge"), "sim/oracle"
    )
    assert api.evaluate(trained, "v1").accuracy == 1.0  # the API alike


def test_set_applies_on_top_of_the_recorded_config_and_config_replaces_it(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    never = ["--set", "sim_oracle_accuracy=0.0"]
    assert run_json(capsys, "eval", "-w", str(trained), "v1", *never)["accuracy"] == 0.0
    plain = tmp_path / "plain.toml"
    plain.write_text("epochs = 1\n")  # sim/basic, which does not know this benchmark
    capsys.readouterr()
    assert main(["eval", "-w", str(trained), "v1", "--config", str(plain)]) == 2
    assert "sim/basic" in capsys.readouterr().err


def test_a_damaged_recorded_config_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, ws = write_store(tmp_path / "store"), tmp_path / "ws"
    assert (
        main(["init", "-w", str(ws), "--seed", SEED, "--questions", NAME, "--store", str(store)])
        == 0
    )
    (ws / "checkpoint.json").write_text(json.dumps({"config_fingerprint": []}))
    capsys.readouterr()
    assert main(["eval", "-w", str(ws), "v1"]) == 2
    err = capsys.readouterr().err
    assert (
        f"{ws / 'checkpoint.json'}: corrupt checkpoint: its 'config_fingerprint' holds no run config"
        in err
    )
