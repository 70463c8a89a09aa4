"""Handlers of `estimate` (and `train --dry-run`), and the `sim/oracle` note of `train`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from app.cli_support import out, out_json, overrides_from


def cmd_estimate(args: argparse.Namespace) -> int:
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


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"estimate": cmd_estimate}


def train_models(workspace: Path, train_id: str) -> list[str]:
    """The models a train run recorded in its provenance (none when it has no row)."""
    from app.harness.workspace.log_reader import open_reader

    db = Path(workspace) / "harness.db"
    if not train_id or not db.is_file():
        return []
    with open_reader(db) as log:
        row = log.run(train_id)
    models = row.provenance.get("models") if row is not None else None
    return [str(m) for m in models.values()] if isinstance(models, dict) else []
