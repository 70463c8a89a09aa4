"""Relative paths are made absolute once, where the CLI and the API take them (app/paths.py
`absolute`, app/cli/_main.py `parse_args`, app/api/_common.py `_workspace`): code below, and the
children it starts in folders of their own, never see a path relative to some other folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from app import api
from app.cli import build_parser, main, parse_args
from app.cli._main import _subcommands
from app.providers.sim.generate import write_benchmark
from app.providers.sim.world import build_world

UNITS = 4  # per task type: 4 repair rollouts
TOOL_SETS = {
    "agent_model": "sim/tools",
    "evolver_model": "sim/tools",
    "judge_model": "sim/tools",
    "sim_units_per_type": UNITS,
}


def _argv_with_relative_paths(name: str, command: argparse.ArgumentParser) -> list[str]:
    """`name` with every path option given as a relative path and every other required
    argument as a placeholder."""
    argv = [name]
    for action in command._actions:
        if action.dest in ("help", "workspace_positional"):
            continue
        flag = action.option_strings[0] if action.option_strings else None
        if action.type is Path:
            value = "ws" if action.dest == "workspace" else f"rel-{action.dest}"
            argv += [flag, value] if flag else [value]
        elif action.required or (flag is None and action.nargs not in ("?", "*")):
            value = str(next(iter(action.choices))) if action.choices else "x"
            argv += [flag, value] if flag else [value]
    return argv


COMMANDS = sorted(_subcommands(build_parser()))


@pytest.mark.parametrize("name", COMMANDS)
def test_every_path_argument_of_every_command_is_absolute(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _argv_with_relative_paths(name, _subcommands(build_parser())[name])
    args = parse_args(argv)
    given = {k: v for k, v in vars(args).items() if isinstance(v, Path)}
    if "workspace" in vars(args):
        assert args.workspace == tmp_path / "ws"
    for key, value in given.items():
        assert value.is_absolute(), (name, key, value)
        if key != "workspace" and value.name.startswith("rel-"):
            assert value == tmp_path / value.name, (name, key)


def test_the_workspace_positional_form_is_absolute_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_args(["report", "ws"]).workspace == tmp_path / "ws"


def test_the_api_makes_the_workspace_absolute(
    tools_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tools_workspace.parent)
    assert api.report("ws").workspace == tools_workspace


@pytest.fixture
def tools_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tool-world workspace `ws` in the current directory (tmp_path), made with `-w ws`."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    write_benchmark(build_world("tools", 7, UNITS), store / "questions" / "sim-tools", "sim-tools")
    init = ["init", "-w", "ws", "--seed", "sim-tools-starter", "--questions", "sim-tools"]
    assert main([*init, "--store", "store"]) == 0
    return tmp_path / "ws"


def test_the_repair_oracle_judges_alike_with_a_relative_workspace(
    tools_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture oracle runs inside the rollout's copy of the fixture; a relative workspace
    used to reach it as a relative `workdir`, which named a folder that does not exist there,
    so every repair rollout failed (0 of 96 on the stored sim-tools, 27 with an absolute -w)."""
    sets = [x for k, v in TOOL_SETS.items() for x in ("--set", f"{k}={v}")]
    capsys.readouterr()
    assert main(["eval", "-w", "ws", "v1", *sets, "--json", "--no-progress"]) == 0
    through_cli = json.loads(capsys.readouterr().out)["per_task_type"]["repair"]
    absolute = api.evaluate(tools_workspace, "v1", overrides=TOOL_SETS).per_task_type["repair"]
    assert absolute.total == UNITS and absolute.correct > 0  # lucky guesses of the field
    assert (through_cli["correct"], through_cli["total"]) == (absolute.correct, absolute.total)
