"""Gate validation over several task types at once (docs/architecture.md#a-step, step 4).

The outcome must not depend on which model call finishes first: decisions and evidence are
compared across runs with random latency, jitter and different concurrency.
"""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from app.errors import RunFailed
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings
from app.harness.rollouts.question_units import build_units
from app.harness.training.gate_ladder import BaselineCache, Ladder
from app.harness.training.validate import (
    GateSpec,
    ValidationOutcome,
    Validator,
    quadrants,
    with_skill,
)
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.store import benchmark_dir, load_benchmark, load_seed, seed_dir
from app.harness.workspace.workspace import WorkspacePaths, init_workspace
from app.paths import builtin_store
from app.providers.errors import TransientError
from app.providers.sim.provider import SimProvider, SimSettings
from app.providers.sim.world import build_world
from core.evolution.acceptance import GATE_CHUNK, chunks
from core.evolution.budget import resolve_skill_file
from core.evolution.edits import Edit, apply_edits
from core.evolution.gate import AcceptanceStrategy, GateParams
from core.types import QuestionUnit
from tests.fakes.scripted import ScriptedProvider

WORLD = build_world()


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> WorkspacePaths:
    return init_workspace(
        tmp_path_factory.mktemp("validate") / "ws",
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )


@pytest.fixture(scope="module")
def base(ws: WorkspacePaths) -> AgentPrompts:
    return AgentPrompts.load(ws.skills_dir, ws.prompts_dir, "inline")


@pytest.fixture(scope="module")
def units(ws: WorkspacePaths) -> dict[str, QuestionUnit]:
    return {u.unit_id: u for u in build_units(load_benchmark(ws.questions_dir).questions)}


def candidate(base: AgentPrompts, task_type: str, lines: list[str]) -> tuple[str, AgentPrompts]:
    target = resolve_skill_file(task_type, base.skills)
    text, reports = apply_edits(
        base.skills[target], [Edit("add", "Rules", content="\n".join(lines))], target
    )
    assert reports[0].applied
    return target, with_skill(base, target, text)


def specs_for(base: AgentPrompts, units: dict[str, QuestionUnit]) -> list[GateSpec]:
    """ledger, dates: the true rules; routing: decoys; units: a useless line; pricing: no-op
    candidate; each walks its own task type's units (shuffled, fixed order) as the ladder."""
    plan = {
        "ledger": "true",
        "dates": "true",
        "routing": "decoy",
        "units": "useless",
        "pricing": "true",
    }
    specs = []
    for task_type, kind in plan.items():
        rules = WORLD.rules_for(task_type)
        lines = {
            "true": [f"- {r.statement}" for r in rules],
            "decoy": [f"- {r.decoy}" for r in rules],
            "useless": ["- Stay calm and methodical."],
        }[kind]
        target, cand = candidate(base, task_type, lines)
        families: dict[str, list[str]] = {}
        for u, unit in units.items():
            if unit.task_type == task_type:
                families.setdefault(unit.questions[0].family, []).append(u)
        ladder = [(f, tuple(ids)) for f, ids in families.items()]
        random.Random(task_type).shuffle(ladder)
        specs.append(
            GateSpec(
                task_type=task_type,
                target_file=target,
                candidate=cand,
                ladder=Ladder(tuple(ladder[:60]), ()),
                gate_run_id=f"gate-{task_type}",
            )
        )
    return specs


def random_delay(inner, rng: random.Random, max_s: float = 0.002) -> ScriptedProvider:
    """Adds a random delay before each call so completion order is scrambled."""
    return ScriptedProvider(
        respond=lambda request: request.forward_to(inner),
        delay=lambda request: rng.uniform(0, max_s),
    )


def validate(
    tmp: Path,
    base,
    units,
    specs,
    *,
    provider,
    concurrency: int,
    params: GateParams | None = None,
    guard_err: float = 0.1,
) -> tuple[dict[str, ValidationOutcome], HarnessLog]:
    log = HarnessLog(tmp / f"h-{random.random():.9f}.db")
    validator = Validator(
        provider=provider,
        base_prompts=base,
        units=units,
        log=log,
        settings=AgentSettings(concurrency=concurrency),
        params=params or GateParams(),
        baseline_cache=BaselineCache(),
        guard_err=guard_err,
    )
    return anyio.run(validator.validate, specs, "gatebase"), log


def test_outcomes_do_not_depend_on_completion_order(tmp_path: Path, base, units) -> None:
    specs = specs_for(base, units)
    runs = []
    for concurrency, seed, order in ((16, 1, specs), (3, 2, specs[::-1])):
        sim = SimProvider(settings=SimSettings(latency_ms=2, jitter_ms=2))
        provider = random_delay(sim, random.Random(seed))
        outcomes, log = validate(
            tmp_path, base, units, order, provider=provider, concurrency=concurrency
        )
        rows = log.query(
            "SELECT run_id, question_id, correct, prediction FROM predictions "
            "ORDER BY run_id, question_id"
        )
        log.close()
        runs.append((outcomes, rows))
    first, first_rows = runs[0]
    assert list(first) == sorted(s.task_type for s in specs)
    for outcomes, rows in runs[1:]:
        assert outcomes == first  # decisions, evidence (in ladder order), e-values, quadrants
        assert rows == first_rows  # the same units were evaluated, with the same answers


