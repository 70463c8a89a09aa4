"""`report --html OUT`: the web report as one file (app/harness/serving/webpage.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.cli_support import out
from app.errors import UserError


def cmd_report_html(args: argparse.Namespace) -> int:
    from app import api

    if args.savings or args.json or args.baseline_model or args.baseline_run:
        raise UserError("report --html: give it alone (the page holds the savings figures)")
    written = api.html_report(args.workspace, args.html)
    out(f"wrote {written} ({written.stat().st_size:,} bytes); open it in a browser")
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"report-html": cmd_report_html}
