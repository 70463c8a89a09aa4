"""`distill`: probe a teacher against a student and, if worth it, train the student on the
teacher's verified answers (docs/distill.md; app/api.py `distill`, the work in app/distill.py).
The exit code is the probe's verdict: 0 distill, 3 not_worth_it, 4 insufficient_evidence."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.cli._output import notice_if_simulated, out, out_json, overrides_from

if TYPE_CHECKING:
    from app.distill import DistillOutcome, ModelFigures

HELP = (
    "probe a teacher against a student; if worth it, make the teacher's verified "
    "answers the student's memories, train the student and compare on test "
    "(exit 0 distill, 3 not_worth_it, 4 insufficient_evidence)"
)
EXAMPLE = "distill -w workspaces/distil --teacher sim/basic-strong --student sim/basic"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--teacher", required=True, metavar="MODEL", help="the strong model")
    p.add_argument("--student", required=True, metavar="MODEL", help="the cheap model")


def run(args: argparse.Namespace) -> int:
    from app import api
    from app.distill import to_json

    outcome = api.distill(
        args.workspace,
        args.teacher,
        args.student,
        args.config,
        overrides=overrides_from(args),
        progress=not args.no_progress and not args.json,
    )
    if args.json:
        out_json(to_json(outcome))
        return outcome.exit_code
    for line in distill_lines(outcome):
        out(line)
    notice_if_simulated(args.teacher.startswith("sim/") or args.student.startswith("sim/"))
    return outcome.exit_code


def distill_lines(o: DistillOutcome) -> list[str]:
    from app.distill import to_json

    p = o.probe
    lines = [
        f"probe on validation ({p.families} families): teacher {p.teacher_accuracy:.3f}, "
        f"student {p.student_accuracy:.3f}, gap {p.gap:+.3f} "
        f"(interval {p.interval[0]:+.3f} to {p.interval[1]:+.3f}, minimum {p.min_gap})",
        f"verdict: {p.verdict.value} ({p.reason})",
    ]
    if o.teacher is None or o.student_before is None or o.student_after is None:
        lines.append(f"nothing trained; the probe is in {o.path}")
        return lines
    lines.append(f"teacher winners stored as memories: {o.winners_stored} (diagnosis pool)")
    for label, f in (
        ("teacher", o.teacher),
        ("student before", o.student_before),
        ("student after", o.student_after),
    ):
        lines.append(f"{label:<15} {_figure(f)}")
    if o.gap_closed is not None:
        lines.append(f"gap closed: {o.gap_closed:.3f}")
    if o.mcnemar is not None:
        w, lo, pv = o.mcnemar
        lines.append(f"after vs before on test units: {w} gained, {lo} lost, exact p = {pv:.3g}")
    word = "promoted" if o.promoted else "not promoted"
    lines.append(f"student {word}: {to_json(o)['promotion_basis']}")
    lines.append(f"written to {o.path}")
    return lines


def _figure(f: ModelFigures) -> str:
    cost = (
        f"${f.cost_per_1000:.4f} per 1,000 questions ({f.price_basis})"
        if f.cost_per_1000 is not None
        else f"cost omitted: {f.price_basis}"
    )
    lo, hi = f.interval
    return (
        f"{f.model} skills {f.skills_version}: test {f.accuracy:.3f} "
        f"({f.correct}/{f.total}, Wilson {lo:.3f}-{hi:.3f}); {cost}"
    )
