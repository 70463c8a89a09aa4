"""docs/commands.md is every command's `--help` as the parser prints it (app/cli/_reference.py),
and every command has what its `--help` needs: a help line, a description and an example."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from app.cli import build_parser, command_modules, subparser
from app.cli._reference import REFERENCE_PYTHON, REGENERATE, reference_text

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "commands.md"


@pytest.mark.skipif(
    sys.version_info[:2] != REFERENCE_PYTHON,
    reason="argparse lays help out differently on other Python versions",
)
def test_the_command_reference_is_what_the_commands_print(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # the page does not depend on the terminal running it
    written = REFERENCE.read_text(encoding="utf-8") if REFERENCE.is_file() else ""
    assert written == reference_text(), f"docs/commands.md is out of date: run {REGENERATE}"


def command_help_lines(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Each command's line in the top-level `--help`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help for choice in action._choices_actions}
    return {}


def test_every_command_has_a_help_line_a_description_and_an_example() -> None:
    parser = build_parser()
    help_lines = command_help_lines(parser)
    assert set(help_lines) == set(command_modules())
    for name in command_modules():
        command = subparser(parser, name)
        assert help_lines[name], f"{name}: no help line (HELP in its module)"
        assert command.description, f"{name}: no description"
        assert (command.epilog or "").startswith(f"example:\n  skill-trainer {name}"), (
            f"{name}: its --help ends with no example of it (EXAMPLE in its module)"
        )


def test_a_command_is_the_module_named_after_it() -> None:
    for name, module in command_modules().items():
        assert module.__name__ == "app.cli." + name.replace("-", "_")
        assert module.__doc__, f"app/cli/{name.replace('-', '_')}.py: no docstring"
        assert callable(module.run) and callable(module.add_arguments)
