"""The line check of an accepted bundle: which of its edits to drop before it is kept.

core/evolution/bundle_check.py says what the check decides and why; this module answers the
questions it needs. It runs between the gate and `settle` (step.py), for a candidate the gate
accepted that carries two or more edits. An e-process test that accepted before its ladder's
end did not see the ladder's last units, where a decoy's losses may be: on a final accept the
bundle answers those too (run `<gate run>-further`; their baseline is mostly cached) and their wins and losses
join the gate's. Only a bundle with a lost unit is checked further, so a clean one costs those
answers alone. Each variant (the bundle with some edits left out) is its own run in the harness
log, named after the gate run: `<gate run>-lost-without-1`, the lost units answered with edit 1
left out; `-changed-without-1`, the won units and the losses that follow edit 1. So every answer
behind a dropped edit can be read back. A killed step is replayed whole from its checkpoint,
the check with it, as the gate is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.training.validate import ValidationOutcome, Validator, with_skill
from core.concurrency import fan_out
from core.evolution.bundle_check import better_without, losses_following
from core.evolution.edits import Edit, applied_edits, apply_edits
from core.evolution.evolve import EvolutionRecord

# registers a variant's run before it is answered: (run id, the variant's prompts)
Register = Callable[[str, AgentPrompts], None]


@dataclass(frozen=True)
class BundleCheck:
    """The bundle to keep (`record`: the accepted one less `dropped`) and what it cost."""

    record: EvolutionRecord
    dropped: tuple[Edit, ...] = ()
    units_asked: int = 0

    def note(self, total: int) -> str:
        """The step report's note; empty when the check dropped nothing."""
        if not self.dropped:
            return ""
        lines = "; ".join(_quoted(e) for e in self.dropped)
        return (
            f"; the line check dropped {len(self.dropped)} of {total} edit(s): left out, each "
            f"turned more lost units right (that no other edit's absence did) than won units "
            f"wrong: {lines}"
        )


def _quoted(edit: Edit) -> str:
    text = " ".join((edit.content or edit.new or edit.old).split())
    return f"{edit.op} {text[:80]!r}"


def without(record: EvolutionRecord, leave_out: set[int]) -> EvolutionRecord | None:
    """The record with the applied edits at `leave_out` removed, or None when the rest do not
    all apply to the original without them (an edit that rested on a left-out one)."""
    edits = record.applied()
    kept = tuple(e for i, e in enumerate(edits) if i not in leave_out)
    text, reports = apply_edits(record.original, kept, record.target_file)
    if not kept or applied_edits(kept, reports) != kept:
        return None
    return replace(record, edits=kept, apply_report=reports, evolved=text)


async def check_bundle(
    validator: Validator,
    record: EvolutionRecord,
    outcome: ValidationOutcome,
    run_id: str,
    register: Register,
    further: Sequence[str] = (),
) -> BundleCheck:
    """Leave each edit out on the lost units; drop each edit whose own losses outnumber the
    wins the bundle loses without it. `further`: units of the gate's ladder it did not reach
    (a test that accepted early), answered by the bundle first so that losses there count."""
    edits = record.applied()
    if len(edits) < 2 or not outcome.decision.accepted:
        return BundleCheck(record)
    asked = 0

    async def right(prompts_text: str, units: Sequence[str], name: str) -> frozenset[str]:
        nonlocal asked
        prompts = with_skill(validator.base_prompts, record.target_file, prompts_text)
        register(name, prompts)
        asked += len(units)
        answers = await validator.units_right(units, prompts, name)
        return frozenset(u for u in units if answers[u])

    won, lost = list(outcome.quadrants.get("win", [])), list(outcome.quadrants.get("loss", []))
    seen = set(outcome.observed_units)
    if rest := [u for u in further if u not in seen]:
        await validator.ensure_baseline(rest, validator.baseline_run_id)
        right_now = await right(record.evolved, rest, f"{run_id}-further")
        for unit in rest:
            base = validator.baseline_correct(unit)
            won += [unit] if base is False and unit in right_now else []
            lost += [unit] if base is True and unit not in right_now else []
    if not lost:
        return BundleCheck(record, units_asked=asked)

    async def right_without(
        leave_out: set[int], units: Sequence[str], asks: str
    ) -> frozenset[str] | None:
        variant = without(record, leave_out)
        if variant is None:
            return None
        left_out = "-".join(str(i) for i in sorted(leave_out))
        return await right(variant.evolved, units, f"{run_id}-{asks}-without-{left_out}")

    async def leave_out_one(index: int) -> frozenset[str] | None:
        return await right_without({index}, lost, "lost")

    answers = await fan_out(leave_out_one, range(len(edits)))
    reverts = {i: units for i, units in enumerate(answers) if units is not None}
    dropped: set[int] = set()
    for index, own_losses in losses_following(reverts, lost).items():
        answered = await right_without(dropped | {index}, [*won, *own_losses], "changed")
        if answered is not None and better_without(answered, won, own_losses):
            dropped.add(index)
    kept = without(record, dropped) if dropped else record
    assert kept is not None  # every edit dropped was checked on exactly this bundle
    return BundleCheck(kept, tuple(edits[i] for i in sorted(dropped)), asked)
