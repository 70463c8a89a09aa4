"""The contamination check (core/evolution/contamination.py)."""

from __future__ import annotations

from core.evolution.contamination import ContaminationKind, HeldOutIndex
from core.types import Question


def _q(qid: str, text: str, answer: str, checker: str = "numeric") -> Question:
    return Question(
        question_id=qid, task_type="ledger", question=text, answer=answer, checker=checker
    )


HELD_OUT = [
    _q(
        "v1",
        "[ledger] Case v1. For client 482 the figures are 12, 40, 7; one entry is marked "
        "VOID. What is the total?",
        "1234",
    ),
    _q(
        "v2",
        "[ledger] Case v2. For client 913 the figures are 5, 6; one entry is marked "
        "REFUND. What is the total?",
        "4",
    ),
    _q(
        "v3",
        "[routing] Case v3. For client 300 one entry is marked SPLIT. Which queue should "
        "it go to: A, B, C or D?",
        "B",
        checker="choice",
    ),
    _q(
        "v4",
        "[tagging] Case v4. For client 301 one entry is marked HOLIDAY. Which tag applies?",
        "urgent",
        checker="exact",
    ),
    _q(
        "v5",
        "[dates] Case v5. For client 302 one entry is marked LEGACY. On which date is it due?",
        "2024-03-05",
        checker="exact",
    ),
]
# Other task types' questions, so that "total" is in 2 of 11 held-out questions (as a task
# type's ask is in a sixth of them in the simulated world) and counts as a word of its question.
HELD_OUT += [
    _q(
        f"u{i}",
        f"[units] Case u{i}. For client {600 + i} one entry is marked BULK. What is the "
        "converted quantity?",
        str(70 + i),
    )
    for i in range(6)
]
SEEN = [
    _q(
        "d1",
        "[ledger] Case d1. For client 777 the figures are 1, 2; one entry is marked "
        "VOID. What is the total?",
        "3",
    ),
]


def index() -> HeldOutIndex:
    return HeldOutIndex.build(HELD_OUT, seen=SEEN)


def test_honest_rules_pass() -> None:
    idx = index()
    for text in (
        "- In ledger cases marked VOID, leave that entry out entirely.",
        "- When the total is 4 or more, round down.",  # a bare short answer
        "- Tag holiday cases urgent unless told otherwise.",  # "urgent" next to no cue of v4
        "- Send SPLIT cases to queue B.",  # a choice answer: the question lists it
        "- one entry is marked VOID. What is the total?",  # template, also in a seen question
    ):
        assert idx.check(text) is None, text


def test_answer_next_to_a_word_of_its_question_is_refused() -> None:
    hit = index().check("- For client 482 the total is 1234.")
    assert hit is not None and hit.kind == ContaminationKind.ANSWER and hit.question_id == "v1"
    hit = index().check("- REFUND totals: 4")  # short answer, next to "refund" of v2
    assert hit is None  # "totals" is not a word of v2, and "refund" is not adjacent
    hit = index().check("- refund 4")
    assert hit is not None and hit.question_id == "v2"
    hit = index().check("- legacy entries fall due 2024-03-05")
    assert hit is not None and hit.question_id == "v5"


def test_numbers_do_not_name_a_question() -> None:
    """A figure recurs across questions by chance: "40, 1234" in a training question's figures
    is not v1's answer 1234 next to v1's figure 40."""
    assert index().check("- For client 555 the figures are 40, 1234 and 9.") is None


def test_a_shared_seven_gram_is_refused_but_a_six_gram_is_not() -> None:
    idx = index()
    hit = idx.check("Remember: for client 913 the figures are 5, 6 exactly.")
    assert hit is not None and hit.kind == ContaminationKind.NGRAM and hit.question_id == "v2"
    assert "913" in hit.evidence and hit.describe().startswith("added text holds a 7-gram")
    assert idx.check("for client 913 the figures are") is None  # six words


def test_normalisation_ignores_case_and_punctuation() -> None:
    hit = index().check("FOR CLIENT 913: THE FIGURES, ARE 5 -- 6!")
    assert hit is not None and hit.question_id == "v2"
