"""`train`: epochs of gated edits, probation and the held-out test (app/api.py `train`).

`train --dry-run` prints what `estimate` prints (app/cli/estimate.py) and trains nothing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.cli._output import (
    model_config_from,
    notice_if_simulated,
    out,
    out_json,
    overrides_from,
    progress_from,
)

HELP = "train skills: epochs of gated edits, probation, held-out test"
EXAMPLE = "train -w workspaces/mine --set epochs=2"
OPTIONS = ("verbose", "workspace", "model", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue from checkpoint.json")
    mode.add_argument(
        "--fresh", action="store_true", help="archive the workspace, restart from its seed"
    )
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="print what `estimate` prints and exit without training",
    )
    p.add_argument(
        "--holdout-task-types",
        metavar="A,B",
        help="task types never trained or prompt-evolved, only tested: the final test shows "
        "how much of the gain reaches them (same as --set holdout_task_types=[...])",
    )


def run(args: argparse.Namespace) -> int:
    if args.dry_run:
        from app.cli import estimate

        return estimate.run(args)
    if not args.resume:  # a resumed run's config is its checkpoint's, checked once read
        model_config_from(args, recorded=False)  # a new run's is the one given or the defaults
    from app import api
    from app.demo import outcome_line

    overrides = overrides_from(args)
    if getattr(args, "holdout_task_types", None):
        overrides["holdout_task_types"] = [
            t.strip() for t in args.holdout_task_types.split(",") if t.strip()
        ]
    result = api.train(
        args.workspace,
        args.config,
        overrides=overrides,
        resume=args.resume,
        fresh=args.fresh,
        store=args.store,
        progress=progress_from(args),
    )
    if args.json:
        out_json(result)
        return 0
    out(outcome_line(result))
    for line in holdout_lines(result.workspace):
        out(line)
    notice_if_simulated(result.simulated_model, train_models(result.workspace, result.train_id))
    return 0


def train_models(workspace: Path, train_id: str) -> list[str]:
    """The models a train run recorded in its provenance (none when it has no row)."""
    from app.harness.workspace.harness_log import open_reader

    db = Path(workspace) / "harness.db"
    if not train_id or not db.is_file():
        return []
    with open_reader(db) as log:
        row = log.run(train_id)
    models = row.provenance.get("models") if row is not None else None
    return [str(m) for m in models.values()] if isinstance(models, dict) else []


def holdout_lines(workspace: Path) -> list[str]:
    """The final test split into held-out task types (never trained) and trained ones, from
    `analyses/final_test_eval.json`; nothing when no type was held out."""
    path = Path(workspace) / "analyses" / "final_test_eval.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    held = report.get("holdout_task_types") if isinstance(report, dict) else None
    final, base = report.get("per_task_type"), report.get("baseline_per_task_type")
    if not held or not isinstance(final, dict) or not isinstance(base, dict):
        return []
    rest = sorted(t for t in final if t not in held)
    return [
        f"  held out (never trained): {_split(held, final, base)}",
        f"  not held out:             {_split(rest, final, base)}",
    ]


def _split(types: list[str], final: Mapping[str, Any], base: Mapping[str, float]) -> str:
    """Baseline -> final test accuracy over `types`, by unit count."""
    total = sum(int(final[t]["total"]) for t in types if t in final)
    if not total:
        return "no test units"
    after = sum(float(final[t]["accuracy"]) * int(final[t]["total"]) for t in types if t in final)
    before = sum(float(base.get(t, 0.0)) * int(final[t]["total"]) for t in types if t in final)
    gain = 100 * (after - before) / total
    return (
        f"{', '.join(types)}: {before / total:.3f} -> {after / total:.3f} ({gain:+.1f} pp, "
        f"{total} units)"
    )
