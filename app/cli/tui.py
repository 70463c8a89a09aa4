"""`tui`: browse workspaces in the terminal UI (app/tui/app.py `run_tui`)."""

from __future__ import annotations

import argparse

from app.cli._options import add_workspace_alias

HELP = "browse workspaces in the terminal UI (read-only; works while a run writes)"
EXAMPLE = "tui -w workspaces/demo"
OPTIONS = ("verbose",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_workspace_alias(p, required=False)


def run(args: argparse.Namespace) -> int:
    from app.paths import workspaces_dir
    from app.tui.app import run_tui

    return run_tui(args.workspace, workspaces_dir())
