"""`promote`: turn a skills version into a new seed in the store (app/api.py `promote`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json

HELP = "turn a version into a new seed in the store"
EXAMPLE = "promote -w workspaces/mine v7 --eval-run eval-v7-v2-1 --name mine-v7"
OPTIONS = ("verbose", "workspace", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("version")
    p.add_argument("--eval-run", required=True, help="the eval run that justifies it")
    p.add_argument("--name", required=True, help="name of the new seed")
    p.add_argument(
        "--agent-skills",
        type=Path,
        metavar="OUT",
        help="also write the version as Agent Skills under OUT/.agents/skills/",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    result = api.promote(
        args.workspace,
        args.version,
        eval_run=args.eval_run,
        name=args.name,
        store=args.store,
        agent_skills=args.agent_skills,
    )
    if args.json:
        out_json(result)
        return 0
    out(f"promoted {args.version} to seed {result.seed}")
    for path in result.agent_skills:
        out(f"wrote {path}")
    return 0
