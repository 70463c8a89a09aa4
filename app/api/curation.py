"""Curation (core/curation.py): the trajectory classes and verifier cascade a `rank` reports, and
an export's mix of classes: the options `export` is given and the curation manifest it writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.api._common import _is_number
from app.api_args import bad as _bad
from app.api_args import expect as _expect

if TYPE_CHECKING:
    from app.harness.data.export_formats import CurationOptions


@dataclass(frozen=True)
class TrajectoryClasses:
    """How many ranked branches fell in each trajectory class (core/curation.py)."""

    counts: dict[str, int]  # pristine, recovery, verbose, negative
    shares: dict[str, float]  # of all ranked branches
    recovery_with_retry: int  # recoveries whose remediation re-called the faulted tool


@dataclass(frozen=True)
class CascadeStage:
    verifier: str
    entered: int
    passed: int
    pass_rate: float
    mean_cost_s: float
    cost_basis: str  # declared, declared by the verifier, or measured on N branches
    measured_mean_s: float | None
    rejected: int
    rejects: tuple[str, ...]  # "question#branch", the first ones


@dataclass(frozen=True)
class CascadeReport:
    """`rank --cascade`: stages cheapest first; yield Y = prod p_i, C_attempt = c1 + p1 c2 +
    ..., cost per accepted = C_attempt / Y; spent vs every verifier on every branch."""

    order: tuple[str, ...]
    stages: tuple[CascadeStage, ...]
    yield_rate: float  # Y
    cost_per_attempt_s: float
    cost_every_stage_s: float
    cost_per_accepted_s: float | None
    cost_spent_s: float
    cost_if_every_verifier_s: float
    cost_ratio: float | None


def _trajectory_classes(report: Mapping[str, Any] | None) -> TrajectoryClasses | None:
    if not report:
        return None
    return TrajectoryClasses(
        dict(report["counts"]), dict(report["shares"]), report["recovery_with_retry"]
    )


def _cascade_report(report: Mapping[str, Any] | None) -> CascadeReport | None:
    if not report:
        return None
    fields = {k: v for k, v in report.items() if k not in ("stages", "order")}
    return CascadeReport(
        order=tuple(report["order"]),
        stages=tuple(
            CascadeStage(**{**st, "rejects": tuple(st["rejects"])}) for st in report["stages"]
        ),
        **fields,
    )


def _check_cascade_arguments(cascade: object, verifier_costs: object) -> None:
    _expect("cascade", cascade, isinstance(cascade, bool), "True or False")
    _expect(
        "verifier_costs",
        verifier_costs,
        verifier_costs is None
        or (
            isinstance(verifier_costs, Mapping)
            and all(
                isinstance(k, str) and _is_number(v) and v >= 0 for k, v in verifier_costs.items()
            )
        ),
        'a mapping of verifier names to seconds (>= 0), e.g. {"checker": 0.001}',
    )


@dataclass(frozen=True)
class CurationSummary:
    """An export's curation manifest (app/harness/data/export_formats.py)."""

    classes_available: dict[str, int]
    mix_by: str
    mix_requested: dict[str, float] | None  # None: every pristine and recovery branch
    mix_realised: dict[str, float] | None
    mix_max_error_pp: float | None
    sft_records: int
    preference_records: int
    negative_token_share: float | None  # of the preference data's tokens
    lineage_id: str  # sha256, or hmac-sha256 under SKILL_TRAINER_LINEAGE_KEY
    licence_tier: (
        str  # permissive, weak-copyleft, strong-copyleft or restricted (allowed by the user)
    )
    # the --mix shares as given; mix_requested is them normalised to sum 1 over the classes named
    mix_given: dict[str, float] | None = None


def _curation_options(
    mix: object,
    by: object,
    total: object,
    seed: object,
    allow_copyleft: bool,
    allow_restricted: bool = False,
) -> CurationOptions:
    from app.harness.data.export_formats import CurationOptions, parse_mix_option

    _expect("by", by, by in ("tokens", "count"), '"tokens" or "count"')
    _expect("mix_total", total, total is None or (type(total) is int and total > 0), "a count > 0")
    _expect("seed", seed, type(seed) is int, "a whole number")
    if mix is None:
        shares = None
    elif isinstance(mix, str):
        shares = parse_mix_option(mix)
    elif isinstance(mix, Mapping) and all(
        isinstance(k, str) and _is_number(v) for k, v in mix.items()
    ):
        shares = parse_mix_option(",".join(f"{k}={v}" for k, v in mix.items()))
    else:
        raise _bad("mix", mix, '"pristine=0.65,recovery=0.25" or a mapping of class to share')
    return CurationOptions(
        shares,
        by == "tokens",
        int(str(seed)),
        None if total is None else int(str(total)),
        allow_copyleft,
        allow_restricted,
    )


def _curation_summary(path: Path) -> CurationSummary | None:
    import json

    if not path.is_file():
        return None
    m = json.loads(path.read_text())
    mix_part, pref = m["mix"], m["preference"]
    return CurationSummary(
        classes_available=dict(m["classes_available"]),
        mix_by=mix_part["by"],
        mix_requested=mix_part.get("requested"),
        mix_realised=mix_part.get("realised"),
        mix_max_error_pp=mix_part.get("max_error_pp"),
        sft_records=m["sft_records"],
        preference_records=pref["records"],
        negative_token_share=pref["negative_token_share"],
        lineage_id=m["lineage"]["id"],
        licence_tier=m["licence"]["tier"],
        mix_given=mix_part.get("given"),
    )
