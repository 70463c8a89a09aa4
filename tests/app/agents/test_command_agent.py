"""Executables as agents: scripts the test writes, run per rollout against the gateway."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.harness.agents.calls import CallStatus
from app.harness.agents.command_agent import (
    CommandAgent,
    CommandAgentError,
    CommandSettings,
    agents_index,
    answer_from_stdout,
)
from app.harness.agents.gateway import Gateway
from app.harness.agents.protocol import AgentTask, FailureKind, SkillsVersion
from app.harness.agents.rollout import run_rollout
from core.traces import Role, StepKind
from tests.app.agents.conftest import with_gateway

TASK = AgentTask(
    "ledger-u000",
    "[ledger] Case ledger-u000. For client 122 the figures are 302, 191, 296. What is the total?",
    task_type="ledger",
)
SKILLS = SkillsVersion(
    "v3",
    {"ledger.md": "# Ledger\n\nAdd the figures.\n", "default-strategy.md": "# Default\n\nThink.\n"},
    system_prompt="You are a careful clerk.",
    tool_descriptions={"read_skill": "Read a skill file."},
)

GOOD = """
import json, os, pathlib, sys
from openai import OpenAI
task = json.load(sys.stdin)
on_disk = json.loads(pathlib.Path(os.environ["SKILL_TRAINER_TASK_FILE"]).read_text())
assert on_disk == task and "api_key" not in json.dumps(task)
skill = pathlib.Path(".agents/skills/ledger/SKILL.md").read_text()
client = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
reply = client.chat.completions.create(
    model=task["model"]["model"],
    messages=[{"role": "system", "content": skill}, {"role": "user", "content": task["task"]["question"]}],
)
print("thinking...")
print(reply.choices[0].message.content)
"""
HANGS = "import time\nprint('ANSWER: too early', flush=True)\ntime.sleep(600)\n"
CRASHES = "import sys\nprint('partial', flush=True)\nraise SystemExit('agent fell over')\n"
FLOODS = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n"
GARBAGE = "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 4)\n"
SNOOPS = """
import os
seen = os.environ.get("SKILL_TRAINER_TEST_SECRET", "none")
same = os.environ["ANTHROPIC_API_KEY"] == os.environ["OPENAI_API_KEY"]
print("ANSWER: " + seen + " " + os.environ["OPENAI_API_KEY"][:11] + " " + str(same)
      + " " + os.environ["ANTHROPIC_BASE_URL"])
"""
FORKS_AND_HANGS = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
time.sleep(600)
"""


def agent(tmp_path: Path, source: str, **settings: object) -> CommandAgent:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(source))
    return CommandAgent(
        CommandSettings(argv=(sys.executable, str(script)), root=tmp_path, **settings)  # type: ignore[arg-type]
    )


@with_gateway
async def test_good_agent_answers_through_the_gateway(gateway: Gateway, tmp_path: Path) -> None:
    rollout = await run_rollout(agent(tmp_path, GOOD), gateway, TASK, SKILLS, rollout_id="r1")
    result = rollout.result
    assert result.ok, result.failure
    assert result.exit_code == 0
    assert result.answer  # the sim's answer, from the last ANSWER: line
    assert [c.status for c in rollout.calls] == [CallStatus.OK]
    assert result.usage.calls == 1 and result.usage.tokens_in > 0
    steps = [(s.kind, s.role) for s in result.trace.steps]
    assert steps == [
        (StepKind.MESSAGE, Role.SYSTEM),
        (StepKind.MESSAGE, Role.USER),
        (StepKind.MESSAGE, Role.ASSISTANT),
    ]
    assert "Add the figures." in result.trace.steps[0].text  # it read the SKILL.md we wrote
    assert list(tmp_path.glob("agent-*")) == []  # the rollout's folder is gone


