"""`infer`: answer the benchmark with the current versions (app/api.py `infer`)."""

from __future__ import annotations

import argparse

from app.cli._output import model_config_from, notice_if_simulated, out_json, progress_from

HELP = "answer the benchmark with the current versions"
EXAMPLE = "infer -w workspaces/mine --task-types dates --n-samples 3"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task-types", nargs="+", metavar="TYPE", help="only these task types")
    p.add_argument("--n-samples", type=int, default=1, help="answer everything N times")
    p.add_argument(
        "--run-id",
        help="name the run (letters, digits, '_', '-', '.', ':', '+'); "
        "an existing run's id is refused",
    )
    p.add_argument(
        "--overwrite-run",
        action="store_true",
        help="replace an existing infer/eval run of that id (recorded in the new run's provenance)",
    )


def run(args: argparse.Namespace) -> int:
    config = model_config_from(args)
    from app import api
    from app.cli._printers import memories_line, print_result

    result = api.infer(
        args.workspace,
        config,
        task_types=args.task_types,
        n_samples=args.n_samples,
        run_id=args.run_id,
        overwrite_run=args.overwrite_run,
        progress=progress_from(args),
    )
    if args.json:
        out_json(result)
        return 0
    for sample in result.samples:
        print_result(sample, f"infer (run {sample.run_id})")
    memories_line(result.samples[-1], config.memory_k)
    notice_if_simulated(config.uses_sim, config.models.values())
    return 0
