"""CLI for best-of-N rollouts (issue 14): `fork`, `rank`, `export`.

Kept out of app/cli.py and app/commands.py (which only register these) so the three commands
live together: parsers here, the work in app/harness/fork.py, rank.py and export.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from loguru import logger

FORK_COMMANDS = ("fork", "rank", "export")


def add_parsers(sub, common: argparse.ArgumentParser, ws: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "fork",
        parents=[common, ws],
        help="answer each selected question as N branches (best-of-N rollouts)",
    )
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
    p.add_argument("--task-types", nargs="+")
    p.add_argument("--questions", nargs="+", metavar="ID", help="only these question ids")
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
    p = sub.add_parser(
        "rank",
        parents=[common, ws],
        help="verify, judge and rank a fork's branches; remember verified winners",
    )
    p.add_argument("rollout_id")
    p.add_argument(
        "--verifier",
        action="append",
        default=None,
        metavar="NAME",
        help="checker (default), completed, or module:function (repeatable)",
    )
    p.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="KEY=W",
        help="reward weight: objective, judge, bt or module:function (repeatable)",
    )
    p.add_argument(
        "--judge-cap",
        type=int,
        help="judge calls per batch (one question's branches); default judge_max_calls_per_batch",
    )
    p.add_argument("--no-memory", action="store_true", help="do not store winners as memories")
    p = sub.add_parser(
        "export",
        parents=[common, ws],
        help="write DPO pairs, SFT examples and reward records of ranked forks as JSONL",
    )
    p.add_argument("rollout_ids", nargs="+")
    p.add_argument("--out", type=Path, help="folder (default WS/exports/<first rollout>)")
    p.add_argument(
        "--include-test",
        action="store_true",
        help="also export questions of the test pool (left out by default)",
    )


def cmd_fork(args: argparse.Namespace) -> int:
    from app.cli import make_config
    from app.commands import _bars, _next_run_id, _notice, await_, out
    from app.errors import UserError
    from app.harness.fork import (
        ForkSpec,
        branch_temperatures,
        parse_range,
        parse_temperatures,
        run_fork,
        select_questions,
    )
    from app.harness.session import Session
    from app.harness.writer_lock import WriterLock

    config = make_config(args)
    with (
        WriterLock(args.workspace, "fork"),
        Session(args.workspace, config, _bars(args)) as session,
    ):
        if args.resume:
            if not args.rollout_id:
                raise UserError("--resume needs --rollout-id")
            spec = ForkSpec((), (0.0,))  # replaced by the stored spec
            rollout_id = args.rollout_id
        else:
            concurrency = args.concurrency or config.concurrency
            if concurrency < 1:
                raise UserError(f"--concurrency must be >= 1 (got {concurrency})")
            temps = branch_temperatures(
                args.branches,
                parse_temperatures(args.temperatures),
                parse_range(args.temperature_range),
                config.temperature,
            )
            questions = select_questions(
                session.benchmark, args.pool, args.task_types, args.questions, args.limit
            )
            spec = ForkSpec(tuple(q.question_id for q in questions), temps, concurrency, args.pool)
            rollout_id = args.rollout_id or _next_run_id(session, "fork-")
        with session.bars.live():
            result = await_(
                run_fork(session, spec, rollout_id, resume=args.resume, bars=session.bars)
            )
        summary = session.log.run(rollout_id)
        out(
            f"fork {rollout_id}: {result.questions} questions x "
            f"{result.branches // max(1, result.questions)} branches "
            f"({result.ran} run, {result.skipped} already done) in {result.elapsed_s:.2f} s"
        )
        import json

        s = json.loads(summary["summary_json"] or "{}")
        out(f"  pass@1 {s.get('pass_at_1', 0):.3f}  pass@N {s.get('pass_at_n', 0):.3f}")
        out(f"  next: rank -w {args.workspace} {rollout_id}")
        _notice(session)
    return 0


def cmd_rank(args: argparse.Namespace) -> int:
    from app.cli import make_config
    from app.commands import _bars, _notice, await_, out
    from app.harness.rank import parse_weights, rank_rollout
    from app.harness.session import Session
    from app.harness.writer_lock import WriterLock

    config = make_config(args)
    with (
        WriterLock(args.workspace, "rank"),
        Session(args.workspace, config, _bars(args)) as session,
    ):
        report = await_(
            rank_rollout(
                session,
                args.rollout_id,
                verifiers=tuple(args.verifier or ("checker",)),
                weights=parse_weights(args.weight),
                judge_cap=args.judge_cap,
                remember=not args.no_memory,
            )
        )
        j, st = report["judge"], report["top_vs_branch0"]
        out(
            f"rank {args.rollout_id}: {report['questions']} questions, "
            f"{report['branches']} branches"
        )
        out(
            f"  pass@1 {report['pass_at_1']:.3f}  pass@N {report['pass_at_n']:.3f}  top branch "
            f"correct when one is: {report['ranker_top_correct_share']}"
        )
        out(
            f"  judge {j['model']}: {j['calls']} calls, at most {j['max_calls_in_a_batch']} per "
            f"batch (cap {j['cap_per_batch']}), {j['capped_samples']} samples capped"
        )
        mdd = st["min_detectable_delta_pp"]
        out(
            f"  top vs branch 0: n={st['n']} powered={str(st['powered']).lower()} "
            f"MDD={'n/a' if mdd is None else f'{mdd:.1f} pp'} McNemar p={st['mcnemar_p']}"
        )
        if report["memories"] is not None:
            m = report["memories"]
            out(
                f"  memories: {m['stored']} stored, {m['dropped_unverified']} not verified "
                "(dropped)"
            )
        if not st["powered"]:
            logger.warning(
                "underpowered (n={}): read the ranking as a best-effort estimate", st["n"]
            )
        out(f"  next: export -w {args.workspace} {args.rollout_id}")
        _notice(session)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.cli import make_config
    from app.commands import _bars, out
    from app.harness.export import export_rollouts
    from app.harness.session import Session
    from app.harness.writer_lock import WriterLock

    config = make_config(args)
    with (
        WriterLock(args.workspace, "export"),
        Session(args.workspace, config, _bars(args)) as session,
    ):
        target = args.out or session.paths.root / "exports" / args.rollout_ids[0]
        manifests = export_rollouts(
            session, args.rollout_ids, target, include_test=args.include_test
        )
        for name, m in manifests.items():
            out(f"  {target / name}: {m['count']} rows ({m['layout']})")
        skipped = next(iter(manifests.values()))["test_questions_skipped"]
        if skipped:
            out(f"  {skipped} test-pool questions left out (--include-test to export them)")
    return 0
