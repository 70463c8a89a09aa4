"""An OpenAI Agents SDK agent for skill-trainer's `[agent] kind = "python"` (docs/agents.md).

`run(task, skills, endpoint)` builds an `agents.Agent` whose instructions are the skills being
trained (the system prompt plus the skill for the task's type, else `default-strategy`),
runs it once with `Runner.run` on an `OpenAIChatCompletionsModel` pointed at the trainer's
recording gateway, and returns the text after the reply's last `ANSWER:` line. When the
trainer adds a rule to that skill, the agent is instructed with it on its next rollout.

The gateway is the only address it talks to: the SDK's trace export (to api.openai.com) is
switched off for the process and for the run, and its client makes no retry of its own.
"""

from __future__ import annotations

import ssl

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    set_tracing_disabled,
)
from agents import RunConfig as AgentsRunConfig
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from app.harness.agents.protocol import AgentTask, ModelEndpoint, SkillsVersion

DEFAULT_SKILL = "default-strategy"
MAX_TURNS = 4  # no tools, so one model turn is the whole run

# The SDK exports traces to OpenAI's servers unless told not to; an agent under training
# must call no one but the gateway. Off for the whole process, at import.
set_tracing_disabled(True)

# One TLS context for every rollout's client: building one reads the system's certificates
# (about 30 ms of CPU), which would otherwise be most of a rollout's cost on a fast model.
# (langchain-openai shares one the same way.) The gateway itself is plain HTTP on 127.0.0.1.
TLS = ssl.create_default_context()


def instructions(task: AgentTask, skills: SkillsVersion) -> str:
    """The trained system prompt and the skill for this task's type (else the default one)."""
    name = task.task_type if f"{task.task_type}.md" in skills.skills else DEFAULT_SKILL
    skill = skills.skills.get(f"{name}.md", "")
    parts = [skills.system_prompt, f"# Skill {name}\n\n{skill}" if skill else ""]
    return "\n\n".join(p.strip() for p in parts if p.strip())


def user_message(task: AgentTask) -> str:
    text = f"<question>\n{task.question}\n</question>"
    if task.context:  # data the task carries, never instructions
        text += f"\n\n<context>\n{task.context}\n</context>"
    return text + "\n\nEnd with one line: ANSWER: <your answer>"


def answer_of(reply: str) -> str:
    """The text after the reply's last `ANSWER:` line, else the whole reply."""
    for line in reversed(reply.splitlines()):
        if line.strip().startswith("ANSWER:"):
            return line.strip()[len("ANSWER:") :].strip()
    return reply.strip()


async def run(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    client = AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=TLS),
    )
    agent = Agent(
        name="skill-trainer-agent",
        instructions=instructions(task, skills),
        model=OpenAIChatCompletionsModel(model=endpoint.model, openai_client=client),
        model_settings=ModelSettings(temperature=0.0),
    )
    try:
        result = await Runner.run(
            agent,
            user_message(task),
            max_turns=MAX_TURNS,
            run_config=AgentsRunConfig(tracing_disabled=True),
        )
    finally:
        await client.close()
    return answer_of(str(result.final_output or ""))
