"""A command agent's own trace file (`SKILL_TRAINER_TRACE_FILE`): its tool spans (OTLP JSON and
OpenInference as Phoenix exports them) join the gateway's model turns, with their errors and
durations; a link, an oversized file and garbage lines are not read."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from app.harness.agents.agent_trace import (
    TRACE_FILE_MAX_BYTES,
    parse_trace_lines,
    read_trace_file,
)
from app.harness.agents.command_agent import CommandAgent, CommandSettings
from app.harness.agents.gateway import Gateway
from app.harness.agents.protocol import AgentTask, SkillsVersion
from app.harness.agents.rollout import run_rollout
from app.harness.agents.training_seam import prediction_from
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings
from core.traces import Role, StepKind
from core.types import Question
from tests.app.agents.conftest import with_gateway

TASK = AgentTask("ledger-u000", "For client 122 the figures are 302, 191, 296. The total?")
SKILLS = SkillsVersion("v1", {"ledger.md": "# Ledger\n\nAdd the figures.\n"})

# stdlib only, as examples/agents/command-script/agent.py: a model call, a tool that fails
# (an OTLP/JSON export line, as opentelemetry-exporter-otlp's JSON encoding writes it), a
# second model call, then a tool that works (one OpenInference span, Phoenix's export shape)
AGENT = """
import datetime, json, os, sys, time, urllib.request

task = json.load(sys.stdin)
trace_file = os.environ["SKILL_TRAINER_TRACE_FILE"]
assert os.path.isabs(trace_file)

def ask(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": task["model"]["model"], "messages": messages}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                 "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["choices"][0]["message"].get("content") or ""

def attr(key, value):
    return {"key": key, "value": {"stringValue": value}}

messages = [{"role": "user", "content": task["task"]["question"]}]
messages.append({"role": "assistant", "content": ask(messages)})
start = time.time_ns()
otlp = {"resourceSpans": [{
    "resource": {"attributes": [attr("service.name", "test-agent")]},
    "scopeSpans": [{"scope": {"name": "agent"}, "spans": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
        "name": "execute_tool lookup", "kind": 1,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 250_000_000),
        "attributes": [attr("gen_ai.operation.name", "execute_tool"),
                       attr("gen_ai.tool.name", "lookup"),
                       attr("gen_ai.tool.call.arguments", '{"client": 122}')],
        "events": [{"name": "exception", "timeUnixNano": str(start + 250_000_000),
                    "attributes": [attr("exception.type", "KeyError"),
                                   attr("exception.message", "client 122 not in ledger")]}],
        "status": {"code": 2, "message": "KeyError"},
    }]}],
}]}
with open(trace_file, "a") as out:
    out.write(json.dumps(otlp) + "\\n")
    out.write("not json at all\\n")
    out.write(json.dumps({"some": "other shape"}) + "\\n")
messages.append({"role": "user", "content": "lookup failed: KeyError; add them yourself"})
ask(messages)
now = datetime.datetime.now(datetime.timezone.utc)
phoenix = {
    "name": "calc", "span_kind": "TOOL", "parent_id": None, "status_code": "OK",
    "context": {"trace_id": "5b8efff798038103d269b633813fc60c", "span_id": "a1b2c3d4e5f60718"},
    "start_time": now.isoformat(),
    "end_time": (now + datetime.timedelta(milliseconds=40)).isoformat(),
    "attributes": {"openinference": {"span": {"kind": "TOOL"}}, "tool": {"name": "calc"},
                   "input": {"value": '{"expr": "302+191+296"}'}, "output": {"value": "789"}},
}
with open(trace_file, "a") as out:
    out.write(json.dumps(phoenix) + "\\n")
