"""app/harness/training/bundle_check.py `without`: a bundle with some of its edits left out."""

from __future__ import annotations

from app.harness.training.bundle_check import without
from core.evolution.edits import Edit, apply_edits
from core.evolution.evolve import EvolutionRecord, EvolutionStatus, TargetKind

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
