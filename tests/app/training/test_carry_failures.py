"""`carry_failures` (app/harness/training/step.py `evolver_pack`), end to end through the CLI on
the simulated world: a task type's evolver is also shown the failures of its earlier packs, so
within one epoch (where no question is batched twice) a later evolve prompt holds failures an
earlier prompt of the same task type held; with the key off, none does."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from app.cli import main
from app.harness.training import screen
from app.providers.sim import evolver

FAILURE_ID = re.compile(r'<failure id="([^"]+)">')
TASK_TYPE = re.compile(r'solves "([\w-]+)" cases')
# the line screen.py adds to a step's second and later proposals, any index and total
ALTERNATIVE = re.compile(
    re.escape(screen.ALTERNATIVE).replace(r"\{index\}", r"\d+").replace(r"\{total\}", r"\d+")
)
SETS = ["--set", "epochs=1", "--set", "batch_size=24", "--set", "concurrency=4"]


def _train(tmp_path: Path, monkeypatch, carry: bool) -> list[tuple[str, list[str]]]:
    """(task type, failure ids) of every evolve-skill prompt, in call order."""
    prompts: list[tuple[str, list[str]]] = []
    real = evolver.evolve_skill

    def recording(world, prompt, shares):  # noqa: ANN001, ANN202 - the simulated evolver's
        found = TASK_TYPE.search(prompt)
        if not ALTERNATIVE.search(prompt):  # a step's other proposals repeat its first pack
            prompts.append((found.group(1) if found else "", FAILURE_ID.findall(prompt)))
        return real(world, prompt, shares)

    monkeypatch.setattr(evolver, "evolve_skill", recording)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    flag = ["--set", f"carry_failures={'true' if carry else 'false'}"]
    assert main(["train", "-w", str(ws), "--no-progress", *SETS, *flag]) == 0
    return prompts


def _repeats(prompts: list[tuple[str, list[str]]]) -> tuple[int, int]:
    """(failures shown again to their own task type's evolver, to another type's)."""
    seen: dict[str, set[str]] = defaultdict(set)
    own = other = 0
    for task_type, ids in prompts:
        for q in ids:
            own += q in seen[task_type]
            other += any(q in s for t, s in seen.items() if t != task_type)
        seen[task_type].update(ids)
    return own, other


@pytest.mark.parametrize("carry", [True, False])
def test_earlier_failures_reach_only_their_own_task_types_evolver(
    tmp_path: Path, monkeypatch, carry: bool
) -> None:
    prompts = _train(tmp_path, monkeypatch, carry)
    own, other = _repeats(prompts)
    assert len(prompts) >= 6
    assert other == 0
    assert (own > 0) == carry, own
