"""app/harness/training/bundle_check.py `without`: a bundle with some of its edits left out."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.training.bundle_check import check_bundle, without
from app.harness.training.validate import ValidationOutcome
from core.evolution.edits import Edit, apply_edits
from core.evolution.evolve import EvolutionRecord, EvolutionStatus, TargetKind
from core.evolution.gate import GateAction, GateDecision

ORIGINAL = "# Skill\n\n## Rules\n- Old rule.\n"


def _record(*edits: Edit) -> EvolutionRecord:
    evolved, reports = apply_edits(ORIGINAL, edits, "skill.md")
    return EvolutionRecord(
        status=EvolutionStatus.OK,
        target_kind=TargetKind.SKILL,
        target_file="skill.md",
        original=ORIGINAL,
        evolved=evolved,
        edits=edits,
        apply_report=reports,
    )


def test_leaving_an_edit_out_applies_the_others_to_the_original() -> None:
    a = Edit("add", "Rules", content="- Rule A.", file="skill.md")
    b = Edit("add", "Rules", content="- Rule B.", file="skill.md")
    record = _record(a, b)
    kept = without(record, {1})
    assert kept is not None
    assert kept.applied() == (a,)
    assert "- Rule A." in kept.evolved and "- Rule B." not in kept.evolved
    assert kept.evolved == _record(a).evolved
    assert without(record, {0, 1}) is None  # nothing left: that is the base, not a bundle


def test_an_edit_that_rested_on_a_left_out_one_makes_the_variant_unusable() -> None:
    a = Edit("add", "Rules", content="- Rule A.", file="skill.md")
    b = Edit("replace", "Rules", old="- Rule A.", new="- Rule A, refined.", file="skill.md")
    record = _record(a, b)
    assert len(record.applied()) == 2
    assert without(record, {0}) is None
    assert without(record, {1}) is not None


# --------------------------------------------------------------------------- the check's asks
USEFUL = Edit("add", "Rules", content="- Useful rule.", file="skill.md")
DECOY = Edit("add", "Rules", content="- Decoy rule.", file="skill.md")


@dataclass
class FakeValidator:
    """Answers as a skill text says: the useful rule turns `fixed` right, the decoy turns
    `broken` wrong; the base (the original text) gets `base_right` right. Records each ask."""

    base_right: set[str]
    fixed: set[str]
    broken: set[str]
    asked: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    baseline_run_id: str = "gatebase"
    base_prompts: AgentPrompts = AgentPrompts(
        system="", tool_docs={}, skills={"skill.md": ORIGINAL}, user_template=""
    )

    async def ensure_baseline(self, units: Sequence[str], run_id: str) -> None:
        return None

    def baseline_correct(self, unit: str) -> bool | None:
        return unit in self.base_right

    async def units_right(
        self, units: Sequence[str], prompts: AgentPrompts, name: str
    ) -> dict[str, bool]:
        self.asked.append((name, tuple(units)))
        text = prompts.skills["skill.md"]
        right = set(self.base_right)
        right |= self.fixed if "Useful" in text else set()
        right -= self.broken if "Decoy" in text else set()
        return {u: u in right for u in units}


def _accepted(won: list[str], lost: list[str]) -> ValidationOutcome:
    decision = GateDecision(
        action=GateAction.ACCEPT,
        W=len(won),
        L=len(lost),
        n_used=len(won) + len(lost),
        e_value=25.0,
        e_harm=1.0,
        stop_reason="threshold",
        delta_hat=0.0,
        delta_shrunk=0.0,
    )
    return ValidationOutcome(
        "t",
        decision,
        "run-gate-t",
        {},
        {},
        quadrants={"win": won, "loss": lost},
        observed_units=tuple(won + lost),
    )


def _check(validator: FakeValidator, outcome: ValidationOutcome, ladder: list[str]):
    record = _record(USEFUL, DECOY)
    return asyncio.run(
        check_bundle(validator, record, outcome, "run-gate-t", lambda *_: None, ladder)  # type: ignore[arg-type]
    )


def test_past_the_gate_a_clean_bundle_is_asked_only_where_it_could_lose() -> None:
    # the gate saw w1, w2 won; u1-u3 unreached, the base right on u1 alone: no loss anywhere
    v = FakeValidator(base_right={"u1"}, fixed={"w1", "w2", "u2"}, broken=set())
    check = _check(v, _accepted(["w1", "w2"], []), ["w1", "w2", "u1", "u2", "u3"])
    assert check.dropped == ()
    assert v.asked == [("run-gate-t-further", ("u1",))]  # the base's failures could only be won


def test_a_loss_past_the_gate_has_the_wins_asked_too_and_drops_the_decoy() -> None:
    v = FakeValidator(base_right={"u1", "u4"}, fixed={"w1", "u2"}, broken={"u4"})
    check = _check(v, _accepted(["w1"], []), ["w1", "u1", "u2", "u3", "u4"])
    assert check.dropped == (DECOY,)
    further = [units for name, units in v.asked if name == "run-gate-t-further"]
    assert further == [("u1", "u4"), ("u2", "u3")]  # where it could lose, then the rest


def test_a_loss_the_gate_saw_has_every_unreached_unit_asked() -> None:
    v = FakeValidator(base_right={"l1", "u1"}, fixed={"w1", "u2"}, broken={"l1"})
    check = _check(v, _accepted(["w1"], ["l1"]), ["w1", "l1", "u1", "u2"])
    assert check.dropped == (DECOY,)
    further = [units for name, units in v.asked if name == "run-gate-t-further"]
    assert further == [("u1",), ("u2",)]