def test_true_rules_accept_decoys_and_no_ops_reject(tmp_path: Path, base, units) -> None:
    specs = {s.task_type: s for s in specs_for(base, units)}
    outcomes, log = validate(
        tmp_path, base, units, list(specs.values()), provider=SimProvider(), concurrency=8
    )
    log.close()
    for task_type in ("ledger", "dates", "pricing"):
        d = outcomes[task_type].decision
        assert d.action == "accept", (task_type, d)
        assert d.W >= 5 and d.L <= 1  # families won
        assert outcomes[task_type].cand_acc > outcomes[task_type].base_acc + 0.3
    routing = outcomes["routing"].decision
    assert routing.action == "reject" and routing.L > routing.W
    assert outcomes["units"].decision.action == "reject"
    for task_type, outcome in outcomes.items():
        spec = specs[task_type]
        d = outcome.decision
        # Evidence follows the ladder exactly, a prefix of its families, one row per unit.
        used = [u for _, ids in spec.ladder.families[: d.n_used] for u in ids]
        assert [row.unit_id for row in d.evidence] == used
        assert list(outcome.candidate_correctness) == used
        by_family = {r.family: r.outcome for r in d.evidence}
        assert list(by_family) == [f for f, _ in spec.ladder.families[: d.n_used]]
        seen = list(by_family.values())
        assert (seen.count("W"), seen.count("L")) == (d.W, d.L)
        assert outcome.quadrants == quadrants(
            outcome.baseline_correctness, outcome.candidate_correctness
        )
        members = {q for u in outcome.candidate_correctness for q in units[u].question_ids}
        assert members <= set(outcome.candidate_questions)
        for u, right in outcome.candidate_correctness.items():
            assert right == all(outcome.candidate_questions[q] for q in units[u].question_ids)


def test_stopped_gates_evaluate_whole_chunks_only(tmp_path: Path, base, units) -> None:
    specs = [s for s in specs_for(base, units) if s.task_type == "ledger"]
    outcomes, log = validate(tmp_path, base, units, specs, provider=SimProvider(), concurrency=3)
    d = outcomes["ledger"].decision
    assert d.ended_by == "threshold"
    evaluated = {
        r["question_id"]
        for r in log.query("SELECT question_id FROM predictions WHERE run_id = 'gate-ledger'")
    }
    # Whole chunks of at least GATE_CHUNK units: the chunk holding the last family used.
    groups = chunks(specs[0].ladder.families)
    sizes = [len(c) for c in groups]
    needed = next(i for i in range(len(groups)) if sum(sizes[: i + 1]) >= d.n_used) + 1
    expected = {
        q for c in groups[:needed] for _, ids in c for u in ids for q in units[u].question_ids
    }
    assert evaluated == expected
    assert all(sum(len(ids) for _, ids in c) >= GATE_CHUNK for c in groups[:-1])
    baseline = {
        r["question_id"]
        for r in log.query("SELECT question_id FROM predictions WHERE run_id = 'gatebase'")
    }
    assert baseline == expected  # the baseline runs lazily, chunk by chunk
    log.close()


def failing_for(inner, marker: str) -> ScriptedProvider:
    """Raises a transient error for every candidate call of one task type."""
    return ScriptedProvider(
        respond=lambda request: (
            TransientError("simulated outage")
            if marker in request.messages[0]["content"]
            else request.forward_to(inner)
        )
    )


def test_provider_outage_during_the_gate_raises_run_failed(tmp_path: Path, base, units) -> None:
    specs = [s for s in specs_for(base, units) if s.task_type == "ledger"]
    marker = WORLD.rules_for("ledger")[0].statement  # only the candidate's prompt has it
    with pytest.raises(BaseException) as info:
        validate(
            tmp_path, base, units, specs, provider=failing_for(SimProvider(), marker), concurrency=4
        )
    error = info.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, RunFailed) and "gate-ledger" in str(error)


@pytest.mark.parametrize("strategy", ["mcnemar", "minibatch", "accept_all"])
def test_comparison_strategies_go_through_the_same_path(
    tmp_path: Path, base, units, strategy: str
) -> None:
    from dataclasses import replace

    from core.stats import mcnemar_exact

    specs = [replace(s, strategy=strategy, minibatch_k=3) for s in specs_for(base, units)]
    outcomes, log = validate(tmp_path, base, units, specs, provider=SimProvider(), concurrency=8)
    evaluated = {r["run_id"] for r in log.query("SELECT DISTINCT run_id FROM predictions")}
    log.close()
    for spec in specs:
        d = outcomes[spec.task_type].decision
        assert d.strategy == strategy
        if strategy == "accept_all":
            assert d.action == "accept" and d.evidence == () and d.n_used == 0
        elif strategy == "minibatch":
            families = [f for f, _ in spec.ladder.families[:3]]
            assert [r.family for r in d.evidence] == families
            members = dict(spec.ladder.families)
            assert all(r.unit_id in members[r.family] for r in d.evidence)
            right_c = sum(bool(r.cand) for r in d.evidence)
            right_b = sum(bool(r.base) for r in d.evidence)
            assert d.accepted == (right_c > right_b)
        else:  # the whole ladder, then a one-sided exact McNemar on family outcomes
            assert d.n_used == len(spec.ladder.families)
            assert d.accepted == (mcnemar_exact(d.W, d.L, "greater") <= 0.05)
    if strategy == "accept_all":
        assert evaluated == set()  # nothing was run
    else:
        assert outcomes["routing"].decision.action == "reject"  # decoys
        assert outcomes["ledger"].decision.W >= outcomes["ledger"].decision.L


def test_config_strategies_are_the_acceptance_rules() -> None:
    """`[gate] strategy` accepts exactly the strategies that have a rule."""
    from typing import get_args

    from app.harness.workspace.config import GateStrategy
    from core.evolution.acceptance import RULES

    assert get_args(GateStrategy) == tuple(AcceptanceStrategy) == tuple(RULES)
