"""core/benchmark_checks.py: each defect found on a question built to have it, never on a
sound one; the gate-power bound against the real gate."""

from __future__ import annotations

from typing import Any

import pytest

from core.benchmark_checks import (
    CheckerKind,
    Defect,
    GateFamilies,
    Severity,
    all_won_chance,
    check_duplicates,
    check_edit_power,
    check_family_pools,
    check_gate_power,
    check_question,
    check_questions,
    checker_kind,
    choice_letters,
    families_at_mean_effect,
    families_for_one_rule_edit,
    gate_families_at_effect,
    gate_min_families,
    has_errors,
    min_families_for_accept,
    question_numbers,
)
from core.evolution.gate import GateAction, GateParams, SequentialGate
from core.types import Question


def q(
    answer: str = "Oslo", checker: str = "exact", question: str = "Capital of Norway?", **kw: Any
) -> Question:
    return Question(
        question_id=kw.pop("question_id", "q1"),
        task_type=kw.pop("task_type", "t"),
        question=question,
        answer=answer,
        checker=checker,
        **kw,
    )


def defects(question: Question) -> list[Defect]:
    return [f.defect for f in check_question(question)]


# -- sound questions of every built-in checker raise nothing -------------------------------------
@pytest.mark.parametrize(
    "question",
    [
        q(),
        q("42", "numeric", "What is 6 * 7?", checker_args={"abs_tol": 0.01}),
        q(
            "C",
            "choice",
            "Which queue: A, B, C or D?",
            checker_args={"options": ["A", "B", "C", "D"]},
        ),
        q("PX-5754", "regex", "The price code?", checker_args={"pattern": "PX-?5754"}),
        q("PX-1", "regex", "The code?"),  # no pattern: the answer, escaped
    ],
    ids=["exact", "numeric", "choice", "regex", "regex-from-answer"],
)
def test_sound_questions_have_no_findings(question: Question) -> None:
    assert check_question(question) == []


# -- each per-question defect ------------------------------------------------------------------
def test_reference_rejected_by_its_own_checker() -> None:
    assert defects(q("twelve", "numeric", "What is 6 + 6?")) == [Defect.REFERENCE_REJECTED]
    assert defects(q("Paris", "choice", "Capital of France?")) == [Defect.REFERENCE_REJECTED]
    assert defects(q("PX-1", "regex", "Code?", checker_args={"pattern": "QX-\\d"})) == [
        Defect.REFERENCE_REJECTED
    ]


def test_an_answer_that_normalises_to_nothing_accepts_an_empty_reply() -> None:
    found = check_question(q("...", "exact", "Ellipsis?"))
    assert [f.defect for f in found] == [Defect.EMPTY_ACCEPTED]
    assert found[0].severity is Severity.ERROR and found[0].question_id == "q1"


def test_regex_matching_the_empty_string_is_an_error_and_stops_the_probes() -> None:
    found = check_question(q("yes", "regex", "Agree?", checker_args={"pattern": ".*"}))
    assert [f.defect for f in found] == [Defect.REGEX_MATCHES_EMPTY]
    assert found[0].severity is Severity.ERROR and "'.*'" in found[0].message
    assert defects(q("a", "regex", "x?", checker_args={"pattern": "a?"})) == [
        Defect.REGEX_MATCHES_EMPTY
    ]


def test_invalid_regex_is_an_error() -> None:
    assert defects(q("a", "regex", "x?", checker_args={"pattern": "(a"})) == [Defect.INVALID_REGEX]
    assert defects(q("a", "regex", "x?", checker_args={"pattern": 5})) == [Defect.INVALID_REGEX]


def test_the_choice_checker_refuses_every_option_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    assert defects(q("A", "choice", "Which: A, B, C or D?")) == []

    def first_letter_only(question: Question, prediction: str) -> bool:  # the old, lax reading
        return prediction[:1].upper() == question.answer.strip().upper()

    monkeypatch.setattr("core.benchmark_checks.check", first_letter_only)
    found = check_question(q("A", "choice", "Which: A, B, C or D?"))
    assert [f.defect for f in found] == [Defect.JOINED_CHOICES_ACCEPTED]
    assert found[0].severity is Severity.WARNING
    assert "'A B C D'" in found[0].message
    assert defects(q("B", "choice", "Which: A, B, C or D?")) == []


def test_choice_letters_from_options_text_or_default() -> None:
    assert choice_letters(q("B", "choice", "x", checker_args={"options": ["a", "b"]})) == ("A", "B")
    assert choice_letters(q("A", "choice", "Pick A, B, C, D or E.")) == ("A", "B", "C", "D", "E")
    assert choice_letters(q("A", "choice", "pick one")) == ("A", "B", "C", "D")
    assert choice_letters(q("F", "choice", "pick one")) == ("A", "B", "C", "D", "F")


