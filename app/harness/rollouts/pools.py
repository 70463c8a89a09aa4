"""Diagnosis / validation / test pools (docs/architecture.md#pools).

Split hygiene: a family (and therefore every unit in it) lands in exactly one pool, so a
near-duplicate of a training question can never leak into validation or test. Counts are by
unit throughout: a pair counts once.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.errors import UserError
from app.harness.rollouts.question_units import build_units
from core.types import Question

POOL_NAMES = ("diagnosis", "validation", "test")


@dataclass(frozen=True)
class Pools:
    """Each pool keeps benchmark order, so downstream seeded shuffles are reproducible."""

    diagnosis: tuple[Question, ...] = ()
    validation: tuple[Question, ...] = ()
    test: tuple[Question, ...] = ()


def split_pools(questions: Sequence[Question], split: Mapping[str, float], seed: int) -> Pools:
    """Deterministic family-level split, stratified per task type (largest-remainder targets)."""
    ratios = _ratios(split)
    groups = _groups(questions)
    by_type: dict[str, list[int]] = {}
    for gid, members in enumerate(groups):
        by_type.setdefault(members[0].task_type, []).append(gid)
    pool_of_group: dict[int, int] = {}
    for task_type, gids in by_type.items():
        random.Random(f"{seed}:{task_type}").shuffle(gids)
        sizes = [len({q.unit_id for q in groups[g]}) for g in gids]
        pool_of_group.update(zip(gids, _assign(sizes, ratios), strict=True))
    buckets: list[list[Question]] = [[], [], []]
    group_of_question = {id(q): gid for gid, members in enumerate(groups) for q in members}
    for q in questions:
        buckets[pool_of_group[group_of_question[id(q)]]].append(q)
    return Pools(*(tuple(b) for b in buckets))


def _ratios(split: Mapping[str, float]) -> list[float]:
    unknown = sorted(set(split) - set(POOL_NAMES))
    if unknown:
        raise UserError(
            f"split: unknown pool(s) {', '.join(unknown)}; expected {', '.join(POOL_NAMES)}"
        )
    raw = [float(split.get(name, 0.0)) for name in POOL_NAMES]
    if any(not math.isfinite(r) or r < 0 for r in raw) or sum(raw) <= 0:
        raise UserError(f"split: ratios must be finite, >= 0 and not all 0 (got {dict(split)})")
    return [r / sum(raw) for r in raw]


def _groups(questions: Sequence[Question]) -> list[list[Question]]:
    """Questions linked by family or unit, first-appearance order.

    Normally one group per family; the union with unit ids only matters when a pair's members
    carry different families, and it keeps such a pair from straddling two pools.
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for q in questions:
        a, b = find(f"f:{q.family}"), find(f"u:{q.unit_id}")
        if a != b:
            parent[b] = a
    groups: dict[str, list[Question]] = {}
    for q in questions:
        groups.setdefault(find(f"f:{q.family}"), []).append(q)
    return list(groups.values())


