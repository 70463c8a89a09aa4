"""CLI for trace ingest (README "Bring your own traces"): `ingest`.

The handler (its parser is in app/cli.py): arguments in, `api.ingest`, lines out; the work is
in app/harness/ingest/.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from app.cli_support import out, out_json


def cmd_ingest(args: argparse.Namespace) -> int:
    # `api.ingest`'s own harness function, called without importing app.api: that module
    # loads the training and rollout stack, a fifth of a second of start-up that ingest
    # does not use (it is run once per export file, often by a script over many files)
    from app.harness.ingest.api import run_ingest
    from app.progress import Bars

    result = run_ingest(
        Path(args.workspace),
        Path(args.file),
        source=args.source,
        sample=args.sample,
        seed=args.seed,
        to_benchmark=args.to_benchmark,
        store=None if args.store is None else Path(args.store),
        reference=args.reference,
        task_type=args.task_type,
        licence=args.license,
        # None: bars when stderr is a terminal
        bars=Bars(enabled=False if args.no_progress else None),
    )
    if args.json:
        out_json(result)
        return 0
    out(result.text())
    if not result.run_id:
        out(f"traces not stored: {args.workspace} is not a workspace yet")
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"ingest": cmd_ingest}
