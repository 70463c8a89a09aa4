"""`demo`: init and train workspaces/demo on the simulated model, then print the learning curve
(app/api.py `demo`, the summary app/demo.py `demo_summary`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json, overrides_from, progress_from
from app.paths import workspaces_dir

HELP = "init + train workspaces/demo on the simulated model and print the learning curve"
EXAMPLE = "demo"
OPTIONS = ("verbose", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workspace",
        "-w",
        type=Path,
        default=workspaces_dir() / "demo",
        help="where (default: workspaces/demo; an existing one is archived first)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api
    from app.demo import demo_summary

    result = api.demo(
        args.workspace,
        args.config,
        overrides=overrides_from(args),
        progress=progress_from(args),
    )
    if args.json:
        out_json(result)
        return 0
    out(demo_summary(result))
    return 0
