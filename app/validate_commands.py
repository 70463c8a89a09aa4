"""CLI for the benchmark format: `validate-benchmark` (docs/benchmarks.md).

Arguments in, a call of app/api.py, lines out; the checks are in core/benchmark_checks.py and
app/harness/rollouts/benchmark_validation.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.cli_support import out, out_json
from app.errors import UserError


def cmd_validate_benchmark(args: argparse.Namespace) -> int:
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


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate-benchmark": cmd_validate_benchmark,
}
