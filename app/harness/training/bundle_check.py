"""The line check of an accepted bundle: which of its edits to drop before it is kept.

core/evolution/bundle_check.py says what the check decides and why; this module answers the
questions it needs. It runs between the gate and `settle` (step.py), for a candidate the gate
accepted that carries two or more edits. An e-process test that accepted before its ladder's
end did not see the ladder's last units, where a decoy's losses may be. On a final accept the
bundle answers those units (run `<gate run>-further`; their baseline is mostly cached), and
their wins and losses join the gate's. It answers first the units the base answered right, the
only ones it can lose; the base's failures, which it can only win, only when it lost a unit,
since wins are weighed only against losses. So the check decides exactly as if every unit had
been asked, and a clean bundle costs only the answers where it could have lost. Only a bundle
with a lost unit is checked further. Each variant (the bundle with some edits left out) is its
own run in the harness log, named after the gate run: `<gate run>-lost-without-1`, the lost
units answered with edit 1 left out; `-changed-without-1`, the won units and the losses that
follow edit 1. So every answer behind a dropped edit can be read back. A killed step is
replayed whole from its checkpoint, the check with it, as the gate is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.training.validate import ValidationOutcome, Validator, with_skill
from core.evolution.bundle_check import drop_decided, losses_following
from core.evolution.edits import Edit, applied_edits, apply_edits
from core.evolution.evolve import EvolutionRecord

# registers a variant's run before it is answered: (run id, the variant's prompts)
Register = Callable[[str, AgentPrompts], None]


@dataclass(frozen=True)
class BundleCheck:
    """The bundle to keep (`record`: the accepted one less `dropped`)."""

    record: EvolutionRecord
    dropped: tuple[Edit, ...] = ()

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


# won units asked at a time while an edit's fate is open (`drop_decided`)
WON_CHUNK = 4


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
    (an e-process test that accepted early), answered by the bundle first so that losses there
    count."""
    if len(record.applied()) < 2 or not outcome.decision.accepted:
        return BundleCheck(record)
    check = _LineCheck(validator, record, run_id, register)
    won, lost = list(outcome.quadrants.get("win", [])), list(outcome.quadrants.get("loss", []))
    if rest := [u for u in further if u not in set(outcome.observed_units)]:
        more_won, more_lost = await check.further(rest, weigh_wins=bool(lost))
        won, lost = won + more_won, lost + more_lost
    if not lost:
        return BundleCheck(record)
    dropped: set[int] = set()
    for index, own_losses in losses_following(await check.lost_reverts(lost), lost).items():
        if await check.better_without(dropped, index, won, own_losses):
            dropped.add(index)
    kept = without(record, dropped) if dropped else record
    assert kept is not None  # every edit dropped was checked on exactly this bundle
    edits = record.applied()
    return BundleCheck(kept, tuple(edits[i] for i in sorted(dropped)))


@dataclass(frozen=True)
class _LineCheck:
    """The answers one check asks for, each variant a run of its own."""

    validator: Validator
    record: EvolutionRecord
    run_id: str
    register: Register

    def _open(self, text: str, name: str) -> AgentPrompts:
        prompts = with_skill(self.validator.base_prompts, self.record.target_file, text)
        self.register(name, prompts)
        return prompts

    async def _right(self, prompts: AgentPrompts, units: Sequence[str], name: str) -> set[str]:
        if not units:
            return set()
        answers = await self.validator.units_right(units, prompts, name)
        return {u for u in units if answers[u]}

    async def further(self, rest: Sequence[str], weigh_wins: bool) -> tuple[list[str], list[str]]:
        """(won, lost) among the ladder's units the gate did not reach. Only a unit the base
        answered right can be lost, so those are asked first. The base's failures can only be
        won, and wins matter only when the check weighs an edit's losses against them: they are
        asked when the bundle lost a unit (`weigh_wins`: already on the gate's units; or here),
        and otherwise the check ends with nothing to drop, as it would have after asking them."""
        validator, name = self.validator, f"{self.run_id}-further"
        await validator.ensure_baseline(rest, validator.baseline_run_id)
        base = {u: validator.baseline_correct(u) for u in rest}
        at_risk = [u for u in rest if base[u] is True]
        prompts = self._open(self.record.evolved, name)
        kept_right = await self._right(prompts, at_risk, name)
        lost = [u for u in at_risk if u not in kept_right]
        if not (lost or weigh_wins):
            return [], []
        winnable = [u for u in rest if base[u] is False]
        turned_right = await self._right(prompts, winnable, name)
        return [u for u in winnable if u in turned_right], lost

    async def lost_reverts(self, lost: Sequence[str]) -> dict[int, frozenset[str]]:
        """Edit -> the lost units answered right with it left out. Edits in order, each asked
        only the units no two earlier edits turned right: such a unit follows no edit alone
        (`losses_following`), whatever the later edits do."""
        reverts: dict[int, frozenset[str]] = {}
        for index in range(len(self.record.applied())):
            open_units = [u for u in lost if sum(u in r for r in reverts.values()) < 2]
            variant = without(self.record, {index})
            if variant is None:
                continue
            name = f"{self.run_id}-lost-without-{index}"
            prompts = self._open(variant.evolved, name)
            reverts[index] = frozenset(await self._right(prompts, open_units, name))
        return reverts

    async def better_without(
        self, dropped: set[int], index: int, won: Sequence[str], own_losses: Sequence[str]
    ) -> bool:
        """Whether the bundle without edit `index` (and the edits already dropped) turns more
        of its own losses right than won units wrong, asking the won units a chunk at a time until
        `drop_decided` is sure."""
        leave_out = dropped | {index}
        variant = without(self.record, leave_out)
        if variant is None:
            return False
        name = f"{self.run_id}-changed-without-{'-'.join(str(i) for i in sorted(leave_out))}"
        prompts = self._open(variant.evolved, name)
        # left out alone, the edit turned each of its own losses right (that is what they are)
        back = len(own_losses)
        if dropped:
            back = len(await self._right(prompts, own_losses, name))
        wrong, asked = 0, 0
        decision = drop_decided(back, wrong, len(won))
        while decision is None:
            chunk = won[asked : asked + WON_CHUNK]
            asked += len(chunk)
            wrong += len(chunk) - len(await self._right(prompts, chunk, name))
            decision = drop_decided(back, wrong, len(won) - asked)
        return decision
