"""Answer checkers (docs/architecture.md#the-data-model): exact, numeric, choice, regex; answer
extraction."""

from __future__ import annotations

import time

import pytest

from core.checkers import MAX_REGEX_INPUT, check, extract_answer, normalise_answer
from core.types import Question


def q(answer: str, checker: str = "exact", **args) -> Question:
    return Question(
        question_id="q",
        task_type="t",
        question="?",
        answer=answer,
        checker=checker,
        checker_args=args,
    )


# ---------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ANSWER: 42", "42"),
        ("Reasoning...\nANSWER:   42  \n", "42"),
        ("answer: first\nmore\nAnswer: second", "second"),  # the last line wins, any case
        ("  ANSWER: with leading space", "with leading space"),
        ("ANSWER:", ""),
        ("The ANSWER: 42 is inline", "42 is inline"),  # anywhere on a line; the rest of it
        ("no answer here", None),
        ("", None),
        ("So the capital IS Bangkok. ANSWER: Bangkok", "Bangkok"),
        ("It is Oslo. answer: Oslo", "Oslo"),  # any case
        ("ANSWER: Paris\nOn reflection, ANSWER: Lyon.", "Lyon."),  # the last marker wins
        ("**ANSWER:** Oslo", "Oslo"),  # markdown bold around the marker
        ("**ANSWER: Oslo**", "Oslo"),
        ("FINAL_ANSWER: 12", "12"),
        ("myanswer: 12", None),  # glued to a word: not a marker
        ("Here is my answer:\nOslo", None),  # nothing after it on its line: the fallbacks' job
        ("ANSWER: Oslo\nThat is my answer:", "Oslo"),  # a bare mid-line marker does not win
        ("I think the answer: is unclear", "is unclear"),  # the documented false positive
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_extract_answer_tolerates_none() -> None:
    assert extract_answer(None) is None  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- exact


@pytest.mark.parametrize(
    "prediction",
    ["Archive", "  archive ", "ARCHIVE.", "`archive`", '"archive"', "'Archive'", "ａｒｃｈｉｖｅ"],
)
def test_exact_normalises_case_space_quotes_and_width(prediction: str) -> None:
    assert check(q("archive"), prediction)


@pytest.mark.parametrize("prediction", ["archives", "arch ive", "archive now", "", "review"])
def test_exact_rejects_other_text(prediction: str) -> None:
    assert not check(q("archive"), prediction)


def test_exact_collapses_inner_whitespace() -> None:
    assert check(q("hold for review"), "Hold\t for\n review")
    assert normalise_answer("  A \n\t B. ") == "a b"


def test_unknown_checker_kind_falls_back_to_exact() -> None:
    assert check(q("Yes", "mystery"), "yes")
    assert not check(q("Yes", "mystery"), "no")


# -------------------------------------------------------------------------------- numeric


@pytest.mark.parametrize(
    "prediction, args, ok",
    [
        ("1234", {}, True),
        ("1,234", {}, True),
        ("1_234", {}, True),
        ("1234.0", {}, True),
        ("1.234e3", {}, True),
        ("+1234", {}, True),
        ("1234.", {}, True),  # a trailing full stop is punctuation
        ("1235", {}, False),  # default tolerance is tiny
        ("1234.4", {"abs_tol": 0.5}, True),
        ("1233.6", {"abs_tol": 0.5}, True),
        ("1234.6", {"abs_tol": 0.5}, False),
        ("1246", {"rel_tol": 0.01}, True),
        ("1247", {"rel_tol": 0.01}, False),
        ("-1234", {"abs_tol": 0.5}, False),
        ("about 1234", {}, False),
        ("1234 USD", {}, False),
        ("nan", {}, False),
        ("inf", {}, False),
        ("", {}, False),
    ],
)
def test_numeric(prediction: str, args: dict, ok: bool) -> None:
    assert check(q("1234", "numeric", **args), prediction) is ok


def test_numeric_with_non_numeric_reference_is_never_right() -> None:
    assert not check(q("n/a", "numeric"), "n/a")


def test_numeric_float_noise_within_default_tolerance() -> None:
    assert check(q("0.3", "numeric"), str(0.1 + 0.2))


# --------------------------------------------------------------------------------- choice


@pytest.mark.parametrize(
    "prediction, ok",
    [
        ("B", True),
        ("b", True),
        ("(B)", True),
        ("B)", True),
        ("B.", True),
        ("B - the billing queue", True),
        ("  b  ", True),
        ("C", False),
        ("A or B", False),
        ("Because", False),
        ("", False),
        ("(", False),
        ("BC", False),
    ],
)
def test_choice(prediction: str, ok: bool) -> None:
    assert check(q("B", "choice", options=["A", "B", "C", "D"]), prediction) is ok


def test_choice_reference_case_and_space_do_not_matter() -> None:
    assert check(q(" b ", "choice"), "B")


# ---------------------------------------------------------------------------------- regex


@pytest.mark.parametrize(
    "prediction, ok",
    [
        ("PX-4821", True),
        ("PX4821", True),
        ("  PX-4821  ", True),
        ("PX-48210", False),
        ("PX-4821 (final)", False),
        ("px-4821", False),
        ("", False),
    ],
)
def test_regex_is_a_full_match(prediction: str, ok: bool) -> None:
    assert check(q("PX-4821", "regex", pattern=r"PX-?4821"), prediction) is ok


def test_regex_without_pattern_matches_the_literal_answer() -> None:
    question = q("a.b*c", "regex")
    assert check(question, "a.b*c")
    assert not check(question, "axbbbc")  # metacharacters are escaped


def test_huge_inputs_do_not_hang() -> None:
    huge = "1" * 1_000_000
    cases = [
        (q("x", "regex", pattern=r"\d+\d+x"), huge, False),  # backtracking quadratic in length
        (q("4202", "numeric", abs_tol=0.5), huge, False),
        (q("4202", "numeric"), "1," * 500_000, False),
        (q("B", "choice"), "b" + " x" * 500_000, True),  # the leading choice letter counts
        (q("archive"), "archive " * 125_000, False),
    ]
    started = time.perf_counter()
    for question, prediction, expected in cases:
        assert check(question, prediction) is expected, question.checker
    assert time.perf_counter() - started < 5.0


def test_regex_never_accepts_a_prediction_that_does_not_match() -> None:
    question = q("1", "regex", pattern=r"\d+")
    wrong = "7" * MAX_REGEX_INPUT + " is not a number"
    assert not check(question, wrong)


@pytest.mark.parametrize(
    "prediction",
    ["A B C D", "a, b, c, d", "A or B", "a/b", "A and B", "A. B. C. D.", "A.B.C.D", "(A) (B)"],
)
def test_choice_a_reply_naming_several_options_is_wrong_even_when_it_starts_right(
    prediction: str,
) -> None:
    assert check(q("A", "choice"), prediction) is False


@pytest.mark.parametrize("prediction", ["A) Paris", "A. I think so", "A - the billing queue", "A:"])
def test_choice_one_option_with_words_after_it_is_still_read(prediction: str) -> None:
    assert check(q("A", "choice"), prediction) is True


def test_choice_only_the_question_options_count_as_a_second_option() -> None:
    assert check(q("A", "choice", options=["A", "B"]), "A C") is True
    assert check(q("A", "choice", options=["A", "B"]), "A B") is False