async def test_hanging_agent_times_out_and_its_group_dies(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await agent(tmp_path, FORKS_AND_HANGS, timeout_s=1.0).run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    assert time.monotonic() - started < 10
    assert _sleepers() == []  # the grandchild was killed with the group


async def test_timeout_wins_over_an_early_answer(tmp_path: Path) -> None:
    result = await agent(tmp_path, HANGS, timeout_s=0.5).run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    assert result.answer == ""


async def test_crash_is_recorded_with_exit_code_and_stderr(tmp_path: Path) -> None:
    result = await agent(tmp_path, CRASHES).run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.CRASH
    assert result.exit_code == 1
    assert "agent fell over" in result.stderr and "agent fell over" in result.failure.detail


async def test_flood_is_cut_off_in_bounded_memory(tmp_path: Path) -> None:
    result = await agent(tmp_path, FLOODS, stdout_bytes=1 << 20).run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.FLOOD
    assert "more than" in result.failure.detail


async def test_garbage_output_is_no_answer(tmp_path: Path) -> None:
    result = await agent(tmp_path, GARBAGE).run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.GARBAGE
    assert "ANSWER:" in result.failure.detail


async def test_agent_sees_no_secret_of_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILL_TRAINER_TEST_SECRET", "sk-parent-secret-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-parents-own-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-parents-own-key")
    result = await agent(tmp_path, SNOOPS).run(TASK, SKILLS, _endpoint())
    assert result.ok, result.failure
    # the rollout's key, not the parent's, under both names; Anthropic clients add /v1 themselves
    assert result.answer == "none sk-rollout- True http://127.0.0.1:9"


async def test_answer_file_and_its_bounds(tmp_path: Path) -> None:
    writes = "import os\nos.makedirs('out')\nopen('out/answer.txt', 'w').write('42\\n')\n"
    result = await agent(tmp_path, writes, answer_file="out/answer.txt").run(
        TASK, SKILLS, _endpoint()
    )
    assert result.ok and result.answer == "42"
    links = "import os\nos.symlink('/etc/passwd', 'answer.txt')\n"
    result = await agent(tmp_path, links, answer_file="answer.txt").run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.GARBAGE
    with pytest.raises(CommandAgentError):
        agent(tmp_path, "", answer_file="../outside.txt")


async def test_missing_executable_is_a_crash(tmp_path: Path) -> None:
    missing = CommandAgent(CommandSettings(argv=("/no/such/agent",), root=tmp_path))
    result = await missing.run(TASK, SKILLS, _endpoint())
    assert result.failure is not None and result.failure.kind == FailureKind.CRASH


def test_answer_line_and_index() -> None:
    assert answer_from_stdout("ANSWER: 1\nnoise\n  ANSWER: 2 \x1b[2J\n")[0] == "2 ␛[2J"
    assert answer_from_stdout("no answer here")[0] is None
    index = agents_index(SKILLS)
    assert "You are a careful clerk." in index
    assert "`ledger` (.agents/skills/ledger/SKILL.md)" in index
    assert "`read_skill`: Read a skill file." in index


def test_task_json_carries_no_key(tmp_path: Path) -> None:
    from app.harness.agents.protocol import task_json

    payload = json.loads(task_json(TASK, SKILLS, _endpoint()))
    assert "sk-rollout-secret" not in json.dumps(payload)
    assert payload["task"]["task_id"] == "ledger-u000"
    assert payload["skills"]["skills"]["ledger.md"].startswith("# Ledger")


def _endpoint():  # type: ignore[no-untyped-def]
    from app.harness.agents.protocol import ModelEndpoint

    return ModelEndpoint("http://127.0.0.1:9/v1", "sk-rollout-secret", "sim/basic")


def _sleepers() -> list[int]:
    """Processes of this user still running the hanging grandchild's command line."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if b"time.sleep(600)" in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


LISTS_SKILLS = """
import pathlib
found = sorted(str(p) for p in pathlib.Path(".").glob("*/skills/*/SKILL.md"))
index = pathlib.Path("AGENTS.md").read_text()
print("ANSWER: " + " ".join(found) + " | " + str(".claude/skills/ledger/SKILL.md" in index))
"""


async def test_the_skills_go_to_every_folder_the_config_names(tmp_path: Path) -> None:
    """`agent_skills_dirs`: `.agents/skills` for Codex CLI and OpenCode, `.claude/skills` for
    Claude Code; AGENTS.md points at the first."""
    both = (".claude/skills", ".agents/skills")
    result = await agent(tmp_path, LISTS_SKILLS, skills_dirs=both).run(TASK, SKILLS, _endpoint())
    paths, index_names_first = result.answer.split(" | ")
    assert paths.split() == [
        f"{d}/{name}/SKILL.md"
        for d in (".agents/skills", ".claude/skills")
        for name in ("default-strategy", "ledger")
    ]
    assert index_names_first == "True"


def test_the_skills_folders_must_be_inside_the_agents() -> None:
    from app.errors import UserError
    from app.harness.workspace.config import build_config

    assert build_config({"agent.skills_dirs": [".claude/skills"]}, "c").agent_skills_dirs == (
        ".claude/skills",
    )
    for bad in ([], ["../out"], ["/etc/skills"]):
        with pytest.raises(UserError, match="agent_skills_dirs"):
            build_config({"agent.skills_dirs": bad}, "c.toml")
