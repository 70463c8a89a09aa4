"""Gate-only families (`[gate] gate_only_share`, app/harness/training/gate_ladder.py
`GatePools.gate_only_units`): a seeded, outcome-free share of each task type's diagnosis-pool
families that the evolver is never shown, so every gate ladder may keep using them."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.training.gate_ladder import GatePools
from app.harness.workspace.config import RunConfig, build_config
from core.types import Question, QuestionUnit
from tests.app.training.test_train import SMALL, resume_differences, run_cli

# test_train's config on sim-basic (its own runs use sim-large)
SMALL_BASIC = SMALL.replace("sim_units_per_type = 216\n", "")

SHARE = 0.5


def _units(n_diag: int = 20) -> list[QuestionUnit]:
    """Per type a and b: n_diag diagnosis families (d0.. , the even ones two units), 3
    validation families (v0..v2)."""
    out = []
    for t in ("a", "b"):
        for name in [f"d{i}" for i in range(n_diag)] + ["v0", "v1", "v2"]:
            for k in range(2 if name[0] == "d" and int(name[1:]) % 2 == 0 else 1):
                q = Question(
                    question_id=f"{t}-{name}-{k}",
                    task_type=t,
                    question=name,
                    answer="x",
                    family=f"{t}-{name}",
                )
                out.append(QuestionUnit(unit_id=q.unit_id, task_type=t, questions=(q,)))
    return out


def _pools(units: list[QuestionUnit], seed: int) -> GatePools:
    validation = {u.unit_id for u in units if "-v" in u.unit_id}
    return GatePools.build(units, validation, set(), seed=seed)


def _families(pools: GatePools, held: frozenset[str], task_type: str) -> set[str]:
    diag = pools.families[task_type]["diagnosis"]
    assert all(held.issuperset(ids) or held.isdisjoint(ids) for ids in diag.values())
    return {f for f, ids in diag.items() if held.issuperset(ids)}


def test_the_split_is_seeded_by_family_and_takes_the_share_of_each_type() -> None:
    units = _units()
    pools = _pools(units, seed=7)
    held = pools.gate_only_units(SHARE)
    for t in ("a", "b"):
        assert len(_families(pools, held, t)) == 10  # whole families, the share of each type
    assert not any("-v" in u for u in held)  # never a validation family
    shuffled = random.Random(0).sample(units, len(units))
    assert _pools(shuffled, seed=7).gate_only_units(SHARE) == held  # not the benchmark order
    assert _pools(units, seed=8).gate_only_units(SHARE) != held
    assert pools.gate_only_units(0.3) < held  # a larger share keeps a superset
    assert pools.gate_only_units(0.0) == frozenset()


def test_the_split_reads_no_outcome_and_favours_no_family() -> None:
    """The split takes no correctness at all (its only inputs are seed, type, family ids and
    share); over seeds every family is gate-only with probability share: 400 seeded draws,
    each family's count within 4.5 sd of 200 (binomial), and the counts' spread binomial."""
    units = _units()
    counts = dict.fromkeys(_pools(units, 1).families["a"]["diagnosis"], 0)
    n = 400
    for seed in range(n):
        pools = _pools(units, seed)
        for f in _families(pools, pools.gate_only_units(SHARE), "a"):
            counts[f] += 1
    sd = (n * SHARE * (1 - SHARE)) ** 0.5
    assert all(abs(c - n * SHARE) < 4.5 * sd for c in counts.values()), counts
    # exactly 10 of 20 each time, so each count is hypergeometric-like with variance <= n/4
    var = sum((c - n * SHARE) ** 2 for c in counts.values()) / len(counts)
    assert var < 2.5 * sd**2, var


def test_the_share_is_a_gate_setting_below_one() -> None:
    assert RunConfig().gate.gate_only_share == 0.0  # off: chosen on bench/acceptance_large.py
    with pytest.raises(UserError, match=r"t\.toml: .*gate\.gate_only_share"):
        build_config({"gate": {"gate_only_share": 1.0}}, "t.toml")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One small training with half of each type's diagnosis families gate-only."""
    ws = tmp_path_factory.mktemp("gateonly") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    cfg = ws.parent / "small.toml"
    cfg.write_text(SMALL_BASIC.replace("[gate]", f"[gate]\ngate_only_share = {SHARE}"))
    proc = run_cli("train", "-w", str(ws), "--config", str(cfg), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def test_a_gate_only_family_never_reaches_the_evolver_but_feeds_the_gate(trained: Path) -> None:
    held = GatePools.load(trained / "gate_pools.json").gate_only_units(SHARE)
    assert held
    conn = sqlite3.connect(trained / "harness.db")

    def units_of(sql: str) -> set[str]:
        return {r[0] for r in conn.execute(sql).fetchall()}

    kinds = "(SELECT run_id FROM _runs WHERE kind IN ({}))"
    rolled = units_of(
        "SELECT unit_id FROM predictions WHERE run_id IN " + kinds.format("'rollout', 'momentum'")
    )
    diagnosed = units_of(
        "SELECT p.unit_id FROM diagnoses d JOIN predictions p ON p.question_id = d.question_id"
    )
    state = json.loads((trained / "checkpoint.json").read_text())["state"]
    assert rolled and diagnosed and state["shown_units"]
    assert not held & rolled, "a gate-only unit was in a batch or a momentum sample"
    assert not held & diagnosed, "a gate-only unit was diagnosed (so could reach a case pack)"
    assert not held & set(state["shown_units"]), "a gate-only unit was shown to the evolver"
    gated = units_of("SELECT unit_id FROM predictions WHERE run_id IN " + kinds.format("'gate'"))
    assert held & gated, "no gate test used a gate-only family"


@pytest.mark.slow
def test_resume_with_gate_only_families_ends_in_the_reference_state(
    trained: Path, tmp_path: Path
) -> None:
    """The split is recomputed, not checkpointed: a killed and resumed run ends equal."""
    ws = tmp_path / "ws"
    assert resume_differences(trained, trained.parent / "small.toml", ws) == []
    shutil.rmtree(ws)
