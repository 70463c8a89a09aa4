"""CLI for declared tools (docs/tools.md): `check-tools`. Arguments in, a call of app/api.py,
lines out; the work is in app/harness/tools/check.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.cli_support import out, out_json
from app.errors import UserError


def cmd_check_tools(args: argparse.Namespace) -> int:
    from app import api

    result = api.check_tools(args.questions)
    if args.json:
        out_json(result)
        return 0 if result.ok else 2
    out(f"benchmark {result.benchmark}")
    for entry, names in result.offered.items():
        shown = ", ".join(names) if names else f"not offered: {result.unavailable.get(entry)}"
        out(f"  tool {entry}: {shown}")
    for name, address in result.fixtures.items():
        out(f"  fixture {name}: {address[:16]}")
    if result.problems:
        for problem in result.problems:
            out(f"problem: {problem}")
        raise UserError(f"{len(result.problems)} problem(s) in {args.questions}")
    out("ok: every tool started, every fixture's oracle rejects its initial state")
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"check-tools": cmd_check_tools}
