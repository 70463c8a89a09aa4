"""A LangGraph agent for skill-trainer's `[agent] kind = "python"` (docs/agents.md).

`run(task, skills, endpoint)` runs a one-node LangGraph `StateGraph` over `MessagesState`:
the node sends the skills being trained (the system prompt plus the skill for the task's type,
else `default-strategy`) and the conversation to a langchain-openai `ChatOpenAI` pointed at the
trainer's recording gateway, and appends the reply. The answer is the text after the reply's
last `ANSWER:` line. When the trainer adds a rule to that skill, the model is sent it on the
next rollout. (LangGraph's prebuilt `create_react_agent` is deprecated in favour of
`langchain.agents`; a tool-calling agent adds a `ToolNode` and a conditional edge to this graph.)

The gateway is the only address it talks to: LangSmith tracing is switched off around the run
(`langsmith.tracing_context(enabled=False)` wins over LANGSMITH_TRACING / LANGCHAIN_TRACING_V2
in the environment), and the client makes no retry of its own.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langsmith import tracing_context
from pydantic import SecretStr

from app.harness.agents.protocol import AgentTask, ModelEndpoint, SkillsVersion

DEFAULT_SKILL = "default-strategy"


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


def build_graph(
    model: ChatOpenAI, system: str
) -> CompiledStateGraph[MessagesState, None, MessagesState, MessagesState]:
    """START -> model -> END: the node asks the model with the skills as the system message."""

    async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        reply = await model.ainvoke([SystemMessage(system), *state["messages"]])
        return {"messages": [reply]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return graph.compile()


async def run(task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> str:
    model = ChatOpenAI(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=SecretStr(endpoint.api_key),
        temperature=0.0,
        max_retries=0,
    )
    graph = build_graph(model, instructions(task, skills))
    with tracing_context(enabled=False):
        state = await graph.ainvoke({"messages": [HumanMessage(user_message(task))]})
    reply = state["messages"][-1].content
    return answer_of(reply if isinstance(reply, str) else str(reply))
