"""`ingest`: read an observability export into the log and optionally write a benchmark from it
(README "Bring your own traces"; the work in app/harness/ingest/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli._output import out, out_json

HELP = (
    "read an observability export (OTLP, OpenInference/Phoenix, Langfuse, LangSmith, "
    "Inspect AI, chat-json) into the log; optionally write a benchmark from it"
)
EXAMPLE = (
    "ingest -w workspaces/mine --file traces.jsonl --to-benchmark prod --store workspaces/store"
)
OPTIONS = ("verbose", "workspace", "store", "json")
SOURCES = (
    "auto",
    "otlp",
    "openinference",
    "langfuse",
    "langsmith",
    "phoenix",
    "inspect",
    "chat-json",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", type=Path, required=True, help="the export file")
    p.add_argument(
        "--source",
        default="auto",
        choices=SOURCES,
        help="the export's format (default: detected from its records)",
    )
    p.add_argument(
        "--sample", type=float, default=1.0, metavar="RATE", help="keep this share of families"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --sample")
    p.add_argument(
        "--to-benchmark", metavar="NAME", help="also write store benchmark NAME (needs --store)"
    )
    p.add_argument(
        "--reference",
        default="feedback",
        choices=("feedback", "final"),
        help="reference answers from feedback only (default), or also each final answer",
    )
    p.add_argument(
        "--task-type", default="ingested", help="the benchmark's task type (default ingested)"
    )
    p.add_argument(
        "--license",
        metavar="EXPR",
        help="the traces' SPDX licence expression, e.g. MIT (kept with the run and written into "
        "--to-benchmark's benchmark.toml; export refuses traces without one unless "
        "--allow-restricted)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def run(args: argparse.Namespace) -> int:
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
