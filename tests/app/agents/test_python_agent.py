"""`module:function` and `path/to/agent.py:function` agents, and the rollout glue that
completes their results."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import UserError
from app.harness.agents.gateway import Gateway
from app.harness.agents.protocol import AgentTask, FailureKind, ModelEndpoint, SkillsVersion
from app.harness.agents.python_agent import PythonAgent
from app.harness.agents.rollout import run_rollout
from app.harness.workspace.config import build_config, load_config
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


# ------------------------------------------------------------------ path/to/agent.py:function


def write_agent(folder: Path, answer: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "agent.py"
    path.write_text(f"def run(task, skills, endpoint):\n    return {answer!r}\n", encoding="utf-8")
    return path


async def test_a_file_path_names_the_agent_and_two_agent_py_do_not_collide(
    tmp_path: Path,
) -> None:
    one = write_agent(tmp_path / "my-agent", "one")  # a hyphenated folder: no module name
    two = write_agent(tmp_path / "other-agent", "two")
    first = await PythonAgent(f"{one}:run").run(TASK, SKILLS, NOWHERE)
    second = await PythonAgent(f"{two}:run").run(TASK, SKILLS, NOWHERE)
    assert (first.answer, second.answer) == ("one", "two")


def test_a_bad_file_path_is_one_line_naming_the_key_and_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('no framework here')\n", encoding="utf-8")
    agent = write_agent(tmp_path / "a", "x")
    cases = [
        (f"{tmp_path / 'missing.py'}:run", f"no file {tmp_path / 'missing.py'}"),
        (f"{agent}:nope", f"{agent} has no function 'nope'"),
        (f"{broken}:run", f"cannot load {broken} (ImportError: no framework here)"),
    ]
    for target, message in cases:
        with pytest.raises(UserError) as err:
            PythonAgent(target)
        text = str(err.value)
        assert text.startswith(f"agent_function {target!r}") and message in text, text
        assert "\n" not in text


def test_a_relative_agent_file_is_anchored_at_the_config_file_or_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = tmp_path / "conf" / "train.toml"
    config_file.parent.mkdir()
    config_file.write_text(
        '[agent]\nkind = "python"\nfunction = "../agents/agent.py:run"\n', encoding="utf-8"
    )
    assert load_config(config_file).agent_function == f"{tmp_path / 'agents' / 'agent.py'}:run"
    monkeypatch.chdir(tmp_path / "conf")
    given = {"agent_kind": "python", "agent_function": "agent.py:run"}  # --set, or the API
    assert (
        build_config(given, "command line").agent_function == f"{config_file.parent}/agent.py:run"
    )
    for unchanged in (f"{PLUGINS}:good", "/abs/agent.py:run"):
        assert build_config({**given, "agent_function": unchanged}, "x").agent_function == unchanged
