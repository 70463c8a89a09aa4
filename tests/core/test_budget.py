"""Edit budget schedule and skill-file resolution (docs/architecture.md#edit-budget)."""

from __future__ import annotations

import pytest

from core.evolution.budget import DEFAULT_SKILL_FILE, edit_budget_at, resolve_skill_file


def test_decreasing_schedule_exact_values() -> None:
    assert [edit_budget_at(s, 5, 8, 2) for s in range(5)] == [8, 7, 5, 4, 2]


def test_increasing_schedule_exact_values() -> None:
    assert [edit_budget_at(s, 5, 2, 8) for s in range(5)] == [2, 4, 5, 7, 8]


def test_endpoints_are_exact() -> None:
    assert edit_budget_at(0, 37, 11, 3) == 11
    assert edit_budget_at(36, 37, 11, 3) == 3


def test_rounds_half_up_in_both_directions() -> None:
    # step 1 of 3 is exactly halfway: 0.5 -> 1 whichever way the schedule runs.
    assert edit_budget_at(1, 3, 0, 1) == 1
    assert edit_budget_at(1, 3, 1, 0) == 1
    # 2.5 -> 3, 3.5 -> 4 (not banker's rounding)
    assert edit_budget_at(1, 3, 2, 3) == 3
    assert edit_budget_at(1, 3, 3, 4) == 4


def test_clamped_outside_the_run() -> None:
    assert edit_budget_at(-5, 10, 6, 2) == 6
    assert edit_budget_at(50, 10, 6, 2) == 2
    assert edit_budget_at(50, 10, 2, 6) == 6
    assert edit_budget_at(-50, 10, 2, 6) == 2


@pytest.mark.parametrize("total", [1, 0, -3])
def test_single_or_no_step_gives_start(total: int) -> None:
    assert edit_budget_at(0, total, 7, 1) == 7
    assert edit_budget_at(99, total, 7, 1) == 7


def test_constant_schedule() -> None:
    assert {edit_budget_at(s, 9, 4, 4) for s in range(9)} == {4}


def test_monotone_and_within_bounds_for_many_runs() -> None:
    for total in range(2, 40):
        values = [edit_budget_at(s, total, 10, 1) for s in range(total)]
        assert values == sorted(values, reverse=True)
        assert all(1 <= v <= 10 for v in values)
        assert values[0] == 10 and values[-1] == 1


def test_resolve_own_file() -> None:
    assert resolve_skill_file("math", ["default-strategy.md", "math.md"]) == "math.md"


def test_resolve_accepts_dot_slash_listing() -> None:
    assert resolve_skill_file("math", ["./math.md"]) == "math.md"


def test_resolve_falls_back_to_default() -> None:
    assert resolve_skill_file("geo", ["math.md", "default-strategy.md"]) == DEFAULT_SKILL_FILE
    assert resolve_skill_file("geo", []) == "default-strategy.md"


def test_resolve_accepts_any_iterable() -> None:
    assert resolve_skill_file("math", (f for f in ["math.md"])) == "math.md"


@pytest.mark.parametrize("task_type", ["../math", "a/math", "a\\math", ".hidden", "", "m\0"])
def test_resolve_refuses_unsafe_task_types(task_type: str) -> None:
    files = [f"{task_type}.md", "../math.md", "a/math.md", "a\\math.md", ".hidden.md"]
    assert resolve_skill_file(task_type, files) == "default-strategy.md"


def test_resolve_is_case_sensitive() -> None:
    assert resolve_skill_file("math", ["Math.md"]) == "default-strategy.md"
