"""CLI for curated data (docs/curation.md): `rank --cascade`'s lines, `export --mix`'s lines
and `export verify DIR`. Arguments in, a call of app/api.py, lines out."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.cli_support import out, out_json
from app.errors import UserError

if TYPE_CHECKING:
    from app import api


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


def export_curation_lines(c: api.CurationSummary) -> list[str]:
    avail = ", ".join(f"{v} {k}" for k, v in c.classes_available.items())
    lines = [f"  classes available: {avail}"]
    if c.mix_requested is not None and c.mix_realised is not None:
        given = c.mix_given or {}  # an export written before `given` was recorded has none
        shares = ", ".join(
            f"{k} {f'{given[k]:g} -> ' if k in given else ''}"
            f"{100 * c.mix_requested[k]:.2f}% -> {100 * c.mix_realised[k]:.2f}%"
            for k in c.mix_requested
        )
        how = "given -> normalised to sum 1 -> realised" if given else "normalised -> realised"
        lines.append(f"  mix by {c.mix_by} ({how}): {shares}")
    neg = "n/a" if c.negative_token_share is None else f"{100 * c.negative_token_share:.2f}%"
    lines.append(
        f"  {c.sft_records} SFT records, {c.preference_records} preference records "
        f"(negatives {neg} of their tokens); lineage ids {c.lineage_id}; "
        f"licence tier {c.licence_tier}"
    )
    return lines


def cmd_export_verify(args: argparse.Namespace) -> int:
    from app import api

    if len(args.rollout_ids) != 2:
        raise UserError("export verify: give one folder (export verify -w WS DIR)")
    result = api.export_verify(args.rollout_ids[1], args.workspace)
    if args.json:
        out_json(result)
    else:
        out(
            f"export verify {result.folder}: {result.records} records in {result.files} files, "
            f"{result.failures} not matching"
            + ("" if result.workspace_checked else " (lineage only)")
        )
        if result.first_failure:
            out(f"  first: {result.first_failure}")
        for name, how in result.checked.items():
            out(f"  checked {name}: {how}")
        for name, why in result.not_checked.items():
            out(f"  not checked {name}: {why}")
    return 1 if result.failures else 0


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} us"
