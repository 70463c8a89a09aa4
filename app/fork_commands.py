"""CLI for best-of-N rollouts (README "Best-of-N rollouts"): `fork`, `rank`, `export`.

The handlers of the three commands (their parsers are in app/cli.py); the work is in
app/harness/fork.py, rank.py and export.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable

from loguru import logger

from app.cli_support import (
    bars_from,
    config_from,
    notice_if_simulated,
    out,
    out_json,
    run_sync,
)


def cmd_fork(args: argparse.Namespace) -> int:
    from app.api import next_run_id
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

    config = config_from(args)
    with (
        WriterLock(args.workspace, "fork"),
        Session(args.workspace, config, bars_from(args)) as session,
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
            rollout_id = args.rollout_id or next_run_id(session, "fork-")
        with session.bars.live():
            result = run_sync(
                run_fork(session, spec, rollout_id, resume=args.resume, bars=session.bars)
            )
        summary = session.log.run(rollout_id)
        s = json.loads((summary or {}).get("summary_json") or "{}")
        if args.json:
            out_json(
                {
                    **dataclasses.asdict(result),
                    "pass_at_1": s.get("pass_at_1", 0.0),
                    "pass_at_n": s.get("pass_at_n", 0.0),
                    "simulated_model": config.uses_sim,
                }
            )
            return 0
        out(
            f"fork {rollout_id}: {result.questions} questions x "
            f"{result.branches // max(1, result.questions)} branches "
            f"({result.ran} run, {result.skipped} already done) in {result.elapsed_s:.2f} s"
        )
        out(f"  pass@1 {s.get('pass_at_1', 0):.3f}  pass@N {s.get('pass_at_n', 0):.3f}")
        out(f"  next: rank -w {args.workspace} {rollout_id}")
        notice_if_simulated(config.uses_sim)
    return 0


def cmd_rank(args: argparse.Namespace) -> int:
    from app.harness.rank import parse_weights, rank_rollout
    from app.harness.session import Session
    from app.harness.writer_lock import WriterLock

    config = config_from(args)
    with (
        WriterLock(args.workspace, "rank"),
        Session(args.workspace, config, bars_from(args)) as session,
    ):
        report = run_sync(
            rank_rollout(
                session,
                args.rollout_id,
                verifiers=tuple(args.verifier or ("checker",)),
                weights=parse_weights(args.weight),
                judge_cap=args.judge_cap,
                remember=not args.no_memory,
            )
        )
        st = report["top_vs_branch0"]
        if not st["powered"]:
            logger.warning(
                "underpowered (n={}): read the ranking as a best-effort estimate", st["n"]
            )
        if args.json:
            out_json(report)
            return 0
        j = report["judge"]
        out(
            f"rank {args.rollout_id}: {report['questions']} questions, "
            f"{report['branches']} branches"
        )
        out(
            f"  pass@1 {report['pass_at_1']:.3f}  pass@N {report['pass_at_n']:.3f}  top branch "
            f"correct when one is: {_figure(report['ranker_top_correct_share'], '.3f')}"
        )
        out(
            f"  judge {j['model']}: {j['calls']} calls, at most {j['max_calls_in_a_batch']} per "
            f"batch (cap {j['cap_per_batch']}), {j['capped_samples']} samples capped"
        )
        mdd = st["min_detectable_delta_pp"]
        out(
            f"  top vs branch 0: n={st['n']} powered={str(st['powered']).lower()} "
            f"MDD={_figure(mdd, '.1f')}{'' if mdd is None else ' pp'} "
            f"McNemar p={_figure(st['mcnemar_p'], '.2g')}"
        )
        if report["memories"] is not None:
            m = report["memories"]
            out(
                f"  memories: {m['stored']} stored, {m['dropped_unverified']} not verified "
                "(dropped)"
            )
        out(f"  next: export -w {args.workspace} {args.rollout_id}")
        notice_if_simulated(config.uses_sim)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.harness.export import export_rollouts
    from app.harness.session import Session
    from app.harness.writer_lock import WriterLock

    config = config_from(args)
    with (
        WriterLock(args.workspace, "export"),
        Session(args.workspace, config, bars_from(args), calls_models=False) as session,
    ):
        target = args.out or session.paths.root / "exports" / args.rollout_ids[0]
        manifests = export_rollouts(
            session,
            args.rollout_ids,
            target,
            include_test=args.include_test,
            overwrite=args.overwrite,
        )
        if args.json:
            out_json({"out": str(target), "files": manifests})
            return 0
        for name, m in manifests.items():
            out(f"  {target / name}: {m['count']} rows ({m['layout']})")
        skipped = next(iter(manifests.values()))["test_questions_skipped"]
        if skipped:
            out(f"  {skipped} test-pool questions left out (--include-test to export them)")
    return 0


def _figure(value: float | None, spec: str) -> str:
    """A figure of the rank report, or n/a when there was nothing to measure (no branches)."""
    return "n/a" if value is None else format(value, spec)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "fork": cmd_fork,
    "rank": cmd_rank,
    "export": cmd_export,
}
