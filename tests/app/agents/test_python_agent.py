"""`module:function` agents, and the rollout glue that completes their results."""

from __future__ import annotations

import pytest

from app.errors import UserError
from app.harness.agents.gateway import Gateway
from app.harness.agents.protocol import AgentTask, FailureKind, ModelEndpoint, SkillsVersion
from app.harness.agents.python_agent import PythonAgent
from app.harness.agents.rollout import run_rollout
from tests.app.agents.conftest import with_gateway

PLUGINS = "tests.app.agents.agent_plugins"
TASK = AgentTask("q", "[ledger] Case q. For client 1 the figures are 2, 3. Total?", "ledger")
SKILLS = SkillsVersion("v1", {"ledger.md": "# Ledger\n\nAdd them.\n"})
NOWHERE = ModelEndpoint("http://127.0.0.1:9/v1", "sk-rollout-x", "m")


@with_gateway
async def test_async_function_answers_through_the_gateway(gateway: Gateway) -> None:
    rollout = await run_rollout(
        PythonAgent(f"{PLUGINS}:good"), gateway, TASK, SKILLS, rollout_id="p"
    )
    assert rollout.result.ok and rollout.result.answer
    assert rollout.result.usage.calls == 1
    assert rollout.result.trace.final_answer == rollout.result.answer  # rebuilt from the calls


@with_gateway
async def test_a_reported_trace_is_kept(gateway: Gateway) -> None:
    rollout = await run_rollout(
        PythonAgent(f"{PLUGINS}:with_trace"), gateway, TASK, SKILLS, rollout_id="t"
    )
    assert rollout.result.answer == "7" and rollout.result.trace.native_id == "mine"


@with_gateway
async def test_call_cap_is_the_failure_even_when_the_agent_crashes_on_it(gateway: Gateway) -> None:
    rollout = await run_rollout(
        PythonAgent(f"{PLUGINS}:greedy"), gateway, TASK, SKILLS, rollout_id="g", call_cap=2
    )
    failure = rollout.result.failure
    assert failure is not None and failure.kind == FailureKind.CALL_CAP
    assert "PermissionDeniedError" in failure.detail
    assert rollout.result.usage.calls == 2 and rollout.result.usage.refused == 1


async def test_crash_timeout_and_garbage_are_results() -> None:
    crash = await PythonAgent(f"{PLUGINS}:crashes").run(TASK, SKILLS, NOWHERE)
    assert crash.failure is not None and crash.failure.kind == FailureKind.CRASH
    assert "no luck" in crash.failure.detail and "\x1b" not in crash.failure.detail
    hang = await PythonAgent(f"{PLUGINS}:hangs", timeout_s=0.2).run(TASK, SKILLS, NOWHERE)
    assert hang.failure is not None and hang.failure.kind == FailureKind.TIMEOUT
    junk = await PythonAgent(f"{PLUGINS}:garbage").run(TASK, SKILLS, NOWHERE)
    assert junk.failure is not None and junk.failure.kind == FailureKind.GARBAGE
    late = await PythonAgent(f"{PLUGINS}:hands_back_a_coroutine").run(TASK, SKILLS, NOWHERE)
    assert late.ok and late.answer == "from a coroutine"


@pytest.mark.parametrize("target", ["nomodule", f"{PLUGINS}:missing", f"{PLUGINS}:not_callable"])
def test_bad_targets_are_refused_at_load(target: str) -> None:
    with pytest.raises(UserError):
        PythonAgent(target)