def _targets(total: int, ratios: Sequence[float]) -> list[int]:
    """Largest-remainder apportionment of `total` units; ties go to the earlier pool."""
    exact = [r * total for r in ratios]
    out = [math.floor(x) for x in exact]
    order = sorted(range(len(ratios)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def _assign(sizes: Sequence[int], ratios: Sequence[float]) -> list[int]:
    """Pool index per family (sizes in units, already shuffled): greedy fill of the largest
    deficit, biggest families first, then make sure no pool with a share is left empty."""
    targets = _targets(sum(sizes), ratios)
    eligible = [p for p, r in enumerate(ratios) if r > 0]
    load = [0] * len(ratios)
    pool_of = [0] * len(sizes)
    # Stable sort keeps the seeded shuffle among equal sizes; big-first fits ratios tighter.
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        p = max(eligible, key=lambda p: (targets[p] - load[p], -p))
        pool_of[i], load[p] = p, load[p] + sizes[i]
    if len(sizes) >= len(eligible):
        _fill_empty(sizes, pool_of, load, targets, eligible)
    return pool_of


def _fill_empty(
    sizes: Sequence[int],
    pool_of: list[int],
    load: list[int],
    targets: Sequence[int],
    eligible: Sequence[int],
) -> None:
    """Move the smallest family of the most over-target multi-family pool into each empty
    pool: a task type with enough families must be trainable, validatable and testable."""
    for empty in eligible:
        if empty in pool_of:
            continue
        counts = Counter(pool_of)
        donor = max(
            (p for p in eligible if counts[p] >= 2), key=lambda p: (load[p] - targets[p], -p)
        )
        moved = min((i for i, p in enumerate(pool_of) if p == donor), key=lambda i: (sizes[i], -i))
        pool_of[moved] = empty
        load[donor] -= sizes[moved]
        load[empty] += sizes[moved]


def unit_counts(questions: Sequence[Question]) -> Counter[str]:
    """Units per task type (a pair counts once)."""
    return Counter(unit.task_type for unit in build_units(questions))


def hold_out_task_types(
    pools: Pools,
    questions: Sequence[Question],
    task_types: Sequence[str] | None,
    holdout: Sequence[str],
) -> tuple[Pools, tuple[str, ...] | None]:
    """Every question of a `holdout` task type moved to the test pool (benchmark order kept),
    and the task types to train without them: the held-out types are never diagnosed,
    validated, gated or prompt-evolved, only tested. A held-out type the benchmark lacks, or one
    also named in `task_types`, is a UserError naming `holdout_task_types`."""
    if not holdout:
        return pools, None if task_types is None else tuple(task_types)
    held = set(holdout)
    known = {q.task_type for q in questions}
    missing = sorted(held - known)
    if missing:
        raise UserError(
            f"holdout_task_types: no task type {', '.join(missing)} in the benchmark "
            f"(it has {', '.join(sorted(known))})"
        )
    both = sorted(held & set(task_types or ()))
    if both:
        raise UserError(f"holdout_task_types: {', '.join(both)} also in task_types")
    in_test = {id(q) for q in pools.test}
    moved = Pools(
        diagnosis=tuple(q for q in pools.diagnosis if q.task_type not in held),
        validation=tuple(q for q in pools.validation if q.task_type not in held),
        test=tuple(q for q in questions if id(q) in in_test or q.task_type in held),
    )
    wanted = tuple(task_types) if task_types is not None else tuple(sorted(known - held))
    return moved, wanted


def filter_trainable(
    pools: Pools,
    task_types: Sequence[str] | None,
    eval_min_per_class: int,
    trainable_min_units: int,
) -> tuple[Pools, tuple[str, ...], list[tuple[str, str]]]:
    """Keep task types with enough units to train and to validate (§6.1 step 1).

    Returns (pools restricted to the kept types, kept types sorted, [(type, reason)] dropped).
    Types left out of an explicit `task_types` are simply not trained, not reported as dropped.
    The test pool is returned untouched: it never takes part in any tuning decision.
    """
    kept, dropped = trainability(pools, task_types, eval_min_per_class, trainable_min_units)
    if not kept:
        detail = "; ".join(f"{t}: {why}" for t, why in dropped) or "no task types requested"
        raise UserError(
            f"no trainable task type left ({detail}). Lower eval_min_per_class / "
            "trainable_min_units or add questions."
        )
    keep = set(kept)
    return (
        Pools(
            diagnosis=tuple(q for q in pools.diagnosis if q.task_type in keep),
            validation=tuple(q for q in pools.validation if q.task_type in keep),
            test=pools.test,
        ),
        tuple(kept),
        dropped,
    )


def trainability(
    pools: Pools,
    task_types: Sequence[str] | None,
    eval_min_per_class: int,
    trainable_min_units: int,
) -> tuple[list[str], list[tuple[str, str]]]:
    """(task types `filter_trainable` keeps, [(type, reason)] it leaves out), sorted;
    `validate-benchmark` reports the same (app/harness/rollouts/benchmark_validation.py)."""
    val, diag = unit_counts(pools.validation), unit_counts(pools.diagnosis)
    known = set(val) | set(diag) | set(unit_counts(pools.test))
    wanted = sorted(set(task_types)) if task_types is not None else sorted(known)
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for t in wanted:
        reasons = _drop_reasons(
            t, known, val[t], diag[t] + val[t], eval_min_per_class, trainable_min_units
        )
        if reasons:
            dropped.append((t, "; ".join(reasons)))
        else:
            kept.append(t)
    return kept, dropped


def _drop_reasons(
    task_type: str,
    known: set[str],
    n_val: int,
    n_train: int,
    eval_min_per_class: int,
    trainable_min_units: int,
) -> list[str]:
    if task_type not in known:
        return ["not in the benchmark"]
    reasons = []
    if n_val < eval_min_per_class:
        reasons.append(f"{n_val} validation units < eval_min_per_class={eval_min_per_class}")
    if n_train < trainable_min_units:
        reasons.append(
            f"{n_train} diagnosis+validation units < trainable_min_units={trainable_min_units}"
        )
    return reasons
