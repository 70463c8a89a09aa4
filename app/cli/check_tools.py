"""`check-tools`: start a benchmark's declared tools once and check its fixtures' oracles
(docs/tools.md; app/api.py `check_tools`, the work in app/harness/tools/check.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json
from app.errors import UserError

HELP = "start a benchmark's declared tools once and check its fixtures' oracles"
EXAMPLE = "check-tools examples/benchmarks/tools-calc"
OPTIONS = ("verbose", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("questions", type=Path, help="the benchmark folder (with benchmark.toml)")


def run(args: argparse.Namespace) -> int:
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
