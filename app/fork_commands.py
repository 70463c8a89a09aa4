"""CLI for best-of-N rollouts (README "Best-of-N rollouts"): `fork`, `rank`, `export`.

The handlers of the three commands (their parsers are in app/cli.py): arguments in, a call of
app/api.py, lines out; the work is in app/harness/data/fork.py, rank.py and export.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli_support import config_from, notice_if_simulated, out, out_json
from app.curation_commands import (
    cmd_export_verify,
    curation_lines,
    export_curation_lines,
    parse_verifier_costs,
)
from app.harness.data.fork import parse_range, parse_temperatures
from app.harness.data.rank import parse_weights

if TYPE_CHECKING:
    from app import api


def cmd_fork(args: argparse.Namespace) -> int:
    from app import api

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
        progress=_progress(args),
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


def cmd_rank(args: argparse.Namespace) -> int:
    from app import api

    result = api.rank(
        args.workspace,
        args.rollout_id,
        config_from(args),
        verifiers=tuple(args.verifier or ("checker",)),
        weights=parse_weights(args.weight),
        judge_cap=args.judge_cap,
        remember=not args.no_memory,
        progress=_progress(args),
        cascade=args.cascade,
        verifier_costs=parse_verifier_costs(args.verifier_cost),
    )
    if args.json:
        out_json(result)
        return 0
    for line in rank_lines(result, args.workspace):
        out(line)
    notice_if_simulated(result.simulated_model, config_from(args).models.values())
    return 0


def rank_lines(result: api.RankResult, workspace: Path) -> list[str]:
    """`rank`'s result as lines for people."""
    j, st = result.judge, result.top_vs_branch0
    mdd = st.min_detectable_delta_pp
    lines = [
        f"rank {result.rollout_id}: {result.questions} questions, {result.branches} branches",
        f"  pass@1 {result.pass_at_1:.3f}  pass@N {result.pass_at_n:.3f}  top branch "
        f"correct when one is: {_figure(result.ranker_top_correct_share, '.3f')}",
        f"  judge {j.model}: {j.calls} calls, at most {j.max_calls_in_a_batch} per "
        f"batch (cap {j.cap_per_batch}), {j.capped_samples} samples capped",
        f"  top vs branch 0: n={st.n} powered={str(st.powered).lower()} "
        f"MDD={_figure(mdd, '.1f')}{'' if mdd is None else ' pp'} "
        f"McNemar p={_figure(st.mcnemar_p, '.2g')}",
    ]
    if (pw := j.pairwise) is not None and pw.pairs_both_orders:
        lines.append(
            f"  pairwise: {pw.pairs_both_orders} compared in both orders, "
            f"{pw.order_disagreements} disagreed (ties); first shown wins "
            f"{_figure(pw.first_shown_win_rate, '.2f')}; longer answer wins "
            f"{_figure(pw.longer_preferred_share, '.2f')} of {pw.length_mismatched_verdicts}"
            + (" (verbosity bias?)" if pw.verbosity_warning else "")
        )
    if result.memories is not None:
        m = result.memories
        lines.append(
            f"  memories: {m.stored} stored, {m.dropped_unverified} not verified (dropped)"
        )
    lines += curation_lines(result)
    lines.append(f"  next: export -w {workspace} {result.rollout_id}")
    return lines


def cmd_export(args: argparse.Namespace) -> int:
    from app import api

    if args.format != "jsonl":  # runs and forks as traces: app/export_commands.py
        from app.export_commands import cmd_export_traces

        return cmd_export_traces(args)
    if args.rollout_ids[0] == "verify":  # `export verify DIR`
        return cmd_export_verify(args)
    result = api.export(
        args.workspace,
        args.rollout_ids,
        out=args.out,
        include_test=args.include_test,
        overwrite=args.overwrite,
        mix=args.mix,
        by=args.by,
        mix_total=args.mix_total,
        seed=args.seed,
        allow_copyleft=args.allow_copyleft,
        allow_restricted=args.allow_restricted,
        audited=args.audited,
    )
    if args.json:
        out_json(result)
        return 0
    for name, m in result.files.items():
        out(f"  {result.out / name}: {m.count} rows ({m.layout})")
    first = next(iter(result.files.values()))
    if first.judge_only_refused:
        ids = ", ".join(first.judge_only_refused_ids[:3])
        more = ", ..." if first.judge_only_refused > 3 else ""
        out(
            f"  {first.judge_only_refused} branch(es) passed by a rubric judge alone left out of "
            f"the training targets ({ids}{more}; all in sft.jsonl.manifest.json): "
            "--audited FILE lets the ones you checked through"
        )
    if first.judge_only_audited:
        out(f"  {first.judge_only_audited} judge-only branch(es) exported as audited")
    if result.curation is not None:
        for line in export_curation_lines(result.curation):
            out(line)
    skipped = next(iter(result.files.values())).test_questions_skipped
    if skipped:
        out(f"  {skipped} test-pool questions left out (--include-test to export them)")
    return 0


def _progress(args: argparse.Namespace) -> bool | None:
    return False if args.no_progress else None  # None: bars when stderr is a terminal


def _figure(value: float | None, spec: str) -> str:
    """A figure of the rank report, or n/a when there was nothing to measure (no branches)."""
    return "n/a" if value is None else format(value, spec)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "fork": cmd_fork,
    "rank": cmd_rank,
    "export": cmd_export,
}
