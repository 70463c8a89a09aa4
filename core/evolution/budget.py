"""Edit budget schedule and skill-file resolution (docs/architecture.md#edit-budget).

Pure functions: the Runner computes `total_steps` from a trial batching and asks, per step, how
many edits the evolver may propose; big edits early, fine-tuning late (or the reverse).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

DEFAULT_SKILL_FILE = "default-strategy.md"


def edit_budget_at(global_step: int, total_steps: int, start: int, end: int) -> int:
    """Linear anneal from `start` (step 0) to `end` (step total_steps-1).

    Exact rational arithmetic and half-up rounding, so the schedule is identical on every
    platform and on resume; clamped so steps outside the run never leave [min, max].
    """
    if total_steps <= 1:
        return start
    value = Fraction(start) + Fraction(end - start) * Fraction(global_step, total_steps - 1)
    rounded = math.floor(value + Fraction(1, 2))
    return max(min(start, end), min(max(start, end), rounded))


def _normalise_name(name: str) -> str:
    """Drop `./` and empty segments so `./math.md` and `math.md` compare equal."""
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def _safe_task_type(task_type: str) -> bool:
    """A task type becomes a file name: refuse anything that could escape the folder."""
    bad = ("/", "\\", "\0")
    return (
        bool(task_type) and not task_type.startswith(".") and not any(b in task_type for b in bad)
    )


def resolve_skill_file(task_type: str, files: Iterable[str]) -> str:
    """The skill file a task type's edits go to: its own file, else the shared default.

    An unsafe task type name (path separators, leading dot) always resolves to the default,
    so a hostile benchmark cannot aim edits at another file.
    """
    candidate = f"{task_type}.md"
    if not _safe_task_type(task_type):
        return DEFAULT_SKILL_FILE
    present = {_normalise_name(f) for f in files if isinstance(f, str)}
    return candidate if candidate in present else DEFAULT_SKILL_FILE