print("ANSWER: 789")
"""


def command_agent(tmp_path: Path, source: str) -> CommandAgent:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(source))
    return CommandAgent(CommandSettings(argv=(sys.executable, str(script)), root=tmp_path))


@with_gateway
async def test_tool_spans_join_the_gateways_model_turns(gateway: Gateway, tmp_path: Path) -> None:
    rollout = await run_rollout(
        command_agent(tmp_path, AGENT), gateway, TASK, SKILLS, rollout_id="r1"
    )
    result = rollout.result
    assert result.ok and result.answer == "789"
    assert len(rollout.calls) == 2 and all(c.started_unix > 0 for c in rollout.calls)
    assert result.agent_trace is not None
    assert result.agent_trace.as_json() == {"trace_spans": 2, "trace_lines_skipped": 2}
    kinds = [(s.kind, s.role, s.tool_name) for s in result.trace.steps]
    assert kinds == [
        (StepKind.MESSAGE, Role.USER, ""),
        (StepKind.MESSAGE, Role.ASSISTANT, ""),  # the first model call's reply
        (StepKind.TOOL_CALL, Role.ASSISTANT, "lookup"),  # between the two calls
        (StepKind.OBSERVATION, Role.TOOL, "lookup"),
        (StepKind.MESSAGE, Role.USER, ""),  # the second call's request
        (StepKind.MESSAGE, Role.ASSISTANT, ""),
        (StepKind.TOOL_CALL, Role.ASSISTANT, "calc"),  # after the last call: at the end
        (StepKind.OBSERVATION, Role.TOOL, "calc"),
    ]
    failed, worked = (s for s in result.trace.steps if s.kind == StepKind.OBSERVATION)
    assert failed.is_error and failed.text == "KeyError: client 122 not in ledger"
    assert failed.duration_s == 0.25
    assert result.trace.steps[2].arguments == '{"client": 122}'
    assert not worked.is_error and worked.text == "789"
    assert abs(worked.duration_s - 0.04) < 1e-3
    assert result.trace.has_tool_error
    # the prediction diagnosis reads: tool steps with their status and duration, and the
    # trace file's counts in the verdict step's agent record
    question = Question(TASK.task_id, "ledger", TASK.question, "789")
    prompts = AgentPrompts("", {}, dict(SKILLS.skills), "{question}", skills_version="v1")
    prediction = await prediction_from(rollout, question, prompts, AgentSettings(), 0.1)
    assert prediction.correct
    tools = [s for s in prediction.steps if s["type"] == "tool"]
    assert [(t["name"], t["status"], t["duration_s"]) for t in tools] == [
        ("lookup", "error", 0.25),
        ("calc", "ok", worked.duration_s),
    ]
    assert "KeyError" in tools[0]["output"]
    agent = prediction.steps[-1]["agent"]
    assert agent["trace_spans"] == 2 and agent["trace_lines_skipped"] == 2


LINKS = """
import os
os.symlink("{target}", os.environ["SKILL_TRAINER_TRACE_FILE"])
print("ANSWER: 1")
"""


@with_gateway
async def test_a_link_as_trace_file_is_not_followed(gateway: Gateway, tmp_path: Path) -> None:
    secret = tmp_path / "outside.jsonl"
    secret.write_text(json.dumps({"resourceSpans": []}) + "\n")
    agent = command_agent(tmp_path, LINKS.format(target=secret))
    rollout = await run_rollout(agent, gateway, TASK, SKILLS, rollout_id="r2")
    trace_file = rollout.result.agent_trace
    assert rollout.result.ok and trace_file is not None
    assert trace_file.spans == 0 and trace_file.note.startswith("trace file not read")


def test_an_oversized_trace_file_is_not_read(tmp_path: Path) -> None:
    with (tmp_path / "agent-trace.jsonl").open("wb") as out:
        out.truncate(TRACE_FILE_MAX_BYTES + 1)  # sparse: no 8 MiB written
    found = read_trace_file(tmp_path)
    assert found is not None and found.spans == 0 and not found.tool_spans
    assert found.as_json()["trace_note"].endswith(f"larger than {TRACE_FILE_MAX_BYTES} bytes")


def test_no_trace_file_is_none_and_a_fifo_is_not_read(tmp_path: Path) -> None:
    import os

    assert read_trace_file(tmp_path) is None
    os.mkfifo(tmp_path / "agent-trace.jsonl")
    found = read_trace_file(tmp_path)
    assert found is not None and found.note == "trace file not read: not a regular file"


def test_garbage_lines_are_skipped_and_counted() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    tool = {
        "name": "t",
        "context": {"trace_id": "x", "span_id": "y"},
        "span_kind": "TOOL",
        "start_time": "not a time",
        "attributes": ["not", "a", "dict"],
    }
    lines = [
        b"\xff\xfe not utf-8",
        b"{",
        deep.encode(),
        b"[]",
        b'"text"',
        json.dumps({"resourceSpans": "nope"}).encode(),  # a document with no spans
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [1, None, "x"]}]}]}).encode(),
        json.dumps(tool).encode(),
        b"",
    ]
    found = parse_trace_lines(b"\n".join(lines))
    assert found.lines_skipped == 5 and found.spans == 1
    assert [s.name for s in found.tool_spans] == ["t"]
