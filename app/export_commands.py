"""CLI for `export --format otlp|inspect` (README "Exporting runs as traces"): arguments in,
app/api.py `export_traces`, lines out; the writers are app/harness/data/export_otel.py."""

from __future__ import annotations

import argparse

from app.cli_support import out, out_json


def cmd_export_traces(args: argparse.Namespace) -> int:
    from app import api

    result = api.export_traces(
        args.workspace,
        args.rollout_ids,
        format=args.format,
        out=args.out,
        include_test=args.include_test,
        overwrite=args.overwrite,
    )
    if args.json:
        out_json(result)
        return 0
    what = "traces (OTLP JSON)" if args.format == "otlp" else "samples (Inspect eval log)"
    for name, f in result.files.items():
        out(f"  {result.out / name}: {f.count} {what}")
    return 0
