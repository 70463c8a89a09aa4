"""`fork`: answer each selected question as N branches, best-of-N rollouts (app/api.py `fork`,
the work in app/harness/data/fork.py); `rank` then ranks them (app/cli/rank.py)."""

from __future__ import annotations

import argparse

from app.cli._output import config_from, notice_if_simulated, out, out_json, progress_from

HELP = (
    "answer each selected question as N branches (best-of-N rollouts); pass@1 is the mean "
    "over questions of the share of branches right (as the Inspect export scores it), "
    "pass@N the share of questions with a branch right"
)
EXAMPLE = "fork -w workspaces/mine --branches 8 --limit 20"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--branches", "-n", type=int, default=8, help="branches per question")
    p.add_argument("--temperatures", help="one temperature per branch, comma-separated")
    p.add_argument(
        "--temperature-range",
        metavar="LO:HI",
        help="branch temperatures evenly spaced from LO to HI",
    )
    p.add_argument(
        "--pool", default="diagnosis", help="diagnosis (default), validation, test or all"
    )
    p.add_argument("--task-types", nargs="+", metavar="TYPE", help="only these task types")
    p.add_argument("--questions", nargs="+", metavar="ID", help="only these question ids")
    p.add_argument(
        "--select",
        choices=["informative"],
        help="informative: only questions whose branches disagreed (0 < p-hat < 1) in the "
        "latest fork (docs/scorecard.md#loop-health)",
    )
    p.add_argument("--limit", type=int, help="at most this many questions")
    p.add_argument(
        "--concurrency",
        type=int,
        help="branches in flight over the whole fork (default: config concurrency)",
    )
    p.add_argument("--rollout-id", help="name the rollout (default fork-N)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="finish a killed fork of --rollout-id; finished branches are kept",
    )


def run(args: argparse.Namespace) -> int:
    from app import api
    from app.harness.data.fork import parse_range, parse_temperatures

    result = api.fork(
        args.workspace,
        config_from(args),
        branches=args.branches,
        temperatures=parse_temperatures(args.temperatures),
        temperature_range=parse_range(args.temperature_range),
        pool=args.pool,
        task_types=args.task_types,
        questions=args.questions,
        select=args.select,
        limit=args.limit,
        concurrency=args.concurrency or None,  # 0, like no --concurrency: the config's
        rollout_id=args.rollout_id,
        resume=args.resume,
        progress=progress_from(args),
    )
    if args.json:
        out_json(result)
        return 0
    out(
        f"fork {result.rollout_id}: {result.questions} questions x "
        f"{result.branches // max(1, result.questions)} branches "
        f"({result.ran} run, {result.skipped} already done) in {result.elapsed_s:.2f} s"
    )
    out(f"  pass@1 {result.pass_at_1:.3f}  pass@N {result.pass_at_n:.3f}")
    out(f"  next: rank -w {args.workspace} {result.rollout_id}")
    notice_if_simulated(result.simulated_model, config_from(args).models.values())
    return 0
