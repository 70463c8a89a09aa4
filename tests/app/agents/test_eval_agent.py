"""`eval --agent` (`api.evaluate(agent=...)`): any skills version under any agent, for that one
eval, so a user sees whether skills trained with one agent transfer to another. The result,
the report in analyses/ and the printed result name the agent that ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app import api
from app.api import AgentChoice
from app.cli import main
from app.errors import UserError
from tests.app.agents.test_train_external import SMALL, rows, small_workspace

READS_SKILLS = "tests.app.agents.agent_plugins:reads_skills"


@pytest.fixture(scope="module")
def builtin_trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 24-unit world trained one epoch with the built-in loop (about 2 s)."""
    ws = small_workspace(tmp_path_factory.mktemp("eval-agent"))
    result = api.train(ws, overrides=SMALL)
    assert result.status == "done" and result.best_skills_version != "v1", result
    return ws, result.best_skills_version


@pytest.fixture
def ws(builtin_trained: tuple[Path, str], tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(builtin_trained[0], target)
    return target


def verdicts(ws: Path, run_id: str) -> list[dict[str, Any]]:
    found = rows(ws, "SELECT steps_json FROM predictions WHERE run_id = ?", run_id)
    return [json.loads(s)[-1] for (s,) in found]


# ------------------------------------------------------------------ the spec


def test_agent_specs_parse_and_write_back() -> None:
    cases = {
        "builtin": AgentChoice("builtin"),
        f"python:{READS_SKILLS}": AgentChoice("python", function=READS_SKILLS),
        READS_SKILLS: AgentChoice("python", function=READS_SKILLS),
        "command:python 'my agent.py' --fast": AgentChoice(
            "command", command=("python", "my agent.py", "--fast")
        ),
        "command:/bin/my-agent": AgentChoice("command", command=("/bin/my-agent",)),
        # a file, as agent_function takes it (the framework examples are files, not modules)
        "python:examples/agents/langgraph/agent.py:run": AgentChoice(
            "python", function="examples/agents/langgraph/agent.py:run"
        ),
        "my_agent.py:run": AgentChoice("python", function="my_agent.py:run"),
    }
    for spec, choice in cases.items():
        assert AgentChoice.parse(spec) == choice, spec
        assert AgentChoice.parse(choice.spec) == choice  # the recorded spelling parses back
    assert AgentChoice.parse("command:python 'my agent.py'").spec == "command:python 'my agent.py'"
    assert AgentChoice.parse("python:pkg.mod:fn").overrides() == {
        "agent_kind": "python",
        "agent_function": "pkg.mod:fn",
        "agent_command": [],
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "expected builtin, python:MODULE:FUNCTION"),
        ("builtin:x", "expected builtin"),
        ("sh:ls -la", "expected builtin"),
        ("python:", "expected builtin"),
        ("python:mod", "expected builtin"),
        ("python:mod:fn:extra", "expected builtin"),
        ("my-mod:fn", "expected builtin"),
        ("python:dir/agent.txt:run", "expected builtin"),
        ("python:agent.py:not-a-name", "expected builtin"),
        ("command:", "no command after 'command:'"),
        ("command:   ", "no command after 'command:'"),
        ("command:python 'agent.py", "No closing quotation"),
    ],
)
def test_a_bad_spec_is_one_line(spec: str, message: str) -> None:
    with pytest.raises(api.UserError) as err:
        AgentChoice.parse(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_bad_spec_is_refused_by_the_command_and_the_api(
    builtin_trained: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, version = builtin_trained
    assert main(["eval", version, "-w", str(ws), "--no-progress", "--agent", "sh:ls -la"]) == 2
    assert main(["eval", version, "-w", str(ws), "--agent", "python:no_such_mod:f"]) == 2
    with pytest.raises(api.UserError, match="cannot import no_such_mod"):
        api.evaluate(ws, version, agent="python:no_such_mod:f")
    with pytest.raises(api.UserError, match="agent: expected"):
        AgentChoice("python", function="no colon")
    with pytest.raises(api.UserError, match="agent: expected builtin"):
        api.evaluate(ws, version, agent=42)  # type: ignore[arg-type]
    assert not list((ws / "analyses").glob("eval_*.json"))  # nothing ran


# ------------------------------------------------------------------ transfer


def test_eval_agent_runs_builtin_trained_skills_under_a_python_agent(
    ws: Path, builtin_trained: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    version = builtin_trained[1]
    spec = f"python:{READS_SKILLS}"
    assert main(["eval", version, "-w", str(ws), "--no-progress", "--agent", spec]) == 0
    printed = capsys.readouterr().out
    assert f"  agent: {spec}" in printed
    (report_path,) = (ws / "analyses").glob("eval_*.json")
    report = json.loads(report_path.read_text())
    assert report["agent"] == spec and report["skills_version"] == version
    run_id = report["run_id"]
    # every rollout was the outside agent's: its verdict step's record, one model call each,
    # logged under the eval run
    found = verdicts(ws, run_id)
    assert len(found) == sum(report["stop_reason_counts"].values()) > 0
    assert all(v["agent"]["calls"] == 1 and v["agent"]["failure"] is None for v in found)
    (calls,) = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = ?", run_id)[0]
    assert calls == len(found)
    (config,) = rows(ws, "SELECT config_json FROM _runs WHERE run_id = ?", run_id)[0]
    assert json.loads(config)["agent_kind"] == "python"

    # for that eval only: the next eval runs the workspace's own agent, the built-in loop
    assert main(["eval", version, "-w", str(ws), "--no-progress", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["agent"] == "builtin"
    assert all("agent" not in v for v in verdicts(ws, after["run_id"]))


def test_the_api_records_the_agent_and_the_trained_skills_transfer(
    ws: Path, builtin_trained: tuple[Path, str]
) -> None:
    version = builtin_trained[1]
    agent = AgentChoice("python", function=READS_SKILLS)
    before = api.evaluate(ws, "v1", agent=agent)
    after = api.evaluate(ws, version, agent=agent)
    assert before.agent == after.agent == f"python:{READS_SKILLS}"
    # the rules the built-in loop's training wrote reach the python agent, which reads them
    assert after.accuracy > before.accuracy + 0.15, (before.accuracy, after.accuracy)
    # `agent` wins over overrides, whichever agent they name
    python = {"agent_kind": "python", "agent_function": READS_SKILLS}
    back = api.evaluate(ws, "v1", overrides=python, agent="builtin")
    assert back.agent == "builtin"
    assert all("agent" not in v for v in verdicts(ws, back.run_id))


@pytest.mark.slow  # about 10-15 s: a sandboxed process per rollout, 176 rollouts
def test_eval_agent_runs_a_command(ws: Path, builtin_trained: tuple[Path, str]) -> None:
    spec = "command:sh -c 'echo \"ANSWER: 42\"'"
    result = api.evaluate(ws, builtin_trained[1], agent=spec)
    assert result.agent == spec
    assert result.stop_reason_counts == {"final": 176}
    found = verdicts(ws, result.run_id)
    assert {v["agent"]["exit_code"] for v in found} == {0}
    assert {v["prediction"] for v in found} == {"42"}


def test_best_names_the_manifest_best_version(
    ws: Path, builtin_trained: tuple[Path, str], tmp_path: Path
) -> None:
    """`eval best`, as `export-skills --version best`: the README's newcomer line needs no
    version number read off the train's output."""
    result = api.evaluate(ws, "best")
    assert result.skills_version == builtin_trained[1]
    fresh = small_workspace(tmp_path / "fresh")
    with pytest.raises(UserError, match=r"manifest.json: no best version yet \(train first\)"):
        api.evaluate(fresh, "best")
