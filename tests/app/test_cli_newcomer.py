"""What a newcomer with their own data meets: every `--help` example names files that exist,
`--json` on every command that makes something, `list`, and the "did you mean" hints of the
config and the benchmark format (app/cli.py, app/commands.py, app/list_commands.py)."""

from __future__ import annotations

import re
from pathlib import Path

from app.cli import COMMANDS, build_parser, subparser

ROOT = Path(__file__).resolve().parents[2]


def test_every_help_example_names_folders_that_exist() -> None:
    parser = build_parser()
    named = []
    for command in COMMANDS:
        epilog = subparser(parser, command).epilog or ""
        named += re.findall(r"\b(examples/[\w./-]+)", epilog)
    assert named, "no example names a file of examples/"
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, missing
