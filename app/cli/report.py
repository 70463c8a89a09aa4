"""`report`: a workspace's plain-text or JSON summary (app/api.py `report`), or with `--html OUT`
the web report as one file (app/harness/serving/webpage.py), or with `--savings` the cost,
latency and accuracy of a run against a baseline (app/harness/serving/savings.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._options import add_workspace_alias
from app.cli._output import out, out_json
from app.errors import UserError

HELP = "plain-text summary of a workspace (read-only; works while a run writes)"
EXAMPLE = "report -w workspaces/demo"
OPTIONS = ("verbose",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_workspace_alias(p, required=True)
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.add_argument(
        "--savings",
        action="store_true",
        help="cost, latency and accuracy of a serve/eval/infer run against a baseline",
    )
    p.add_argument(
        "--run", metavar="ID", help="with --savings: the run (default: latest serve, eval, infer)"
    )
    p.add_argument(
        "--baseline-model", metavar="MODEL", help="with --savings: price the same tokens at MODEL"
    )
    p.add_argument(
        "--baseline-run", metavar="ID", help="with --savings: compare with another logged run"
    )
    p.add_argument(
        "--html",
        type=Path,
        metavar="OUT",
        help="write the report as one self-contained HTML page (charts, diffs, chat box)",
    )


def run(args: argparse.Namespace) -> int:
    if args.html is not None:
        return _run_html(args)
    if args.savings or args.baseline_model or args.baseline_run:
        return _run_savings(args)
    from app import api

    report = api.report(args.workspace)
    if args.json:
        out_json(report.summary)
    else:
        out(report.text)
    return 0


def _run_html(args: argparse.Namespace) -> int:
    """`report --html OUT`: the web report as one file."""
    from app import api

    if args.savings or args.json or args.baseline_model or args.baseline_run:
        raise UserError("report --html: give it alone (the page holds the savings figures)")
    written = api.html_report(args.workspace, args.html)
    out(f"wrote {written} ({written.stat().st_size:,} bytes); open it in a browser")
    return 0


def _run_savings(args: argparse.Namespace) -> int:
    """`report --savings`: a serve, eval or infer run against a baseline model or run."""
    from app import api
    from app.harness.serving.savings import format_savings

    if not args.savings:
        raise UserError("--baseline-model and --baseline-run go with --savings")
    workspace = args.workspace or args.workspace_positional
    if workspace is None:
        raise UserError("report: give the workspace (-w WS)")
    report = api.savings(
        workspace,
        run_id=args.run,
        baseline_model=args.baseline_model,
        baseline_run=args.baseline_run,
    )
    if args.json:
        out_json(report)
        return 0
    for line in format_savings(report):
        out(line)
    return 0
