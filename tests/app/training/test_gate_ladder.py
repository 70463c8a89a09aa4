"""The gate ladder (seeded, outcome-blind, one entry per family, two stages) and the
baseline cache."""

from __future__ import annotations

import json
from pathlib import Path

from app.harness.training.gate_ladder import BaselineCache, GatePools, Ladder, evidence_group
from core.types import Question, QuestionUnit


def unit(uid: str, task_type: str = "a", family: str | None = None) -> QuestionUnit:
    question = Question(
        question_id=uid, task_type=task_type, question="?", answer="x", family=family or uid
    )
    return QuestionUnit(unit_id=uid, task_type=task_type, questions=(question,))


def make(seed: int = 1) -> GatePools:
    """Type a: 24 units in families of 3 (a-f0 .. a-f7); f0 is test, f6 and f7 validation.
    Type b: 4 singleton units."""
    units = [unit(f"a{i:02d}", family=f"a-f{i // 3}") for i in range(24)]
    units += [unit(f"b{i}", "b") for i in range(4)]
    test = {"a00", "a01", "a02"}
    validation = {f"a{i:02d}" for i in range(18, 24)} | {"b3"}
    return GatePools.build(units, validation, test, seed=seed)


def test_build_groups_families_by_stage_and_drops_test_units() -> None:
    pools = make()
    assert pools.task_types == ("a", "b")
    a = pools.families["a"]
    assert sorted(a["diagnosis"]) == [f"a-f{i}" for i in range(1, 6)]
    assert sorted(a["validation"]) == ["a-f6", "a-f7"]
    assert a["diagnosis"]["a-f1"] == ["a03", "a04", "a05"]
    assert pools.families["b"]["validation"] == {"b3": ["b3"]}


def test_ladder_is_a_seeded_shuffle_of_whole_families() -> None:
    pools = make()
    ladder = pools.ladder_for("a", set(), key="train1-e1-s0-")
    assert sorted(f for f, _ in ladder.stage1) == [f"a-f{i}" for i in range(1, 6)]
    assert sorted(f for f, _ in ladder.stage2) == ["a-f6", "a-f7"]
    assert all(len(ids) == 3 for _, ids in ladder.families)
    assert ladder == pools.ladder_for("a", set(), key="train1-e1-s0-")  # deterministic
    orders = {
        tuple(f for f, _ in pools.ladder_for("a", set(), key=f"k{k}").stage1) for k in range(12)
    }
    assert len(orders) > 5  # the key (epoch, step) changes the order


def test_ladder_never_looks_at_outcomes() -> None:
    """The order depends on the seed, the task type and the key only: GatePools holds no
    outcome at all, so a unit cannot be put first because the baseline failed it."""
    data = make().to_dict()
    assert set(data) == {"version", "seed", "families"}


def test_pack_units_exclude_their_whole_family() -> None:
    ladder = make().ladder_for("a", {"a04", "a19"}, key="k")
    families = {f for f, _ in ladder.families}
    assert "a-f1" not in families and "a-f6" not in families
    assert "a-f2" in families and "a-f7" in families


def test_stage_two_can_be_held_back_for_a_probation() -> None:
    ladder = make().ladder_for("a", set(), key="k", with_stage2=False)
    assert ladder.stage2 == () and len(ladder.stage1) == 5


def test_unknown_task_type_gives_an_empty_ladder() -> None:
    assert make().ladder_for("zzz", set(), key="k") == Ladder((), ())


def test_truncation_keeps_stage_one_first() -> None:
    ladder = make().ladder_for("a", set(), key="k")
    assert ladder.truncated(3) == Ladder(ladder.stage1[:3], ())
    assert ladder.truncated(6) == Ladder(ladder.stage1, ladder.stage2[:1])
    assert ladder.truncated(100) == ladder


def test_gate_pools_save_load_round_trip(tmp_path: Path) -> None:
    pools = make(seed=3)
    path = tmp_path / "gate_pools.json"
    pools.save(path)
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    loaded = GatePools.load(path)
    assert loaded == pools
    assert loaded.ladder_for("a", {"a04"}, key="x") == pools.ladder_for("a", {"a04"}, key="x")
    assert GatePools.from_dict(pools.to_dict()) == pools
    assert make(seed=4).ladder_for("a", set(), key="x") != pools.ladder_for("a", set(), key="x")


def test_baseline_cache_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "baseline_cache.json"
    cache = BaselineCache.load(path)  # missing file -> empty
    assert len(cache) == 0 and cache.get("v3", "v1", "u1") is None
    cache.put_many("v3", "v1", {"u1": True, "u2": False})
    cache.put_many("v4", "v1", {"u1": False})
    cache.save(path)
    loaded = BaselineCache.load(path)
    assert loaded.get("v3", "v1", "u1") is True
    assert loaded.get("v3", "v1", "u2") is False
    assert loaded.get("v4", "v1", "u1") is False
    assert loaded.get("v4", "v2", "u1") is None
    data = json.loads(path.read_text())
    assert data["entries"] == {"v3|v1|u1": True, "v3|v1|u2": False, "v4|v1|u1": False}
    assert list(data["entries"]) == sorted(data["entries"])


def test_independent_units_are_each_their_own_observation() -> None:
    """A benchmark that declares a family's units independent (`family_units`): the split
    kept families whole, but the gate counts units, and a shown unit leaves only itself out."""
    units = [unit(f"a{i:02d}", family=f"a-f{i // 3}") for i in range(24)]
    assert evidence_group(units[4], False) == "a-f1" and evidence_group(units[4], True) == "a04"
    test = {"a00", "a01", "a02"}
    validation = {f"a{i:02d}" for i in range(18, 24)}
    pools = GatePools.build(units, validation, test, seed=1, independent_units=True)
    a = pools.families["a"]
    assert sorted(a["diagnosis"]) == [f"a{i:02d}" for i in range(3, 18)]
    assert all(ids == [f] for f, ids in a["diagnosis"].items())
    assert pools.group_of("a")["a19"] == "a19"
    ladder = pools.ladder_for("a", {"a04"}, key="k")
    kept = {f for f, _ in ladder.stage1}
    assert "a04" not in kept and {"a03", "a05"} <= kept  # its family-mates stay
    # near-duplicates (the default): the whole family is one observation, left out together
    near = GatePools.build(units, validation, test, seed=1)
    assert near.group_of("a")["a04"] == "a-f1"
    assert "a-f1" not in {f for f, _ in near.ladder_for("a", {"a04"}, key="k").stage1}