def test_numbers_of_the_question_accepted_by_numeric() -> None:
    found = check_question(q("9", "numeric", "The largest of 3, 9 and 4?"))
    assert [f.defect for f in found] == [Defect.QUESTION_NUMBER_ACCEPTED]
    assert found[0].severity is Severity.WARNING and "(9)" in found[0].message
    # a wide tolerance makes a neighbour of the answer count too
    wide = q("100", "numeric", "Round 96 to tens?", checker_args={"abs_tol": 5})
    assert defects(wide) == [Defect.QUESTION_NUMBER_ACCEPTED]
    assert defects(q("100", "numeric", "Round 96 to tens?")) == []


def test_question_numbers_skip_names_and_keep_signs_and_decimals() -> None:
    assert question_numbers("Case u000, v2: add -3, 1,200 and 4.5 (and 4.5 again)") == [
        "-3",
        "1200",
        "4.5",
    ]


def test_answer_written_in_the_question() -> None:
    found = check_question(q("Paris", "exact", "Is Paris the capital of France? Name it."))
    assert [f.defect for f in found] == [Defect.ANSWER_IN_QUESTION]
    assert found[0].severity is Severity.WARNING
    assert defects(q("Par", "exact", "Is Paris the capital?")) == []  # whole words only
    assert defects(q("x", "exact", "x marks the spot")) == []  # one character: by chance
    code = q("PX-1", "regex", "Is the code PX-1?", checker_args={"pattern": "PX-?1"})
    assert defects(code) == [Defect.ANSWER_IN_QUESTION]


@pytest.mark.parametrize("checker", ["rubric", "mypkg.checks:grade"])
def test_rubric_and_custom_checkers_are_not_checked_not_failed(checker: str) -> None:
    found = check_question(q("", checker, "Write a polite reply."))
    assert [f.defect for f in found] == [Defect.NOT_CHECKED]
    assert found[0].severity is Severity.NOT_CHECKED
    assert not has_errors(found)


def test_checker_kind() -> None:
    assert checker_kind("numeric") is CheckerKind.BUILTIN
    assert checker_kind("rubric") is CheckerKind.RUBRIC
    assert checker_kind("a.b_c:fn_1") is CheckerKind.CUSTOM
    for bad in ("fuzzy", "a:b:c", "a.:b", ":f", "a:", "1a:f", "a b:f", "a:f()"):
        assert checker_kind(bad) is CheckerKind.UNKNOWN, bad


# -- across questions --------------------------------------------------------------------------
def test_duplicate_questions_across_families() -> None:
    rows = [
        q("48", "numeric", "What is 8 * 6?", question_id="a", family="fa"),
        q("48", "numeric", "what is  8 * 6 ?", question_id="b", family="fb"),
        q("48", "numeric", "What is 8 * 6?", question_id="c", family="fa"),  # same family: fine
        q("48", "numeric", "What is 8*6", question_id="d", family="fd", task_type="other"),
        q("14", "numeric", "What is 8 + 6?", question_id="e", family="fe"),
    ]
    found = check_duplicates(rows)
    assert [(f.defect, f.question_id) for f in found] == [
        (Defect.DUPLICATE_ACROSS_FAMILIES, "b"),
        (Defect.DUPLICATE_ACROSS_FAMILIES, "d"),  # other task types are split apart: it leaks
    ]
    assert "'a'" in found[0].message and found[0].severity is Severity.ERROR
    assert has_errors(check_questions(rows))


def test_families_spanning_pools() -> None:
    rows = [
        q(question_id="a", family="f1"),
        q(question_id="b", family="f1", task_type="u"),
        q(question_id="c", family="f2"),
    ]
    pools = {"a": "diagnosis", "b": "test", "c": "validation"}
    found = check_family_pools(rows, pools)
    assert [(f.defect, f.question_id) for f in found] == [(Defect.FAMILY_SPANS_POOLS, "b")]
    assert "diagnosis, test" in found[0].message
    assert check_family_pools(rows, {**pools, "b": "diagnosis"}) == []


# -- gate power --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("alpha", "k"), [(0.5, 1), (0.25, 2), (0.2, 3), (0.05, 5), (0.01, 7), (0.001, 10)]
)
def test_min_families_for_accept_is_the_smallest_k_with_two_to_minus_k_at_most_alpha(
    alpha: float, k: int
) -> None:
    assert min_families_for_accept(alpha) == k
    assert 2.0**-k <= alpha < 2.0 ** -(k - 1)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 2.0])
