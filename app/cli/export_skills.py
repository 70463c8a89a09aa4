"""`export-skills`: write a skills version as Agent Skills (app/api.py `export_skills`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json

HELP = "write a skills version as Agent Skills: <out>/.agents/skills/<name>/SKILL.md"
EXAMPLE = "export-skills -w workspaces/mine --out ~/my-agent"
OPTIONS = ("verbose", "workspace", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--version", default="best", help="skills version (vN) or 'best' (default: best)"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="folder; skills go to OUT/.agents/skills/<name>/"
    )
    p.add_argument(
        "--eval-run",
        help="eval run whose accuracy goes into metadata (default: "
        "the latest finished eval of the version, else training's final test run)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api

    result = api.export_skills(
        args.workspace,
        out=args.out,
        version=args.version,
        eval_run=args.eval_run,
        store=args.store,
    )
    if args.json:
        out_json(result)
        return 0
    for path in result.files:
        out(f"wrote {path}")
    return 0
