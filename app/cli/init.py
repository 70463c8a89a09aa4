"""`init`: create a workspace from a seed and a benchmark (app/api.py `init_workspace`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._options import add_workspace_alias
from app.cli._output import out, out_json

HELP = "create a workspace from a seed and a benchmark"
EXAMPLE = "init -w workspaces/mine --seed sim-starter --questions sim-basic"
OPTIONS = ("verbose", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_workspace_alias(p, required=True)
    p.add_argument(
        "--seed",
        help="seed name in the store (e.g. sim-starter); with "
        "--skills-from, the name of the seed imported (default: the workspace's); "
        "without either: one starter skill file per task type of the benchmark",
    )
    p.add_argument("--questions", required=True, help="benchmark name (e.g. sim-basic)")
    p.add_argument(
        "--skills-from",
        type=Path,
        metavar="DIR",
        help="import a folder of Agent Skills (<name>/SKILL.md) as the seed first",
    )
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="with --skills-from: the seed whose prompts the import takes "
        "(unless DIR has prompts/system.md); without --seed: the starter's prompts",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    info = api.init_workspace(
        args.workspace,
        questions=args.questions,
        seed=args.seed,
        store=args.store,
        skills_from=args.skills_from,
        prompts_from=args.prompts_from,
    )
    if args.json:
        out_json(info)
        return 0
    # the result, so on stdout (log lines, warnings included, stay on stderr)
    out(
        f"created workspace {info.root} ({info.skills_version} of skills, {info.prompts_version} "
        f"of prompts, seed {info.seed}, questions {info.questions})"
    )
    return 0
