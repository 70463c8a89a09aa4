"""Agent functions for tests/app/agents/test_python_agent.py (loaded as module:function)."""

from __future__ import annotations

import ssl
import time

import openai

from app.harness.agents.protocol import AgentTask, ModelEndpoint, SkillsVersion
from app.harness.agents.python_agent import AgentOutput
from core.traces import Role, Source, Step, StepKind, Trace

# One TLS context for every client: building one loads the certificate store, about 35 ms of
# CPU, which a client per rollout paid each time (most of a small training run's time). The
# gateway is plain HTTP on loopback; the context is never used, only built.
_TLS = ssl.create_default_context()


def gateway_client(endpoint: ModelEndpoint) -> openai.AsyncOpenAI:
    """An OpenAI client on a rollout's endpoint, as an agent builds one, without the TLS cost."""
    return openai.AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=_TLS),
    )


async def good(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    client = gateway_client(endpoint)
    reply = await client.chat.completions.create(
        model=endpoint.model,
        messages=[
            {"role": "system", "content": skills.skills[f"{task.task_type}.md"]},
            {"role": "user", "content": task.question},
        ],
    )
    return reply.choices[0].message.content or ""


def with_trace(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> AgentOutput:
    steps = (
        Step(StepKind.MESSAGE, Role.USER, task.question),
        Step(StepKind.MESSAGE, Role.ASSISTANT, "7"),
    )
    return AgentOutput("7", Trace(Source.GATEWAY, "mine", steps))


def crashes(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    raise RuntimeError("no luck\x1b[31m")


def hangs(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    time.sleep(1)  # abandoned by the 0.2 s time-out; short, so the interpreter exits soon
    return "late"


def garbage(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> object:
    return {"not": "an answer"}


async def greedy(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    client = gateway_client(endpoint)
    for _ in range(5):  # the test's cap is 2: the third call raises PermissionDeniedError
        await client.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": task.question}]
        )
    return "never"


not_callable = 3


def hands_back_a_coroutine(
    task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint
) -> object:
    async def later() -> str:
        return "from a coroutine"

    return later()


async def reads_skills(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    """examples/agents/command-script/agent.py in-process: the system prompt and the skill of
    the task's type (else the default one), the question with its context."""
    skill = skills.skills.get(f"{task.task_type}.md") or skills.skills.get("default-strategy.md")
    system = f"{skills.system_prompt}\n\n# Skill {task.task_type}\n\n{skill or ''}"
    user = f"<question>\n{task.question}\n</question>"
    if task.context:
        user += f"\n\n<context>\n{task.context}\n</context>"
    client = gateway_client(endpoint)
    reply = await client.chat.completions.create(
        model=endpoint.model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
    )
    text = reply.choices[0].message.content or ""
    return next(
        (ln[7:].strip() for ln in reversed(text.splitlines()) if ln.startswith("ANSWER:")), ""
    )
