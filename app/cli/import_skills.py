"""`import-skills`: turn a folder of Agent Skills into a store seed (app/api.py
`import_skills`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json

HELP = "turn a folder of Agent Skills (<name>/SKILL.md) into a store seed"
EXAMPLE = "import-skills examples/agent-skills/sim-vague --name my-skills"
OPTIONS = ("verbose", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("skills_dir", type=Path)
    p.add_argument("--name", required=True, help="name of the new seed")
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="the seed whose prompts the import takes (unless the folder has prompts/system.md)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    result = api.import_skills(
        args.skills_dir, name=args.name, store=args.store, prompts_from=args.prompts_from
    )
    if args.json:
        out_json(result)
        return 0
    out(f"imported {args.skills_dir} as seed {result.seed}")
    return 0
