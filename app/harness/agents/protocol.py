"""The agent seam: one task, one skills version, one model endpoint in; one result out.

An agent is anything with `async run(task, skills, endpoint) -> AgentResult`. Agents are
untrusted code: a crash, a hang, a flood of output or an answer that is no answer is one
`AgentResult` with its `Failure`, never an exception that stops a run. Only the harness's own
errors (and cancellation) propagate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from app.sanitize import visible
from app.secrets import scrub
from core.traces import Source, Trace

if TYPE_CHECKING:
    from app.harness.agents.agent_trace import AgentTraceFile

MAX_ANSWER_CHARS = 32_000  # an answer longer than this is cut (and a checker sees the cut)
MAX_DETAIL_CHARS = 2_000  # a failure's detail line


class FailureKind(StrEnum):
    """Why a rollout produced no usable answer."""

    CRASH = "crash"  # did not start, raised, or exited non-zero
    TIMEOUT = "timeout"  # over its time limit (the process group is killed)
    FLOOD = "flood"  # printed more than its output bound
    GARBAGE = "garbage"  # ran, but what it returned is no answer (none, undecodable, wrong type)
    CALL_CAP = "call_cap"  # the gateway refused its calls past the per-rollout cap or time


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    detail: str = ""

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "detail": self.detail}


@dataclass(frozen=True)
class AgentTask:
    """One question as an agent sees it (also written as `task.json` for a command agent)."""

    task_id: str
    question: str
    task_type: str = ""
    context: str = ""  # data the agent may read, never instructions

    def as_json(self) -> dict[str, str]:
        return {
            "task_id": self.task_id,
            "question": self.question,
            "task_type": self.task_type,
            "context": self.context,
        }


@dataclass(frozen=True)
class SkillsVersion:
    """The text being trained: skill files by file name (`ledger.md`, `default-strategy.md`,
    and `_skills.json` frontmatter when imported), the system prompt, tool descriptions by
    tool name."""

    version: str
    skills: Mapping[str, str]
    system_prompt: str = ""
    tool_descriptions: Mapping[str, str] = field(default_factory=dict)
    prompts_version: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "prompts_version": self.prompts_version,
            "skills": dict(self.skills),
            "system_prompt": self.system_prompt,
            "tool_descriptions": dict(self.tool_descriptions),
        }


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the agent's model is: an OpenAI-compatible base URL (ending in `/v1`), the key to
    send (the gateway's per-rollout key; never printed) and the model name to ask for."""

    base_url: str
    api_key: str = field(repr=False)
    model: str

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for Anthropic clients, which append `/v1/messages` themselves: the
        server's root, without the `/v1` OpenAI clients want."""
        return self.base_url.removesuffix("/").removesuffix("/v1")


@dataclass(frozen=True)
class AgentUsage:
    calls: int = 0  # model calls answered
    refused: int = 0  # model calls the gateway refused (cap, time limit, closed)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class AgentResult:
    """One rollout's outcome. `failure` None: the agent answered (right or wrong is the
    checker's business). `exit_code` and `stderr` (bounded) are a command agent's, and so is
    `agent_trace`, what its own trace file gave (None: it wrote none; agent_trace.py)."""

    answer: str
    trace: Trace
    usage: AgentUsage = AgentUsage()
    failure: Failure | None = None
    latency_s: float = 0.0
    exit_code: int | None = None
    stderr: str = ""
    agent_trace: AgentTraceFile | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class Agent(Protocol):
    """Runs one task; returns an `AgentResult` for every outcome of the agent's own making."""

    async def run(
        self, task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint
    ) -> AgentResult: ...


def empty_trace(native_id: str = "") -> Trace:
    return Trace(source=Source.GATEWAY, native_id=native_id, steps=())


def failed(
    kind: FailureKind,
    detail: str,
    *,
    trace: Trace | None = None,
    latency_s: float = 0.0,
    exit_code: int | None = None,
    stderr: str = "",
) -> AgentResult:
    """A result with no answer, failing for `kind`."""
    return AgentResult(
        answer="",
        trace=trace or empty_trace(),
        failure=Failure(kind, detail[:MAX_DETAIL_CHARS]),
        latency_s=latency_s,
        exit_code=exit_code,
        stderr=stderr,
    )


def task_json(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    """What a command agent reads on stdin and in `task.json`: the task, the skills version
    and the endpoint without its key (the key is in the environment only)."""
    return json.dumps(
        {
            "task": task.as_json(),
            "skills": skills.as_json(),
            "model": {"base_url": endpoint.base_url, "model": endpoint.model},
        },
        ensure_ascii=False,
    )


def clean_answer(text: str) -> tuple[str | None, str]:
    """An agent's answer made safe to store and show (secrets scrubbed, control characters
    shown as text, app/sanitize.py; cut to MAX_ANSWER_CHARS), or None and why."""
    answer = visible(scrub(text.strip()))[:MAX_ANSWER_CHARS]
    if not answer:
        return None, "the answer is empty"
    return answer, ""
