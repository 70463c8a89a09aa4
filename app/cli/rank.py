"""`rank`: verify, judge and rank a fork's branches and remember verified winners (app/api.py
`rank`, the work in app/harness/data/rank.py; `--cascade` in app/harness/data/curation.py)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli._output import config_from, notice_if_simulated, out, out_json, progress_from
from app.errors import UserError

if TYPE_CHECKING:
    from app import api

HELP = "verify, judge and rank a fork's branches; remember verified winners"
EXAMPLE = "rank -w workspaces/mine fork-1"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rollout_id", help="the fork to rank (e.g. fork-1)")
    p.add_argument(
        "--verifier",
        action="append",
        default=None,
        metavar="NAME",
        help="checker (default), completed, trajectory, or module:function (repeatable)",
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
    _add_cascade_options(p)


def _add_cascade_options(p: argparse.ArgumentParser) -> None:
    """`rank --cascade` (app/harness/data/curation.py)."""
    p.add_argument(
        "--cascade",
        action="store_true",
        help="verifiers cheapest first; a branch stops at its first non-pass",
    )
    p.add_argument(
        "--verifier-cost",
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="declared mean cost of a verifier for --cascade (else measured; repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from app import api
    from app.harness.data.rank import parse_weights

    result = api.rank(
        args.workspace,
        args.rollout_id,
        config_from(args),
        verifiers=tuple(args.verifier or ("checker",)),
        weights=parse_weights(args.weight),
        judge_cap=args.judge_cap,
        remember=not args.no_memory,
        progress=progress_from(args),
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


def _figure(value: float | None, spec: str) -> str:
    """A figure of the rank report, or n/a when there was nothing to measure (no branches)."""
    return "n/a" if value is None else format(value, spec)


def parse_verifier_costs(items: Sequence[str]) -> dict[str, float]:
    """`NAME=SECONDS` items; NAME is a verifier as --verifier names it."""
    costs: dict[str, float] = {}
    for item in items:
        name, sep, raw = item.rpartition("=")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or not name or not math.isfinite(value) or value < 0:
            raise UserError(f"--verifier-cost {item!r}: expected NAME=SECONDS (seconds >= 0)")
        costs[name] = value
    return costs


def curation_lines(result: api.RankResult) -> list[str]:
    """The trajectory classes and, for a cascade, its stages and economics."""
    lines = []
    if (c := result.classes) is not None:
        n = c.counts
        lines.append(
            f"  classes: {n['pristine']} pristine, {n['recovery']} recovery "
            f"({c.recovery_with_retry} with a retry), {n['verbose']} verbose, "
            f"{n['negative']} negative"
        )
    if (k := result.cascade) is not None:
        lines.append(f"  cascade ({' > '.join(k.order)}):")
        for st in k.stages:
            lines.append(
                f"    {st.verifier}: entered {st.entered}, passed {st.passed} "
                f"(p={st.pass_rate:.3f}), mean cost {_seconds(st.mean_cost_s)} ({st.cost_basis})"
            )
        per_accepted = "n/a" if k.cost_per_accepted_s is None else _seconds(k.cost_per_accepted_s)
        ratio = "n/a" if k.cost_ratio is None else f"{k.cost_ratio:.3f}"
        lines.append(
            f"    yield {k.yield_rate:.6f}  C_attempt {_seconds(k.cost_per_attempt_s)} vs "
            f"{_seconds(k.cost_every_stage_s)} every stage  per accepted {per_accepted}  "
            f"spent/every-verifier {ratio}"
        )
    return lines


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} us"
