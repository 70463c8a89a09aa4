"""Family-level, stratified pool split and the trainability filter (docs/architecture.md#pools)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from app.errors import UserError
from app.harness.rollouts.pools import POOL_NAMES, Pools, filter_trainable, split_pools, unit_counts
from core.types import Question

SPLIT = {"diagnosis": 0.5, "validation": 0.3, "test": 0.2}


def q(qid: str, task_type: str = "a", unit: str = "", family: str = "") -> Question:
    return Question(
        question_id=qid, task_type=task_type, question="?", answer="x", unit_id=unit, family=family
    )


def synthetic(
    n_units_per_type: int = 200, types: tuple[str, ...] = ("math", "logic")
) -> list[Question]:
    """Singles, pairs (every 4th unit) and families of 1-3 units, types interleaved."""
    out: list[Question] = []
    for i in range(n_units_per_type):
        for t in types:
            unit, fam = f"{t}-u{i}", f"{t}-f{i // (1 + i % 3)}"
            members = 2 if i % 4 == 0 else 1
            out += [q(f"{unit}-{m}", t, unit, fam) for m in range(members)]
    return out


def pool_of(pools: Pools) -> dict[str, str]:
    return {x.question_id: name for name in POOL_NAMES for x in getattr(pools, name)}


def test_every_question_in_exactly_one_pool_in_benchmark_order() -> None:
    qs = synthetic()
    pools = split_pools(qs, SPLIT, seed=7)
    assert sum(len(getattr(pools, n)) for n in POOL_NAMES) == len(qs)
    assert len(pool_of(pools)) == len(qs)
    position = {x.question_id: i for i, x in enumerate(qs)}
    for name in POOL_NAMES:
        idx = [position[x.question_id] for x in getattr(pools, name)]
        assert idx == sorted(idx)


def test_families_and_pairs_never_straddle_pools() -> None:
    qs = synthetic()
    where = pool_of(split_pools(qs, SPLIT, seed=3))
    by_family, by_unit = defaultdict(set), defaultdict(set)
    for x in qs:
        by_family[x.family].add(where[x.question_id])
        by_unit[x.unit_id].add(where[x.question_id])
    assert all(len(p) == 1 for p in by_family.values())
    assert all(len(p) == 1 for p in by_unit.values())


def test_pair_with_members_in_two_families_stays_together() -> None:
    qs = [q(f"s{i}", family=f"f{i}") for i in range(30)]
    qs += [q("p1", unit="pair", family="fx"), q("p2", unit="pair", family="fy")]
    for seed in range(20):
        where = pool_of(split_pools(qs, SPLIT, seed))
        assert where["p1"] == where["p2"]


def test_ratios_respected_per_task_type_on_400_units() -> None:
    qs = synthetic()
    assert len({x.unit_id for x in qs}) == 400
    for seed in range(5):
        pools = split_pools(qs, SPLIT, seed)
        for t in ("math", "logic"):
            for name, ratio in SPLIT.items():
                got = unit_counts(getattr(pools, name))[t]
                assert abs(got - ratio * 200) <= 3, (seed, t, name, got)


def test_singleton_families_hit_largest_remainder_targets_exactly() -> None:
    qs = [q(f"q{i}") for i in range(10)]  # 5 / 3 / 2
    pools = split_pools(qs, SPLIT, seed=0)
    assert [len(getattr(pools, n)) for n in POOL_NAMES] == [5, 3, 2]


def test_deterministic_and_seed_sensitive() -> None:
    qs = synthetic()
    assert split_pools(qs, SPLIT, 11) == split_pools(qs, SPLIT, 11)
    assert pool_of(split_pools(qs, SPLIT, 11)) != pool_of(split_pools(qs, SPLIT, 12))


def test_task_type_seeding_is_independent_of_other_types() -> None:
    qs = synthetic(types=("math", "logic"))
    only_math = [x for x in qs if x.task_type == "math"]
    a = {k: v for k, v in pool_of(split_pools(qs, SPLIT, 5)).items() if k.startswith("math")}
    assert a == pool_of(split_pools(only_math, SPLIT, 5))


def test_three_families_cover_every_pool_even_with_skewed_ratios() -> None:
    qs = [q(f"q{i}", family=f"f{i}") for i in range(3)]
    for seed in range(10):
        pools = split_pools(qs, {"diagnosis": 0.8, "validation": 0.1, "test": 0.1}, seed)
        assert all(len(getattr(pools, n)) == 1 for n in POOL_NAMES)


def test_big_families_still_leave_no_pool_empty() -> None:
    qs = [q(f"big{i}", family="big") for i in range(20)]
    qs += [q(f"s{i}", family=f"s{i}") for i in range(2)]
    pools = split_pools(qs, SPLIT, seed=1)
    assert all(getattr(pools, n) for n in POOL_NAMES)
    assert len({pool_of(pools)[f"big{i}"] for i in range(20)}) == 1


def test_zero_ratio_pool_stays_empty_and_missing_key_means_zero() -> None:
    qs = [q(f"q{i}") for i in range(20)]
    pools = split_pools(qs, {"diagnosis": 3, "validation": 1}, seed=2)
    assert pools.test == ()
    assert (len(pools.diagnosis), len(pools.validation)) == (15, 5)


@pytest.mark.parametrize(
    "split", [{"train": 1.0}, {"diagnosis": -1, "validation": 2}, {"diagnosis": 0, "validation": 0}]
)
def test_bad_split_is_a_user_error(split: dict[str, float]) -> None:
    with pytest.raises(UserError):
        split_pools([q("a")], split, seed=0)


def pairs(prefix: str, task_type: str, n: int) -> tuple[Question, ...]:
    return tuple(
        q(f"{prefix}{i}-{m}", task_type, f"{prefix}{i}") for i in range(n) for m in range(2)
    )


def singles(prefix: str, task_type: str, n: int) -> tuple[Question, ...]:
    return tuple(q(f"{prefix}{i}", task_type) for i in range(n))


def test_filter_counts_pairs_once() -> None:
    # "pa": 2 validation pairs = 4 questions but 2 units; "sg": 3 single units.
    pools = Pools(
        diagnosis=pairs("pd", "pa", 2) + singles("sd", "sg", 3),
        validation=pairs("pv", "pa", 2) + singles("sv", "sg", 3),
        test=singles("t", "pa", 1),
    )
    kept_pools, kept, dropped = filter_trainable(
        pools, None, eval_min_per_class=3, trainable_min_units=5
    )
    assert kept == ("sg",)
    assert [t for t, _ in dropped] == ["pa"]
    assert "2 validation units < eval_min_per_class=3" in dropped[0][1]
    assert "4 diagnosis+validation units < trainable_min_units=5" in dropped[0][1]
    assert {x.task_type for x in kept_pools.diagnosis + kept_pools.validation} == {"sg"}
    assert kept_pools.test == pools.test  # never filtered


def test_filter_keeps_type_at_exact_thresholds() -> None:
    pools = Pools(diagnosis=pairs("d", "pa", 1), validation=pairs("v", "pa", 2))
    _, kept, dropped = filter_trainable(pools, None, eval_min_per_class=2, trainable_min_units=3)
    assert kept == ("pa",) and dropped == []


def test_filter_restricts_to_requested_types() -> None:
    pools = Pools(
        diagnosis=singles("da", "a", 5) + singles("db", "b", 5),
        validation=singles("va", "a", 5) + singles("vb", "b", 5),
        test=singles("ta", "a", 2) + singles("tb", "b", 2),
    )
    out, kept, dropped = filter_trainable(pools, ["b", "nope"], 1, 1)
    assert kept == ("b",)
    assert dropped == [("nope", "not in the benchmark")]
    assert {x.task_type for x in out.diagnosis + out.validation} == {"b"}
    assert out.test == pools.test


def test_filter_error_names_every_dropped_type_and_reason() -> None:
    pools = Pools(
        diagnosis=singles("da", "alpha", 1),
        validation=singles("vb", "beta", 1),
        test=singles("t", "gamma", 9),
    )
    with pytest.raises(UserError) as err:
        filter_trainable(pools, None, eval_min_per_class=2, trainable_min_units=4)
    msg = str(err.value)
    for name in ("alpha", "beta", "gamma"):
        assert name in msg
    assert "0 validation units < eval_min_per_class=2" in msg
    assert "1 validation units < eval_min_per_class=2" in msg
    assert "trainable_min_units=4" in msg
