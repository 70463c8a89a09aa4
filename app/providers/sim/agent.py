"""The simulated agent: answers from what is in the prompt it receives, nothing else.

It "knows" a rule only when the rule's statement appears in the system prompt, the inline skill
text, or a read_skill tool result actually sent to it; a contradicting decoy statement confuses
it. Without the rules a case needs it is near chance. A case that needs context is answerable
only when its FACT line was read with read_context or inlined in the user message (a
`<context>` block, app/harness/rollouts/agent_prompts.py `inline_context`). The strong variant
`sim/<world>-strong` (`strengthen`) also knows a share of the rules untold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from app.providers.sim.rng import draw
from app.providers.sim.world import CUES, FACT_MARKER, TOOL_RULE, CaseSpec, World, normalise
from core.types import ToolCall, ToolSpec

P_KNOWN = 0.93
P_UNKNOWN = 0.25
P_CONFUSED = 0.05
# A verified memory of a past case that needed the same rule (app/harness/rollouts/memory.py)
# works like a worked example: the agent answers as if it half-knew the rule.
P_EXAMPLE = 0.7
MEMORY_BEGIN = "<memories>"
MEMORY_TASK_PREFIX = "Task: "
DILUTION_BUDGET_CHARS = 3000
DILUTION_MAX_PENALTY = 0.15


@dataclass(frozen=True)
class AgentView:
    """The parts of a conversation the simulated agent reasons from."""

    question: str
    instruction_text: str  # normalised system prompt + any skill text it was given
    skill_chars: int
    tools: dict[str, str]  # offered tool name -> description
    called: dict[str, list[str]]  # tool name -> results seen
    catalog: tuple[tuple[str, str], ...] = field(default=())  # progressive: (name, description)
    memory_tasks: tuple[str, ...] = ()  # task texts of memories in the system prompt
    inline_context: str = ""  # a <context> block of the first user message


CATALOG_HEADING = "# Available skills"  # as app/harness/rollouts/agent_prompts.py writes it
# The built-in context tool's own words (prompts/tool_read_context.md of every seed): under
# another name (`eval --tool-alias read_context=lookup`) the agent finds the tool by what its
# description says it does, as a model reads a schema; a description without them is a tool
# it does not know how to use.
CONTEXT_TOOL_WORDS = "reads the context attached to the current case"


def context_tool(tools: dict[str, str]) -> str | None:
    """The offered tool that reads a case's context: `read_context`, else the first tool whose
    description says it does that."""
    if "read_context" in tools:
        return "read_context"
    return next((n for n, d in tools.items() if CONTEXT_TOOL_WORDS in normalise(d)), None)


def read_catalog(system: str) -> tuple[tuple[str, str], ...]:
    if CATALOG_HEADING not in system:
        return ()
    out = []
    for line in system.split(CATALOG_HEADING, 1)[1].splitlines():
        if line.startswith("- ") and ": " in line:
            name, desc = line[2:].split(": ", 1)
            out.append((name.strip(), desc))
    return tuple(out)


@lru_cache(maxsize=4096)
def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text) is not None


def choose_skill(catalog: tuple[tuple[str, str], ...], question: str) -> str | None:
    """The skill whose description names the most of the question's cues (first on a tie);
    None when no description names any. Only progressive mode uses this."""
    q = normalise(question)
    present = [c for cues in CUES.values() for c in cues if _has(q, c)]
    best, best_score = None, 0
    for name, desc in catalog:
        d = normalise(desc)
        score = sum(_has(d, c) for c in present)
        if score > best_score:
            best, best_score = name, score
    return best


def tag(text: str, name: str) -> str | None:
    start = text.find(f"<{name}")
    if start < 0:
        return None
    open_end = text.find(">", start)
    close = text.find(f"</{name}>", open_end)
    if open_end < 0 or close < 0:
        return None
    return text[open_end + 1 : close].strip()


def read_view(messages: list[dict[str, Any]], tools: list[ToolSpec] | None) -> AgentView:
    system = "".join(m.get("content") or "" for m in messages if m.get("role") == "system")
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    called: dict[str, list[str]] = {}
    names_by_id: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            names_by_id[call["id"]] = call["function"]["name"]
            called.setdefault(call["function"]["name"], [])
        if m.get("role") == "tool":
            name = names_by_id.get(m.get("tool_call_id", ""), "")
            called.setdefault(name, []).append(m.get("content") or "")
    skill_results = "\n".join(called.get("read_skill", []))
    skill_inline = system.split("# Skill", 1)[1] if "# Skill" in system else ""
    return AgentView(
        question=tag(first_user, "question") or first_user,
        instruction_text=normalise(system + "\n" + skill_results),
        skill_chars=len(skill_inline) + len(skill_results),
        tools={t.name: t.description for t in tools or []},
        called=called,
        catalog=read_catalog(system),
        memory_tasks=memory_tasks(system),
        inline_context=tag(first_user, "context") or "",
    )


def memory_tasks(system: str) -> tuple[str, ...]:
    """Task lines of the memory block (app/harness/rollouts/memory.py `format_block`), if any."""
    block = tag(system, MEMORY_BEGIN[1:-1])
    if not block:
        return ()
    return tuple(
        line.strip()[len(MEMORY_TASK_PREFIX) :]
        for line in block.splitlines()
        if line.strip().startswith(MEMORY_TASK_PREFIX)
    )


def skips_context(world: World, case: CaseSpec, share: float) -> bool:
    """Whether the agent never opens this case's context (`missing_context_share`): a fixed
    property of the question in this world, so the world knows which failures lacked it."""
    return (
        case.needs_context
        and share > 0
        and draw(world.seed, "skip-context", case.question_id) < share
    )


def next_tool_call(
    view: AgentView, case: CaseSpec | None, turn: int, *, skip_context: bool = False
) -> ToolCall | None:
    if view.catalog and "read_skill" in view.tools and "read_skill" not in view.called:
        name = choose_skill(view.catalog, view.question)
        if name is not None:
            return ToolCall(id=f"call_{turn}_skill", name="read_skill", arguments={"name": name})
    elif "read_skill" in view.tools and "read_skill" not in view.called:
        task_type = case.task_type if case else "unknown"
        return ToolCall(
            id=f"call_{turn}_skill", name="read_skill", arguments={"task_type": task_type}
        )
    tool = context_tool(view.tools)
    if (
        case
        and case.needs_context
        and not skip_context
        and FACT_MARKER not in view.inline_context
        and tool is not None
        and tool not in view.called
    ):
        knows_tool = normalise(TOOL_RULE) in normalise(view.tools[tool])
        args = {"section": "full"} if knows_tool else {}
        return ToolCall(id=f"call_{turn}_context", name=tool, arguments=args)
    return None


def p_correct(world: World, view: AgentView, case: CaseSpec) -> float:
    rule = world.rules[case.rule_id]
    text = view.instruction_text
    if normalise(rule.decoy) in text:
        return P_CONFUSED
    known = normalise(rule.statement) in text
    if case.system_rule is not None:
        known = known and normalise(world.system_rules[case.system_rule]) in text
    if case.needs_context:
        tool = context_tool(view.tools) or "read_context"
        read = any(FACT_MARKER in r for r in view.called.get(tool, []))
        known = known and (read or FACT_MARKER in view.inline_context)
    p = P_KNOWN if known else P_UNKNOWN
    if not known and view.memory_tasks and _has_example(world, view, case):
        p = P_EXAMPLE
    excess = max(0, view.skill_chars - DILUTION_BUDGET_CHARS)
    return max(0.0, p - DILUTION_MAX_PENALTY * min(1.0, excess / DILUTION_BUDGET_CHARS))


def final_text(case: CaseSpec | None, correct: bool, pick: int) -> str:
    if case is None:
        return "I could not match this case to anything I know.\nANSWER: unknown"
    answer = case.answer if correct else case.wrong_answers[pick % len(case.wrong_answers)]
    return f"Applying the rules I was given to case {case.question_id}.\nANSWER: {answer}"


def _has_example(world: World, view: AgentView, case: CaseSpec) -> bool:
    for task in view.memory_tasks:
        other = world.case_for_text(task)
        if (
            other is not None
            and other.rule_id == case.rule_id
            and other.question_id != case.question_id
        ):
            return True
    return False


def strong_knows(world: World, rule_id: str, share: float) -> bool:
    """Whether the strong variant (`sim/<world>-strong`) knows this hidden rule untold: a fixed
    property of the rule in this world, so its winners and failures are reproducible."""
    return share > 0 and draw(world.seed, "strong-knows", rule_id) < share


def strengthen(world: World, view: AgentView, share: float) -> AgentView:
    """The view of the strong variant: the rules it knows, the system rules and the context
    tool's rule added to what it reasons from, as a larger model brings them from training.
    They do not count as skill text (no dilution), and a decoy in its prompt still confuses it."""
    known = [r.statement for r in world.rules.values() if strong_knows(world, r.rule_id, share)]
    extra = normalise("\n".join([*known, *world.system_rules.values()]))
    tools = dict(view.tools)
    if "read_context" in tools:
        tools["read_context"] = f"{tools['read_context']} {TOOL_RULE}"
    return replace(view, instruction_text=f"{view.instruction_text}\n{extra}", tools=tools)