def test_min_families_for_accept_refuses_a_level_outside_0_1(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        min_families_for_accept(alpha)


def _real_gate_accepts(k: int, units_per_family: int) -> bool:
    """The real gate, fed k families whose every unit the candidate wins."""
    gate = SequentialGate(GateParams(), horizon=k, singletons=units_per_family == 1)
    for i in range(k):
        pairs = [(f"u{i}-{j}", False, True) for j in range(units_per_family)]
        action = gate.observe_family(f"f{i}", pairs)
        if action is not None:  # it stops once an accept is reached or out of reach
            return action is GateAction.ACCEPT
    return False


@pytest.mark.parametrize(("units", "needed"), [(1, 5), (3, 6)])
def test_gate_min_families_is_what_the_real_default_gate_needs(units: int, needed: int) -> None:
    assert gate_min_families(GateParams(), singletons=units == 1) == needed
    assert not _real_gate_accepts(needed - 1, units)
    assert _real_gate_accepts(needed, units)


def _real_gate_accepts_pattern(k: int, outcomes: list[bool | None]) -> bool:
    """The real gate with horizon k, fed k single-unit families cycling through `outcomes`
    (True: the candidate wins the family, False: it loses it, None: a tie)."""
    gate = SequentialGate(GateParams(), horizon=k, singletons=True)
    for i in range(k):
        won = outcomes[i % len(outcomes)]
        base, cand = (False, True) if won else (True, False) if won is False else (True, True)
        action = gate.observe_family(f"f{i}", [(f"u{i}", base, cand)])
        if action is not None:
            return action is GateAction.ACCEPT
    return False


def test_gate_families_at_effect_is_what_the_real_gate_needs_at_that_effect() -> None:
    params = GateParams()
    # every family won: the all-won minimum
    for singletons in (True, False):
        assert gate_families_at_effect(params, 9, 0, 9, singletons) == gate_min_families(
            params, singletons
        )
    # one family in two won, the other tied: the real gate needs exactly that many
    needed = gate_families_at_effect(params, 1, 0, 2, True)
    assert needed is not None and needed > gate_min_families(params, True)  # type: ignore[operator]
    assert _real_gate_accepts_pattern(needed, [None, True])
    assert not _real_gate_accepts_pattern(needed - 1, [None, True])
    # 5 won and 1 lost of 9 (a gate test report's W and L): far more than the 6 all won
    assert gate_families_at_effect(params, 5, 1, 9, False) == 21
    # (single questions: 18 with the final look, 10 won and 2 lost of 18; 19 without it)
    assert gate_families_at_effect(params, 5, 1, 9, True) == 18
    no_look = GateParams(final_look=False)
    assert gate_families_at_effect(no_look, 5, 1, 9, True) == 19
    # no positive effect: no number of families accepts
    assert gate_families_at_effect(params, 3, 3, 9, True) is None
    assert gate_families_at_effect(params, 0, 0, 0, True) is None


def test_gate_min_families_none_for_other_bets() -> None:
    assert gate_min_families(GateParams(lambda_strategy="fixed"), singletons=True) is None


def test_pools_too_small_fires_below_the_bound_and_below_the_gates_need() -> None:
    per_type = [
        GateFamilies("few", 4, singletons=True),  # 2^-4 > 0.05: no test at all can accept
        GateFamilies("enough", 5, singletons=True),
        GateFamilies("groups", 5, singletons=False),  # the gate needs 6 such families
        GateFamilies("many", 6, singletons=False),
    ]
    found = check_gate_power(per_type)
    assert [(f.defect, f.task_type) for f in found] == [
        (Defect.POOLS_TOO_SMALL, "few"),
        (Defect.POOLS_TOO_SMALL, "groups"),
    ]
    assert all(f.severity is Severity.WARNING for f in found)
    assert "fewer than 5" in found[0].message and "needs 6" in found[1].message
    # 4 single questions all won: accepted only on the final look's coin, 0.8 of the time;
    # 2: not even on the coin (it never accepts on fewer than coin_min_wins = 3 wins)
    assert "only on the gate's coin, with probability 0.80" in found[0].message
    (two,) = check_gate_power([GateFamilies("two", 2, singletons=True)])
    assert "no edit of it can ever be accepted" in two.message
    assert all_won_chance(GateParams(), 3, True) == pytest.approx(0.4, rel=1e-6)
    assert all_won_chance(GateParams(final_look_coin=False), 4, True) == 0.0
    assert all_won_chance(GateParams(), 5, True) == 1.0


def test_pools_too_small_follows_the_level_and_n_max() -> None:
    loose = GateParams(e_confirm=4.0)  # alpha 0.25: 2 families can do
    assert check_gate_power([GateFamilies("t", 2, True)], loose) == []
    capped = GateParams(n_max=3)  # a test never sees more than n_max families
    assert [f.task_type for f in check_gate_power([GateFamilies("t", 50, True)], capped)] == ["t"]


def test_a_one_rule_edit_needs_its_families_in_the_gate_pools() -> None:
    """The gate's own e-process, fed families each won by one fixed unit (d = 1/k): families
    of 3 need 14 (so 13 such families warn and sim-large's 54 do not), single units 5 and
    scored single units 6 (Ville's level)."""
    params = GateParams()
    assert families_for_one_rule_edit([3] * 54, params) == 14
    assert families_for_one_rule_edit([1] * 18, params) == 5
    assert families_for_one_rule_edit([1] * 18, params, singletons=False) == 6
    assert families_for_one_rule_edit([], params) is None
    per_type = [GateFamilies("basic", 13, False), GateFamilies("large", 54, False)]
    sizes = {"basic": [3] * 13, "large": [3] * 54}
    (finding,) = check_edit_power(per_type, sizes, params)
    assert finding.task_type == "basic" and finding.defect is Defect.NO_REALISTIC_EDIT
    assert "no realistic edit can be confirmed" in finding.message
    assert "needs 14 such families" in finding.message and "at most 12" in finding.message
    assert check_edit_power([GateFamilies("t", 15, False)], {"t": [3] * 15}, params) == []
    # a task type whose pools are too small for any edit is named once, by check_gate_power
    assert check_edit_power([GateFamilies("t", 3, True)], {"t": [1] * 3}, params) == []


def test_families_at_mean_effect_is_what_the_real_gate_needs_for_families_of_several_units() -> (
    None
):
    params = GateParams()
    # a one-rule edit on families of 3: d = 1/3, the same 14 the one-rule check finds by
    # running the gate on real 3-unit families
    assert families_at_mean_effect(params, 1 / 3) == families_for_one_rule_edit([3] * 54, params)
    assert families_at_mean_effect(params, 1 / 3) == 14
    assert families_at_mean_effect(params, 1.0) == families_for_one_rule_edit(
        [1] * 18, params, False
    )
    # a weaker effect needs more; none and a negative one can never be confirmed
    assert families_at_mean_effect(params, 0.2) > 14
    assert families_at_mean_effect(params, 0.0) is None
    assert families_at_mean_effect(params, -0.3) is None


def test_a_ladder_with_draws_holds_each_questions_answers_within_its_limits() -> None:
    """`[gate] draws`: n_max counts observations ("every") or questions, the draws riding
    along up to the exact level's longest horizon ("changed"); the evolver's question takes
    its draws with it."""
    every = GateFamilies("t", 30, True, draws=3, n_max_counts_questions=False)
    changed = GateFamilies("t", 300, True, draws=3)
    assert GateFamilies("t", 30, True).observations(200) == 30
    assert GateFamilies("t", 30, True).observations(20, shown=1) == 20
    assert every.observations(200) == 90 and every.observations(60) == 60
    assert every.observations(200, shown=1) == 87
    assert changed.observations(100) == 300 and changed.observations(200) == 400  # the cap
    assert GateFamilies("t", 30, True, draws=3).observations(200, shown=1) == 87


def test_draws_let_few_questions_confirm_an_edit_and_the_warnings_say_so() -> None:
    """Four questions are too few for any test at 5% (2^-4 > 0.05), but four questions with
    three answers each hold twelve observations: no warning. Three questions with two draws
    leave (3 - 1) x 2 = 4 after the evolver's, one short of a one-rule edit's 5."""
    params = GateParams()
    (few,) = check_gate_power([GateFamilies("t", 4, True)], params)
    assert few.defect is Defect.POOLS_TOO_SMALL
    assert check_gate_power([GateFamilies("t", 4, True, draws=3)], params) == []
    assert check_edit_power([GateFamilies("t", 4, True, draws=3)], {"t": [1] * 4}, params) == []
    (short,) = check_edit_power([GateFamilies("t", 3, True, draws=2)], {"t": [1] * 3}, params)
    assert short.defect is Defect.NO_REALISTIC_EDIT
    assert "at most 4 (3 in the gate's pools, 2 answers of each" in short.message
    (tiny,) = check_gate_power([GateFamilies("t", 2, True, draws=2)], params)
    assert "4 answers in the gate's pools (2 questions, 2 draws)" in tiny.message
