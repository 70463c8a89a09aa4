"""`validate-benchmark`: check that a benchmark can tell right from wrong (docs/benchmarks.md;
app/api.py `validate_benchmark`, the checks in core/benchmark_checks.py and
app/harness/rollouts/benchmark_validation.py). Writes nothing."""

from __future__ import annotations

import argparse

from app.cli._output import out, out_json
from app.errors import UserError

HELP = "check that a benchmark can tell right from wrong (docs/benchmarks.md); writes nothing"
EXAMPLE = "validate-benchmark sim-basic --json"
OPTIONS = ("verbose", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="benchmark name in the store (e.g. sim-basic)")
    p.add_argument(
        "--seed",
        metavar="SEED",
        help="also check that SEED's skill files give each task type its own (as train needs)",
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 with warnings only, 2 with any error (after printing every finding)."""
    from app import api
    from app.harness.rollouts.benchmark_validation import finding_lines, summary_line

    report = api.validate_benchmark(args.name, store=args.store, seed=args.seed)
    if args.json:
        out_json(report)
    else:
        for line in finding_lines(report):
            out(line)
        out(summary_line(report))
    if report.errors:
        first = next(f for f in report.findings if f.severity == "error")
        raise UserError(
            f"{first.where}: {first.defect}: {first.message} "
            f"({report.errors} error(s) in benchmark {report.benchmark})"
        )
    return 0
