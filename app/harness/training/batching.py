"""An epoch's batches (docs/architecture.md#pools): every wrong unit, a share of right ones, types
spread out."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from app.harness.rollouts.question_units import build_units
from core.types import Question, QuestionUnit


def build_batches(
    pool: Sequence[Question],
    correctness: Mapping[str, bool],
    batch_size: int,
    min_class_per_batch: int,
    seed: int,
    correct_ratio: float,
) -> tuple[list[list[Question]], int]:
    """(batches as flat question lists, number of selected units); deterministic for a seed.

    Batches hold at most `batch_size` units and never split a unit. Units are striped across
    the batches type by type, which maximises the smallest number of task types in any batch,
    so `min_class_per_batch` holds whenever any assignment could satisfy it.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rng = random.Random(seed)
    selected = _select(build_units(pool), correctness, correct_ratio, rng)
    if not selected:
        return [], 0
    n_batches = math.ceil(len(selected) / batch_size)
    slots: list[list[QuestionUnit]] = [[] for _ in range(n_batches)]
    for i, unit in enumerate(_type_blocks(selected, rng)):
        slots[i % n_batches].append(unit)
    return [[q for unit in batch for q in unit.questions] for batch in slots], len(selected)


def _select(
    units: Sequence[QuestionUnit],
    correctness: Mapping[str, bool],
    correct_ratio: float,
    rng: random.Random,
) -> list[QuestionUnit]:
    """Every wrong unit (unknown counts as wrong: it still needs a look) plus a sample of
    right ones, so the evolver also sees what already works and must not break."""
    right = [u for u in units if all(correctness.get(q) is True for q in u.question_ids)]
    right_ids = {u.unit_id for u in right}
    k = min(len(right), max(0, round(correct_ratio * len(right))))
    keep = {u.unit_id for u in rng.sample(right, k)}
    return [u for u in units if u.unit_id not in right_ids or u.unit_id in keep]


def _type_blocks(units: Sequence[QuestionUnit], rng: random.Random) -> list[QuestionUnit]:
    """Units grouped by type, each group shuffled; largest groups first.

    Dealt round-robin over the batches, a type with k units lands in min(k, n_batches)
    distinct batches. Putting the types that fill every batch first makes the smaller types
    follow one another without gaps, so they cover the batches evenly.
    """
    by_type: dict[str, list[QuestionUnit]] = {}
    for unit in units:
        by_type.setdefault(unit.task_type, []).append(unit)
    order = sorted(by_type, key=lambda t: (-len(by_type[t]), t))
    out: list[QuestionUnit] = []
    for task_type in order:
        group = by_type[task_type]
        rng.shuffle(group)
        out.extend(group)
    return out
