"""The gate ladder and the baseline cache (DESIGN §6.6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.harness.gate_ladder import BaselineCache, GatePools
from core.types import Question, QuestionUnit


def unit(uid: str, task_type: str = "a") -> QuestionUnit:
    question = Question(question_id=uid, task_type=task_type, question="?", answer="x")
    return QuestionUnit(unit_id=uid, task_type=task_type, questions=(question,))


def make(seed: int = 1) -> tuple[GatePools, dict[str, bool], set[str]]:
    units = [unit(f"a{i:02d}") for i in range(20)] + [unit(f"b{i}", "b") for i in range(6)]
    test = {"a00", "a01", "a02", "b0"}
    baseline = {f"a{i:02d}": i % 3 == 0 for i in range(18)}  # a18, a19 unknown
    baseline |= {f"b{i}": True for i in range(6)}
    return GatePools.build(units, test, baseline, seed=seed), baseline, test


def test_build_excludes_test_units_and_sets_p_hat() -> None:
    pools, _, test = make()
    assert not test & set(pools.p_hat)
    assert pools.task_types == ("a", "b")
    assert pools.p_hat["a03"] == 1.0 and pools.p_hat["a04"] == 0.0
    assert pools.p_hat["a18"] == 0.5
    assert not pools.observed


@pytest.mark.parametrize("cold", [True, False])
def test_ladder_never_has_test_or_excluded_units(cold: bool) -> None:
    pools, _, test = make()
    pools.update({"a05": True, "a00": False}, gamma=0.5)
    exclude = {"a05", "a07", "a10"}
    ladder = pools.ladder_for("a", exclude, 0.2, 0.8, 0.25, cold=cold)
    assert not (test | exclude) & set(ladder)
    assert sorted(ladder) == sorted(set(pools.units["a"]) - exclude)
    assert "a00" not in pools.p_hat  # a test unit's observation is ignored


def test_cold_order_alternates_wrong_and_right() -> None:
    pools, baseline, _ = make()
    ladder = pools.ladder_for("a", set(), 0.2, 0.8, 0.25)  # not observed yet -> cold
    labels = [baseline.get(u) for u in ladder]
    # 5 right (a03..a15 step 3), 10 wrong, 2 unknown among the 17 gate units of "a".
    assert labels[:6] == [False, True, None] * 2
    assert labels[6:12] == [False, True] * 3
    assert labels[12:] == [False] * 5
    assert ladder == make()[0].ladder_for("a", set(), 0.2, 0.8, 0.25)  # deterministic


def test_cold_order_depends_on_seed() -> None:
    orders = {tuple(make(seed)[0].cold_order["a"]) for seed in range(5)}
    assert len(orders) > 1


def test_unknown_task_type_gives_empty_ladder() -> None:
    pools, _, _ = make()
    assert pools.ladder_for("zzz", set(), 0.2, 0.8, 0.2) == []
    assert pools.ladder_for("zzz", set(), 0.2, 0.8, 0.2, cold=False) == []


def test_ema_update_math() -> None:
    pools, _, _ = make()
    pools.update({}, gamma=0.3)
    assert not pools.observed  # nothing gate-eligible observed
    pools.update({"a03": False, "a04": True, "nope": True}, gamma=0.3)
    assert pools.p_hat["a03"] == pytest.approx(0.7)
    assert pools.p_hat["a04"] == pytest.approx(0.3)
    pools.update({"a03": True}, gamma=0.3)
    assert pools.p_hat["a03"] == pytest.approx(0.7 * 0.7 + 0.3)
    assert pools.observed and pools.updates == 2
    assert "nope" not in pools.p_hat
    with pytest.raises(ValueError):
        pools.update({"a03": True}, gamma=0.0)


def warm_pools() -> GatePools:
    units = [unit(f"u{i}") for i in range(12)]
    pools = GatePools.build(units, set(), {f"u{i}": True for i in range(12)}, seed=3)
    pools.p_hat.update({"u0": 0.5, "u1": 0.625, "u2": 0.375, "u3": 0.3, "u4": 0.75})
    pools.observed = True
    return pools


def test_warm_ladder_puts_informative_units_first_nearest_half() -> None:
    ladder = warm_pools().ladder_for("a", set(), 0.25, 0.75, 0.0)
    assert ladder[:5] == ["u0", "u1", "u2", "u3", "u4"]  # |p-0.5| then unit id on ties
    assert set(ladder[5:]) == {f"u{i}" for i in range(5, 12)} and len(ladder) == 12


def test_probe_quota_interleaves_other_units() -> None:
    pools = warm_pools()
    informative = {"u0", "u1", "u2", "u3", "u4"}
    ladder = pools.ladder_for("a", set(), 0.25, 0.75, 0.25)  # every 4th slot is a probe
    kinds = ["i" if u in informative else "o" for u in ladder]
    assert "".join(kinds) == "iiioiio" + "ooooo"
    assert [u for u in ladder if u in informative] == ["u0", "u1", "u2", "u3", "u4"]
    assert ladder == pools.ladder_for("a", set(), 0.25, 0.75, 0.25)  # deterministic
    assert "".join("i" if u in informative else "o"
                   for u in pools.ladder_for("a", set(), 0.25, 0.75, 1.0)) == "o" * 7 + "i" * 5


def test_probe_order_rotates_between_epochs() -> None:
    pools = warm_pools()
    firsts = set()
    for _ in range(6):
        firsts.add(pools.ladder_for("a", set(), 0.25, 0.75, 0.25)[3])
        pools.update({"u0": True}, gamma=0.01)  # one more epoch observed
    assert len(firsts) > 1


def test_explicit_cold_flag_overrides_state() -> None:
    pools = warm_pools()
    assert pools.ladder_for("a", set(), 0.25, 0.75, 0.0, cold=True) == pools.cold_order["a"]
    fresh, _, _ = make()
    assert fresh.ladder_for("a", set(), 0.0, 1.0, 0.0, cold=False)[:2] == ["a18", "a19"]


def test_gate_pools_save_load_round_trip(tmp_path: Path) -> None:
    pools, _, _ = make()
    pools.update({"a03": False, "a05": True}, gamma=0.4)
    path = tmp_path / "gate_pools.json"
    pools.save(path)
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True,
                              ensure_ascii=False) + "\n"
    loaded = GatePools.load(path)
    assert loaded == pools
    assert loaded.ladder_for("a", {"a04"}, 0.2, 0.8, 0.3) == pools.ladder_for(
        "a", {"a04"}, 0.2, 0.8, 0.3)
    assert GatePools.from_dict(pools.to_dict()) == pools


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
