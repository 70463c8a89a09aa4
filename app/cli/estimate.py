"""`estimate`: expected model calls, tokens, cost and wall time of `train` before it runs
(app/api.py `estimate`, the lines app/estimate.py `estimate_lines`). `train --dry-run` runs
this command's handler (app/cli/train.py)."""

from __future__ import annotations

import argparse

from app.cli._output import out, out_json, overrides_from

HELP = "expected model calls per role, tokens, cost and wall time of `train`, before it runs"
EXAMPLE = "estimate -w workspaces/mine --set epochs=2"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Only the option groups of OPTIONS."""


def run(args: argparse.Namespace) -> int:
    """`estimate` and `train --dry-run`: the estimate, printed; nothing is trained."""
    from app import api
    from app.estimate import estimate_lines

    result = api.estimate(args.workspace, args.config, overrides=overrides_from(args))
    if getattr(args, "json", False):
        out_json(result)
        return 0
    for line in estimate_lines(result):
        out(line)
    if getattr(args, "dry_run", False):
        out("train --dry-run: nothing trained (the estimate is in analyses/estimate.json)")
    return 0
