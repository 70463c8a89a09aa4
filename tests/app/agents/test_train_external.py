"""An outside agent in the rollouts (`[agent]`, app/harness/agents/training_seam.py): `infer`
and `train` run it through the gateway, offline on the simulated model, and the trainer's
edits to its skill files reach it.

The end-to-end run trains examples/agents/command-script/agent.py (a process per rollout,
standard library only: about 50 ms each), kept small: a 24-unit sim-basic world, one
epoch. Its gate is `accept_all` with a helpful evolver (`sim_harmful_share =
sim_useless_share = 0`): at 24 units per type the e-process gate confirms next to no edit for the built-in loop either (tests/app/training/test_train.py
trains on sim-large for that reason), and what this test checks is the wiring (the agent's
failures are diagnosed, the edits land in its skill files, it reads them on the next
rollout), not the gate's statistics.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from app import api
from app.errors import RunFailed, UserError
from app.harness.workspace.config import RunConfig, build_config
from app.providers.sim.generate import write_benchmark
from app.providers.sim.world import build_world

ROOT = Path(__file__).resolve().parents[3]
AGENT = ROOT / "examples" / "agents" / "command-script" / "agent.py"
UNITS = 24
SMALL: dict[str, Any] = {
    "sim_units_per_type": UNITS,
    "epochs": 1,
    "concurrency": 8,
    "gate": {"strategy": "accept_all"},
    "sim_harmful_share": 0.0,
    "sim_useless_share": 0.0,
    "evolve_prompts": False,
    "momentum_samples": 0,
    "holdout_each_epoch": False,
    "eval_min_per_class": 3,
    "trainable_min_units": 8,
}
COMMAND = {"agent_kind": "command", "agent_command": [sys.executable, str(AGENT)]}


def small_workspace(root: Path) -> Path:
    store = root / "store"
    world = build_world("basic", 7, UNITS)
    write_benchmark(world, store / "questions" / "sim-basic", "sim-basic")
    ws = root / "ws"
    api.init_workspace(ws, seed="sim-starter", questions="sim-basic", store=store)
    return ws


def rows(ws: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(ws / "harness.db")
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------ config


def test_builtin_is_the_default_and_the_agent_keys_are_checked() -> None:
    assert RunConfig().agent_kind == "builtin"
    ok = build_config({"agent": {"kind": "command", "command": ["python", "a.py"]}}, "c.toml")
    assert ok.agent_command == ("python", "a.py")
    bad = [
        ({"agent": {"kind": "command"}}, "key 'agent_command' must be the command to run"),
        ({"agent": {"kind": "python", "function": "mod"}}, "key 'agent_function' must be"),
        ({"agent": {"kind": "shell"}}, "key 'agent_kind' must be one of"),
        ({"agent": {"command": ["x"]}}, "key 'agent_command' is set but agent_kind"),
        ({"agent.timeout_s": 0}, "key 'agent_timeout_s' must be > 0"),
        ({"agent.call_cap": 0}, "key 'agent_call_cap' must be >= 1"),
        ({"agent": {"kind": "command", "command": "python a.py"}}, "must be a list"),
    ]
    for data, message in bad:
        with pytest.raises(UserError) as err:
            build_config(data, "c.toml")
        assert message in str(err.value) and "\n" not in str(err.value)


def test_a_relative_agent_file_in_the_command_is_anchored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent runs in a temporary folder: `agent.py` must name the file the user meant,
    beside the config file or in the current directory; other arguments are left alone."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "agent.py").write_text("")
    (tmp_path / "here.py").write_text("")
    monkeypatch.chdir(tmp_path)
    from_file = build_config(
        {"agent": {"kind": "command", "command": ["python3", "agent.py", "--fast"]}},
        "c.toml",
        relative_to=tmp_path / "cfg",
    )
    assert from_file.agent_command == ("python3", str(tmp_path / "cfg" / "agent.py"), "--fast")
    from_cli = build_config(
        {"agent.kind": "command", "agent.command": ["python3", "here.py", "x.py"]}, "command line"
    )
    assert from_cli.agent_command == ("python3", str(tmp_path / "here.py"), "x.py")


# ------------------------------------------------------------------ a python agent, in-process


@pytest.mark.slow  # about 3-10 s: init and two infer runs of 28 questions
def test_a_python_agent_answers_infer_and_its_failures_are_stop_reasons(tmp_path: Path) -> None:
    ws = small_workspace(tmp_path)
    good = {
        **SMALL,
        "agent_kind": "python",
        "agent_function": "tests.app.agents.agent_plugins:good",
    }
    result = api.infer(ws, overrides=good, task_types=["dates"], run_id="good")
    assert result.samples[0].total > 0
    steps = [json.loads(s) for (s,) in rows(ws, "SELECT steps_json FROM predictions")]
    assert all(s[-1]["type"] == "verdict" and s[-1]["agent"]["calls"] == 1 for s in steps)
    assert all(s[0]["type"] == "model" and "ANSWER:" in s[0]["text"] for s in steps)
    calls = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = 'good'")[0][0]
    assert calls == len(steps)  # each rollout's one model call, logged under its run

    crashes = {**good, "agent_function": "tests.app.agents.agent_plugins:crashes"}
    with pytest.raises(RunFailed, match="the outside agent crashed on all 28 questions"):
        api.infer(ws, overrides=crashes, task_types=["dates"], run_id="crashes")
    stops = rows(
        ws, "SELECT DISTINCT stop_reason, correct FROM predictions WHERE run_id = ?", "crashes"
    )
    assert stops == [("crash", 0)]
    (steps_json,) = rows(ws, "SELECT steps_json FROM predictions WHERE run_id = 'crashes'")[0]
    error = json.loads(steps_json)[0]
    assert error["type"] == "error" and "RuntimeError: no luck" in error["error"]
    assert "\x1b" not in steps_json  # the agent's control characters are shown as text


@pytest.mark.slow  # a training epoch on one task type with the e-process gate, in-process
def test_the_gate_validates_candidates_with_the_outside_agent(tmp_path: Path) -> None:
    """The default gate (eprocess): its ladders' rollouts, baseline and candidate, are the
    outside agent's, logged under the gate's runs."""
    ws = small_workspace(tmp_path)
    learner = {
        **SMALL,
        "gate": {"strategy": "eprocess"},
        "task_types": ["dates"],
        "max_steps": 2,
        "agent_kind": "python",
        "agent_function": "tests.app.agents.agent_plugins:reads_skills",
    }
    result = api.train(ws, overrides=learner)
    assert result.status == "done", result.reason
    gate_runs = rows(
        ws,
        "SELECT p.run_id, COUNT(*) FROM predictions p WHERE p.run_id LIKE 'train1-e1-s%-gate%' "
        "GROUP BY 1",
    )
    assert gate_runs, "no gate rollouts"
    for run, n in gate_runs:
        (calls,) = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = ?", run)[0]
        assert calls == n, (run, n, calls)  # one model call per rollout of this agent
        (steps,) = rows(ws, "SELECT steps_json FROM predictions WHERE run_id = ? LIMIT 1", run)[0]
        assert json.loads(steps)[-1]["agent"]["calls"] == 1


# ------------------------------------------------------------------ train, end to end


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    ws = small_workspace(tmp_path_factory.mktemp("external-train"))
    result = api.train(ws, overrides={**SMALL, **COMMAND})
    return ws, result


@pytest.mark.slow
def test_train_runs_the_command_agent_end_to_end(trained: tuple[Path, Any]) -> None:
    ws, result = trained
    assert result.status == "done", result.reason
    runs = ("baseline", "train1-e1-s0-rollout", "train1-final-test")
    for run in runs:
        (n,) = rows(ws, "SELECT COUNT(*) FROM predictions WHERE run_id = ?", run)[0]
        (calls,) = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = ?", run)[0]
        assert n > 0 and calls >= n, (run, n, calls)  # the agent's calls, under its run
    verdicts = [
        json.loads(s)[-1] for (s,) in rows(ws, "SELECT steps_json FROM predictions LIMIT 50")
    ]
    assert all(v["agent"]["exit_code"] == 0 for v in verdicts)
    stops = dict(rows(ws, "SELECT stop_reason, COUNT(*) FROM predictions GROUP BY 1"))
    assert set(stops) == {"final"}, stops


@pytest.mark.slow
def test_the_command_agent_learns_from_its_trained_skills(trained: tuple[Path, Any]) -> None:
    ws, result = trained
    # the trainer wrote rules into the skill files the agent reads
    assert result.best_skills_version != "v1"
    assert result.test_accuracy > result.baseline_test_accuracy + 0.15, (
        result.baseline_test_accuracy,
        result.test_accuracy,
    )
    report = api.report(ws)
    assert report is not None
