"""The simulated agent's re-draw share (`sim_noise_share`): a world setting, not a constant.

A re-drawn answer is right with the same probability as the one it replaces, so the share moves
no accuracy; it sets how often two requests for the same question (a candidate's and a
baseline's) disagree by chance, which is the noise a gate has to see through
(app/providers/sim/provider.py). The expected rates below are exact for the sim's draws; the
bands are four binomial standard deviations over the questions used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import anyio
import pytest

from app.errors import UserError
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.workspace.config import RunConfig, build_config
from app.harness.workspace.store import benchmark_dir, load_benchmark, load_seed, seed_dir
from app.harness.workspace.workspace import init_workspace
from app.paths import builtin_store
from app.providers.factory import sim_settings
from app.providers.sim.agent import p_correct, read_view
from app.providers.sim.evolver import USELESS_LINES
from app.providers.sim.provider import NOISE_SHARE, SimProvider, SimSettings
from app.providers.sim.world import build_world
from core.evolution.budget import resolve_skill_file
from core.evolution.edits import Edit, apply_edits
from core.types import Question

WORLD = build_world()


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[AgentPrompts, AgentPrompts, list[Question]]:
    """(starter prompts, the same with a useless line in every skill, the questions the agent
    answers in one turn: inline mode, no context to read)."""
    ws = init_workspace(
        tmp_path_factory.mktemp("noise") / "ws",
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )
    starter = AgentPrompts.load(ws.skills_dir, ws.prompts_dir, "inline")
    skills = dict(starter.skills)
    for task_type in {q.task_type for q in load_benchmark(ws.questions_dir).questions}:
        target = resolve_skill_file(task_type, skills)
        text, reports = apply_edits(
            skills[target], [Edit("add", "Rules", content=USELESS_LINES[0])], target
        )
        assert reports[0].applied
        skills[target] = text
    useless = dataclasses.replace(starter, skills=skills, skills_version="useless")
    one_turn = [q for q in load_benchmark(ws.questions_dir).questions if not q.context]
    return starter, useless, one_turn


def correct(provider: SimProvider, prompts: AgentPrompts, qs: Sequence[Question]) -> list[bool]:
    """Whether each reply is the world's answer (the sim's own table, not the checker)."""

    async def all_of() -> list[bool]:
        out = []
        for q in qs:
            reply = await provider.complete(prompts.opening_messages(q))
            assert not reply.tool_calls  # one turn: this request's draw decides the answer
            case = WORLD.case_for_text(q.question)
            assert case is not None
            out.append(reply.text.rsplit("ANSWER: ", 1)[-1] == case.answer)
        return out

    return anyio.run(all_of)


def p_of(prompts: AgentPrompts, q: Question) -> float:
    case = WORLD.case_for_text(q.question)
    assert case is not None
    return p_correct(WORLD, read_view(prompts.opening_messages(q), None), case)


def discord_probability(p1: float, p2: float, s: float) -> float:
    """P(two requests disagree): both share one draw u unless re-drawn (each with prob s)."""
    both_independent = p1 * (1 - p2) + p2 * (1 - p1)
    return (1 - s) ** 2 * abs(p1 - p2) + (1 - (1 - s) ** 2) * both_independent


def within(observed: float, probs: Sequence[float], sds: float = 4.0) -> bool:
    n = len(probs)
    sd = math.sqrt(sum(p * (1 - p) for p in probs)) / n
    return abs(observed - sum(probs) / n) <= sds * sd


def test_config_key_reaches_the_sim_and_defaults_to_the_constant() -> None:
    assert RunConfig().sim_noise_share == NOISE_SHARE == SimSettings().noise_share
    assert sim_settings(RunConfig()).noise_share == NOISE_SHARE
    noisy = build_config({"sim": {"noise_share": 0.3}}, "test")  # `[sim] noise_share` in TOML
    assert sim_settings(noisy).noise_share == 0.3


@pytest.mark.parametrize("value, says", [(1.5, "<= 1"), (-0.1, ">= 0"), ("0.3", "a number")])
def test_config_key_out_of_range_is_refused_by_name(value: object, says: str) -> None:
    with pytest.raises(UserError, match=f"key 'sim_noise_share' must be {says}"):
        build_config({"sim_noise_share": value}, "test")


def test_sim_settings_refuse_a_share_outside_0_1() -> None:
    with pytest.raises(ValueError, match="noise_share"):
        SimSettings(noise_share=1.01)


def test_default_share_answers_exactly_as_before(setup) -> None:
    """The default is the constant the sim always used: not one answer changes."""
    starter, _, qs = setup
    implicit = correct(SimProvider(), starter, qs)
    explicit = correct(SimProvider(settings=SimSettings(noise_share=0.03)), starter, qs)
    assert implicit == explicit


@pytest.mark.parametrize("share", [0.03, 0.3, 1.0])
def test_share_sets_discordance_not_accuracy(setup, share: float) -> None:
    starter, useless, qs = setup
    sim = SimProvider(settings=SimSettings(noise_share=share))
    before, after = correct(sim, starter, qs), correct(sim, useless, qs)
    p_before = [p_of(starter, q) for q in qs]
    p_after = [p_of(useless, q) for q in qs]
    assert within(sum(before) / len(qs), p_before)
    assert within(sum(after) / len(qs), p_after)
    discord = sum(b != a for b, a in zip(before, after, strict=True)) / len(qs)
    expected = [discord_probability(p, r, share) for p, r in zip(p_before, p_after, strict=True)]
    assert within(discord, expected), (discord, sum(expected) / len(qs))


def test_a_higher_share_disagrees_more(setup) -> None:
    starter, useless, qs = setup

    def discordance(share: float) -> float:
        sim = SimProvider(settings=SimSettings(noise_share=share))
        pairs = zip(correct(sim, starter, qs), correct(sim, useless, qs), strict=True)
        return sum(b != a for b, a in pairs) / len(qs)

    assert discordance(0.3) >= discordance(0.03) + 0.1
