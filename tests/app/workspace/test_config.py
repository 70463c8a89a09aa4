"""RunConfig: TOML + `--set` overrides, errors that name the key, range checks, and the
structural/decision fingerprint split (docs/architecture.md#checkpoint-and-resume)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.workspace.config import (
    KEYS,
    GateConfig,
    RunConfig,
    build_config,
    fingerprint,
    fingerprint_changes,
    load_config,
    parse_override,
    recorded_config,
)
from app.paths import demo_config
from core.evolution.gate import GateParams


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file() -> None:
    assert load_config(None) == RunConfig()


def test_a_candidate_carries_up_to_five_edits_all_run_long() -> None:
    """The default and the demo agree: 5 edits throughout (docs/training.md, "How many edits a
    candidate carries", measured against 3 annealed to 1)."""
    for config in (RunConfig(), load_config(demo_config())):
        assert (config.edit_budget_start, config.edit_budget_end) == (5, 5)


def test_load_from_toml_with_nested_tables_and_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
epochs = 2
batch_size = 16
agent_model = "sim/basic"
task_types = ["ledger", "units"]
max_cost_usd = 3
[gate]
e_confirm = 20
strategy = "minibatch"
[sim]
latency_ms = 5
""",
    )
    config = load_config(path)
    assert config.epochs == 2 and config.batch_size == 16
    assert config.task_types == ("ledger", "units")
    assert config.gate.e_confirm == 20.0 and isinstance(config.gate.e_confirm, float)
    assert config.gate.strategy == "minibatch"
    assert config.sim_latency_ms == 5.0
    assert config.max_cost_usd == 3.0
    overrides = dict(
        parse_override(s)
        for s in [
            "epochs=3",
            "gate.e_confirm=50",
            "agent_model=openai/gpt-4o-mini",
            "evolve_prompts=false",
            'task_types=["dates"]',
        ]
    )
    config = load_config(path, overrides)
    assert config.epochs == 3  # override wins
    assert config.batch_size == 16  # the file still applies
    assert config.gate.e_confirm == 50.0
    assert config.gate.strategy == "minibatch"  # the rest of the file's [gate] still applies
    assert config.agent_model == "openai/gpt-4o-mini"  # not TOML: read as a plain string
    assert config.evolve_prompts is False
    assert config.task_types == ("dates",)


def test_parse_override_needs_key_value() -> None:
    with pytest.raises(UserError, match="key=value"):
        parse_override("epochs")
    assert parse_override(" concurrency = 4") == ("concurrency", 4)
    assert parse_override("api_base=http://localhost:8000/v1") == (
        "api_base",
        "http://localhost:8000/v1",
    )


@pytest.mark.parametrize(
    "text, key",
    [
        ("epoch = 2\n", "epoch"),
        ("[gate]\ne_confirmm = 20\n", "gate.e_confirmm"),
        ("gate_e_confirmm = 20\n", "gate_e_confirmm"),
        ("[models]\nagent = 'x'\n", "models_agent"),
    ],
)
def test_unknown_key_in_file_is_named(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_config(path)
    assert f"'{key}'" in str(err.value) and str(path) in str(err.value)


def test_unknown_key_in_override_is_named() -> None:
    with pytest.raises(UserError, match="unknown config key 'bogus'"):
        load_config(None, {"bogus": 1})


@pytest.mark.parametrize(
    "text, key",
    [
        ('epochs = "four"\n', "epochs"),
        ("epochs = 2.5\n", "epochs"),
        ("epochs = true\n", "epochs"),
        ('[gate]\ne_confirm = "high"\n', "gate.e_confirm"),
        ("evolve_prompts = 1\n", "evolve_prompts"),
        ("agent_model = 7\n", "agent_model"),
        ("task_types = [1, 2]\n", "task_types"),
        ('task_types = "ledger"\n', "task_types"),
        ("gate_lambda_dir = false\n", "gate.lambda_dir"),
        ("gate = 3\n", "gate"),
    ],
)
def test_wrong_type_is_named(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        load_config(path)
    assert f"key '{key}'" in str(err.value)


def test_wrong_type_in_override_is_named() -> None:
    with pytest.raises(UserError, match="command line: key 'batch_size' must be an integer"):
        load_config(None, dict([parse_override("batch_size=lots")]))


def test_null_only_where_allowed() -> None:
    assert build_config({"max_cost_usd": None}, "t").max_cost_usd is None
    with pytest.raises(UserError, match="key 'epochs' may not be null"):
        build_config({"epochs": None}, "t")


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="invalid TOML"):
        load_config(write(tmp_path, "epochs = \n"))
    with pytest.raises(UserError, match="not found"):
        load_config(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"max_cost_usd": -1.0}, "max_cost_usd"),
        ({"max_cost_usd": 0.0}, "max_cost_usd"),
        ({"edit_budget_start": -1}, "edit_budget_start"),
        ({"edit_budget_end": -2}, "edit_budget_end"),
        ({"epochs": 0}, "epochs"),
        ({"batch_size": -5}, "batch_size"),
        ({"concurrency": 0}, "concurrency"),
        ({"gate.strategy": "vibes"}, "gate.strategy"),
        ({"gate.minibatch_k": 0}, "gate.minibatch_k"),
        ({"gate.guard_err": 1.5}, "gate.guard_err"),
        ({"gate.w_net_min": -1}, "gate.w_net_min"),
        ({"gate.e_futility": 1.0}, "gate.e_futility"),
        ({"gate.n_max": 0}, "gate.n_max"),
        ({"sim_units_per_type": 0}, "sim_units_per_type"),
        ({"gate.lambda_dir": 0.0}, "gate.lambda_dir"),
        ({"gate.lambda_dir": 1.0}, "gate.lambda_dir"),
        ({"gate.lambda_max": 1.5}, "gate.lambda_max"),
        ({"gate.e_confirm": 0.5}, "gate.e_confirm"),
        ({"sim_fault_rate": 1.5}, "sim_fault_rate"),
        ({"gate.delta_min": -0.1}, "gate.delta_min"),
        ({"structured_output": "xml"}, "structured_output"),
        ({"temperature": float("nan")}, "temperature"),
        ({"skill_mode": "sideways"}, "skill_mode"),
        ({"gate.lambda_strategy": "greedy"}, "gate.lambda_strategy"),
    ],
)
def test_range_checks_name_the_key(overrides: dict, key: str) -> None:
    with pytest.raises(UserError) as err:
        load_config(None, overrides)
    assert str(err.value).startswith(f"command line: key '{key}' must be ")
    assert "\n" not in str(err.value)


def test_range_checks_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'epochs = 0\n[gate]\nstrategy = "vibes"\nminibatch_k = 0\n')
    with pytest.raises(UserError) as err:
        load_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for key in ("epochs", "gate.strategy", "gate.minibatch_k"):  # every problem, one line
        assert f"key '{key}'" in message, message
    path = write(tmp_path, "[gate]\nlambda_dir = 1.0\n")
    with pytest.raises(UserError, match=r"key 'gate.lambda_dir' must be in \(0, 1\) \(got 1.0\)"):
        load_config(path)
    # the boundaries themselves are fine
    assert load_config(None, {"gate.minibatch_k": 1}).gate.minibatch_k == 1
    assert load_config(None, {"gate.lambda_dir": 0.99}).gate.lambda_dir == 0.99


def test_the_gate_section_is_the_core_gate_params_with_their_defaults() -> None:
    gate = RunConfig().gate
    assert isinstance(gate, GateParams)
    for f in fields(GateParams):
        assert getattr(gate, f.name) == getattr(GateParams(), f.name), f.name
    assert (gate.strategy, gate.minibatch_k, gate.guard_err) == ("eprocess", 3, 0.2)


@pytest.mark.parametrize(
    "data",
    [
        {"gate": {"n_max": 60, "strategy": "mcnemar"}},  # a [gate] table
        {"gate.n_max": 60, "gate.strategy": "mcnemar"},  # --set gate.n_max=60
        {"gate_n_max": 60, "gate_strategy": "mcnemar"},  # recorded before [gate] was a section
    ],
)
def test_three_spellings_of_a_gate_key(data: dict) -> None:
    config = build_config(data, "t")
    assert (config.gate.n_max, config.gate.strategy) == (60, "mcnemar")
    assert config.gate.e_confirm == 20.0  # the section's other keys keep their defaults


def test_set_with_a_dotted_gate_key_on_the_command_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[gate]\nn_max = 60\n")
    config = load_config(path, dict([parse_override("gate.strategy=mcnemar")]))
    assert (config.gate.n_max, config.gate.strategy) == (60, "mcnemar")


def test_cli_reports_config_errors_as_one_line(tmp_path: Path, capsys) -> None:
    ws = tmp_path / "no-ws"
    capsys.readouterr()
    assert main(["infer", "-w", str(ws), "--set", "bogus_key=1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "'bogus_key'" in lines[0] and "Traceback" not in err, err
    cfg = write(tmp_path, "[gate]\nlambda_dir = 2.0\n")
    assert main(["infer", "-w", str(ws), "--config", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "gate.lambda_dir" in lines[0], err
    assert not ws.exists()


# -- fingerprint -----------------------------------------------------------------------------


def test_fingerprint_splits_structural_and_decision() -> None:
    fp = fingerprint(RunConfig(task_types=("ledger",)), "bench-hash")
    assert set(fp) == {"structural", "decision"}
    structural, decision = fp["structural"], fp["decision"]
    assert structural["benchmark_hash"] == "bench-hash"
    for key in ("seed", "batch_size", "task_types", "epochs", "skill_mode", "max_steps"):
        assert key in structural and key not in decision, key
    for key in (
        "gate.e_confirm",
        "gate.lambda_dir",
        "concurrency",
        "agent_model",
        "evolver_model",
        "temperature",
    ):
        assert key in decision and key not in structural, key
    # every key lands in exactly one side
    assert set(structural) - {"benchmark_hash"} | set(decision) == KEYS
    assert not (set(structural) & set(decision))
    # it survives the JSON round trip of checkpoint.json unchanged
    assert json.loads(json.dumps(fp)) == fp
    assert fingerprint_changes(json.loads(json.dumps(fp)), fp) == ([], [])


def test_fingerprint_changes_classify_each_change() -> None:
    base = fingerprint(RunConfig(), "h1")
    assert fingerprint_changes(base, fingerprint(RunConfig(), "h1")) == ([], [])
    structural, decision = fingerprint_changes(
        base, fingerprint(RunConfig(batch_size=32, concurrency=4), "h1")
    )
    assert structural == ["batch_size: 48 -> 32"]
    assert decision == ["concurrency: 16 -> 4"]
    structural, decision = fingerprint_changes(base, fingerprint(RunConfig(), "h2"))
    assert structural == ["benchmark_hash: 'h1' -> 'h2'"] and decision == []
    structural, decision = fingerprint_changes(
        base, fingerprint(RunConfig(gate=GateConfig(e_confirm=40.0), agent_model="openai/x"), "h1")
    )
    assert structural == []
    assert decision == ["agent_model: 'sim/basic' -> 'openai/x'", "gate.e_confirm: 20.0 -> 40.0"]
    structural, _ = fingerprint_changes(
        base, fingerprint(RunConfig(task_types=("ledger", "units")), "h1")
    )
    assert structural == ["task_types: None -> ['ledger', 'units']"]


def _pre_section_fingerprint(config: RunConfig, benchmark_hash: str) -> dict[str, dict]:
    """The fingerprint as checkpoints recorded it before [gate] was a section: `gate_n_max`."""
    fp = fingerprint(config, benchmark_hash)
    fp["decision"] = {k.replace("gate.", "gate_"): v for k, v in fp["decision"].items()}
    return fp


def test_a_pre_section_checkpoint_config_still_loads_and_compares() -> None:
    config = RunConfig(gate=GateConfig(n_max=60, strategy="mcnemar"), epochs=2)
    old = _pre_section_fingerprint(config, "h1")
    assert "gate_n_max" in old["decision"]
    assert recorded_config(old, "checkpoint.json") == config
    assert fingerprint_changes(old, fingerprint(config, "h1")) == ([], [])
    changed = RunConfig(gate=GateConfig(n_max=80, strategy="mcnemar"), epochs=2)
    assert fingerprint_changes(old, fingerprint(changed, "h1")) == ([], ["gate.n_max: 60 -> 80"])


def test_a_recorded_key_no_longer_known_is_ignored() -> None:
    fp = fingerprint(RunConfig(epochs=2), "h1")
    fp["decision"]["retired_knob"] = 3
    assert recorded_config(fp, "checkpoint.json") == RunConfig(epochs=2)
