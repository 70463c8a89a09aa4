"""core/evolution/repeats.py: the blacklist's annotations stripped from the evolver's text, the
normalised text two proposals of one rule share, and the key of a candidate."""

from __future__ import annotations

import pytest

from core.evolution.edits import Edit, RejectedEdit, format_blacklist
from core.evolution.repeats import (
    candidate_key,
    normalise_text,
    normalised_edit,
    strip_annotations,
    strip_edit_annotations,
)

RULE = "- Usernames are team-surname plus the first initial."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # as format_blacklist writes it: a reason with brackets of its own
        (f"{RULE} (rejected: gate futility (W=0, L=3))", RULE),
        # the annotation copied twice, as it grew step by step on the real run
        (f"{RULE} (rejected: gate futility (W=0, L=3)) (rejected: gate futility (W=1, L=4))", RULE),
        # in the middle of the text: the words after it stay, one space between
        ("- Use the team (rejected: gate no_signal (W=2, L=2)) prefix.", "- Use the team prefix."),
        # any case and spacing
        (f"{RULE}(REJECTED : gate futility)", RULE),
        (f"{RULE}   ( rejected:x)", RULE),
        # never closed (a clipped reply): to the end of its line, the next line stays
        (f"{RULE} (rejected: gate futility (W=0, L=3\n- Second.", f"{RULE}\n- Second."),
        (f"{RULE} (rejected: gate …", RULE),
        # the line head of the blacklist
        (f"[epoch 1, step 2] {RULE}", RULE),
        ("- [Epoch 12 ,step 0]Rule.", "- Rule."),
        # a whole blacklist line copied
        (
            '- [epoch 1, step 3] add in "Rules": - Use YYYYMMDD. (rejected: gate futility '
            "(W=0, L=3))",
            '- add in "Rules": - Use YYYYMMDD.',
        ),
        # nothing of a rule left: empty
        ("(rejected: gate futility (W=0, L=3))", ""),
        ("- (rejected: gate futility)", ""),
        ("[epoch 1, step 2] -", ""),
        # no annotation: unchanged, trailing spaces and all
        (RULE, RULE),
        ("- keep (this) bracket  ", "- keep (this) bracket  "),
        ("- rejected: a word, not an annotation", "- rejected: a word, not an annotation"),
        ("- (see rejected: below)", "- (see rejected: below)"),
        ("[epoch one, step 2] text", "[epoch one, step 2] text"),
        ("", ""),
        ("-", "-"),
        # only the lines that lost an annotation are tidied
        ("  indented  \n- Rule (rejected: x)  ", "  indented  \n- Rule"),
    ],
)
def test_strip_annotations(text: str, expected: str) -> None:
    assert strip_annotations(text) == expected
    assert strip_annotations(expected) == expected  # idempotent


def test_what_format_blacklist_writes_is_stripped_back_to_the_rule() -> None:
    rejected = [
        RejectedEdit("usernames", "add", "Rules", RULE, "gate futility (W=0, L=3)", 1, s)
        for s in range(3)
    ]
    for line in format_blacklist(rejected).splitlines():
        text = line.split(": ", 1)[1]  # what follows `add in "Rules":`
        assert strip_annotations(text) == RULE


def test_strip_edit_annotations_touches_only_the_new_text() -> None:
    annotated = " (rejected: gate futility (W=0, L=3))"
    edit = Edit(
        op="replace",
        section="Rules (rejected: x)",
        old="- old line" + annotated,
        new=RULE + annotated,
        content=RULE + annotated,
        rationale="why" + annotated,
        priority=3,
    )
    out = strip_edit_annotations(edit)
    assert (out.new, out.content) == (RULE, RULE)
    assert (out.old, out.section, out.rationale, out.priority) == (
        edit.old,
        edit.section,
        edit.rationale,
        edit.priority,
    )
    plain = Edit(op="add", section="Rules", content=RULE)
    assert strip_edit_annotations(plain) is plain


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (RULE, "- usernames are TEAM-SURNAME plus the first initial"),
        (RULE, "*   Usernames are team-surname plus\tthe first initial!"),
        (RULE, "Usernames are team-surname plus the first initial. (rejected: gate futility)"),
        ("- Write dates as `YYYYMMDD`.", "Write dates as YYYYMMDD"),
        ('- Answer "in millimetres".', "answer in millimetres"),
        ("1. Round up to the whole euro;", "round up to the whole euro"),
        ("- Sort in reverse — Z to A.", "sort in reverse z to a"),
        ("Straße", "STRASSE"),  # casefold
    ],
)
def test_one_rule_normalises_alike(a: str, b: str) -> None:
    assert normalise_text(a) == normalise_text(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("- Write dates as YYYY-MM-DD.", "- Write dates as YYYY/MM/DD."),
        ("- Usernames are team-surname.", "- Usernames are team surname."),
        ("- Prices have 2.5% tax.", "- Prices have 25% tax."),
        ("- Round up.", "- Round down."),
        ("- Use e.g. this", "- Use eg this"),
        ("- a,b", "- a b"),
    ],
)
def test_different_rules_stay_different(a: str, b: str) -> None:
    assert normalise_text(a) != normalise_text(b)


def test_normalise_text_edges() -> None:
    assert normalise_text("") == ""
    assert normalise_text("  - * `` ''  ") == ""
    assert normalise_text("x-") == "x"
    assert normalise_text("-x") == "x"
    assert normalise_text("a-b") == "a-b"
    assert normalise_text("a - b") == "a b"
    assert normalise_text("3.5") == "3.5"
    assert normalise_text("line one\n\nline two") == "line one line two"


def _add(content: str, **kw: object) -> Edit:
    return Edit(op="add", section="Rules", content=content, **kw)  # type: ignore[arg-type]


BASE = "# Usernames\n\n## Rules\n- Be careful.\n"


def test_candidate_key_is_the_normalised_edit_set_on_its_base() -> None:
    a, b = _add(RULE), _add("- Reply with the name alone.")
    key = candidate_key(BASE, [a, b])
    # order, rationale, priority, case, spacing, bullets and annotations do not count
    same = [
        _add("- reply with the name alone", rationale="other", priority=9),
        _add(RULE.upper() + " (rejected: gate futility (W=0, L=3))"),
    ]
    assert candidate_key(BASE, same) == key
    assert candidate_key(BASE, [a, b, a]) == key
    # anything else does: another base, a missing or extra edit, another op, section or text
    assert candidate_key(BASE + "- More.\n", [a, b]) != key
    assert candidate_key(BASE, [a]) != key
    assert candidate_key(BASE, [a, b, _add("- Third.")]) != key
    assert candidate_key(BASE, [a, Edit(op="delete", section="Rules", old="- Be careful.")]) != key
    assert candidate_key(BASE, [a, Edit(op="add", section="Notes", content=b.content)]) != key
    assert candidate_key(BASE, [a, _add("- Reply with the name alone, in capitals.")]) != key
    assert candidate_key(BASE, []) != key
    assert len(key) == 24 and int(key, 16) >= 0


def test_a_replace_is_keyed_by_what_it_replaces_and_with_what() -> None:
    r = Edit(op="replace", section="Rules", old="- Be careful.", new="- Be quick.")
    assert candidate_key(BASE, [r]) == candidate_key(
        BASE, [Edit(op="REPLACE", section="rules", old="- be careful", new="be quick.")]
    )
    assert candidate_key(BASE, [r]) != candidate_key(BASE, [_add("- Be quick.")])
    assert normalised_edit(r) == ("replace", "rules", "", "be careful", "be quick")
