"""A simulated model whose world did not generate the workspace's benchmark is refused at
session start, in one line naming the keys, before any model call or workspace write
(app/providers/factory.py check_sim_worlds); it used to train to 0.0 and spend money."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import api
from app.harness.workspace.config import RunConfig
from app.providers.factory import check_sim_worlds
from app.providers.sim.world import build_world
from core.types import Question


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return api.init_workspace(tmp_path / "ws", seed="sim-starter", questions="sim-basic").root


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"agent_model": "sim/basci"}, "agent_model = 'sim/basci'"),
        ({"judge_model": "sim/basci"}, "judge_model = 'sim/basci'"),
        ({"sim_world_seed": -5}, "sim_world_seed = -5"),
        ({"sim_units_per_type": 1}, "sim_units_per_type = 1"),
    ],
)
def test_a_world_that_does_not_know_the_benchmark_is_refused_before_any_call(
    ws: Path, overrides: dict[str, object], named: str
) -> None:
    with pytest.raises(api.UserError) as refused:
        api.train(ws, overrides={"epochs": 1} | overrides)
    message = str(refused.value)
    assert named in message and "sim/basic" in message and "\n" not in message
    assert not (ws / "checkpoint.json").exists()  # nothing written: train starts afresh
    assert api.train(ws, overrides={"epochs": 1, "task_types": ["ledger"]}).status == "done"


def _questions(world_name: str, seed: int, units: int) -> list[Question]:
    world = build_world(world_name, seed, units)
    return [
        Question(s.question_id, s.task_type, s.question, s.answer) for s in world.cases.values()
    ]


def test_another_world_is_fine_with_the_benchmark_generated_from_it() -> None:
    """`python -m app.providers.sim.generate --world other --seed 3` makes a valid pair."""
    other = RunConfig(
        agent_model="sim/other",
        evolver_model="sim/other",
        judge_model="sim/other",
        sim_world_seed=3,
        sim_units_per_type=4,
    )
    check_sim_worlds(other, _questions("other", 3, 4), "generated")  # no error
    with pytest.raises(api.UserError, match="knows 0 of"):
        check_sim_worlds(RunConfig(), _questions("other", 3, 4), "generated")
