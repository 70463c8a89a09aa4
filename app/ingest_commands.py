"""CLI for trace ingest (README "Bring your own traces"): `ingest`.

The handler (its parser is in app/cli.py): arguments in, `api.ingest`, lines out; the work is
in app/harness/ingest/.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.cli_support import out, out_json


def cmd_ingest(args: argparse.Namespace) -> int:
    from app import api

    result = api.ingest(
        args.workspace,
        args.file,
        source=args.source,
        sample=args.sample,
        seed=args.seed,
        to_benchmark=args.to_benchmark,
        store=args.store,
        reference=args.reference,
        task_type=args.task_type,
        license=args.license,
        progress=False if args.no_progress else None,  # None: bars when stderr is a terminal
    )
    if args.json:
        out_json(result)
        return 0
    out(result.text())
    if not result.run_id:
        out(f"traces not stored: {args.workspace} is not a workspace yet")
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"ingest": cmd_ingest}
