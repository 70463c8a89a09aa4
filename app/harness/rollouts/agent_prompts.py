"""What the agent is sent: system prompt, skill text (inline or via read_skill), tools.

skill_mode "inline" puts the task type's skill in the system prompt, "tool" lets the agent read
it with `read_skill(task_type)`, and "progressive" lists every skill's name and description (the
Agent Skills catalog, app/harness/skills/agent_skills.py) and lets the agent open one by `name`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from app.errors import UserError
from app.harness.workspace.workspace import read_version_files
from app.paths import read_prompt
from core.evolution.budget import resolve_skill_file
from core.types import Question, ToolSpec

TOOL_PARAMETERS: dict[str, dict[str, Any]] = {
    "read_skill": {
        "type": "object",
        "additionalProperties": False,
        "required": ["task_type"],
        "properties": {"task_type": {"type": "string"}},
    },
    "read_context": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"section": {"type": "string", "enum": ["summary", "full"]}},
    },
}


READ_SKILL_BY_NAME: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {"name": {"type": "string"}},
}
CATALOG_HEADING = "# Available skills"
CATALOG_INTRO = (
    "Each skill below is a name and a description. When a case matches a skill's "
    "description, open that skill with the read_skill tool (pass its `name`) and "
    "follow it."
)
READ_SKILL_BY_NAME_DOC = "Returns the instructions of one available skill (pass its `name`)."


class ToolArgumentError(ValueError):
    pass


_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def check_tool_aliases(aliases: object) -> tuple[tuple[str, str], ...]:
    """{built-in tool: new name} checked: only built-in tools, new names that are valid tool
    names, none a built-in name, none given twice; a UserError naming `tool_aliases` else."""
    if aliases is None:
        return ()
    if not isinstance(aliases, Mapping):
        raise UserError('tool_aliases: expected a mapping, e.g. {"read_context": "lookup"}')
    out: list[tuple[str, str]] = []
    for real, shown in aliases.items():
        if real not in TOOL_PARAMETERS:
            known = ", ".join(TOOL_PARAMETERS)
            raise UserError(f"tool_aliases: {str(real)[:80]!r} is not a built-in tool ({known})")
        if not isinstance(shown, str) or not _TOOL_NAME.fullmatch(shown):
            raise UserError(
                f"tool_aliases: {real}={str(shown)[:80]!r}: a new name is 1-64 letters, "
                "digits, _ or -, not starting with a digit or -"
            )
        if shown in TOOL_PARAMETERS or shown in {s for _, s in out}:
            raise UserError(f"tool_aliases: {real}={shown}: that name is taken")
        out.append((str(real), shown))
    return tuple(out)


@dataclass(frozen=True)
class AgentPrompts:
    """One skills version + one prompts version, as the agent sees them."""

    system: str
    tool_docs: dict[str, str]  # tool name -> description (from prompts/tool_<name>.md)
    skills: dict[str, str]  # file name -> text
    user_template: str
    skill_mode: str = "inline"
    skills_version: str = ""
    prompts_version: str = ""
    # The question's full context in the user message (the triage probe,
    # app/harness/training/triage_probe.py): the counterfactual "had it read everything".
    inline_context: bool = False
    # (built-in name, name shown) pairs: an evaluation with renamed tool schemas
    # (`eval --tool-alias read_context=lookup`, docs/scorecard.md#holdouts). The agent sees and
    # calls only the new name; the old one is an unknown tool.
    tool_aliases: tuple[tuple[str, str], ...] = ()

    @classmethod
    def load(cls, skills_dir: Path, prompts_dir: Path, skill_mode: str) -> AgentPrompts:
        prompts = read_version_files(prompts_dir)
        tool_docs = {
            name[len("tool_") : -3]: text
            for name, text in prompts.items()
            if name.startswith("tool_") and name.endswith(".md")
        }
        return cls(
            system=prompts["system.md"],
            tool_docs=tool_docs,
            skills=read_version_files(skills_dir),
            user_template=read_prompt("agent_user.md"),
            skill_mode=skill_mode,
            skills_version=skills_dir.name,
            prompts_version=prompts_dir.name,
        )

    def skill_text(self, task_type: str) -> str:
        return self.skills.get(resolve_skill_file(task_type, self.skills), "")

    def catalog(self) -> list[tuple[str, str, str]]:
        """(file, name, description) of every skill, as progressive mode lists them."""
        from app.harness.skills.agent_skills import catalog

        return catalog(self.skills)

    def catalog_text(self) -> str:
        lines = [f"- {name}: {' '.join(desc.split())}" for _, name, desc in self.catalog()]
        return f"{CATALOG_HEADING}\n\n{CATALOG_INTRO}\n\n" + "\n".join(lines)

    def skill_file_named(self, name: str) -> str | None:
        return next((f for f, n, _ in self.catalog() if n == name), None)

    def opened_file(self, arguments: Any) -> str | None:
        """The skill file a successful read_skill call with `arguments` opened."""
        if not isinstance(arguments, dict):
            return None
        if self.skill_mode == "progressive":
            return self.skill_file_named(str(arguments.get("name", "")))
        task_type = arguments.get("task_type")
        return resolve_skill_file(task_type, self.skills) if isinstance(task_type, str) else None

    def _parameters(self, name: str) -> dict[str, Any]:
        if name == "read_skill" and self.skill_mode == "progressive":
            return READ_SKILL_BY_NAME
        return TOOL_PARAMETERS[name]

    def tools_for(self, question: Question) -> list[ToolSpec]:
        names = []
        if self.skill_mode in ("tool", "progressive"):
            names.append("read_skill")
        if question.context:
            names.append("read_context")
        docs = dict(self.tool_docs)
        if self.skill_mode == "progressive":
            docs["read_skill"] = READ_SKILL_BY_NAME_DOC
        shown = dict(self.tool_aliases)
        return [
            ToolSpec(
                name=shown.get(n, n), description=docs.get(n, n), parameters=self._parameters(n)
            )
            for n in names
        ]

    def real_name(self, name: str) -> str:
        """The built-in tool a called name stands for (itself when not an alias)."""
        return next((real for real, shown in self.tool_aliases if shown == name), name)

    def opening_messages(self, question: Question) -> list[dict[str, Any]]:
        system = self.system
        if self.skill_mode == "progressive":
            system = f"{system}\n\n{self.catalog_text()}"
        elif self.skill_mode == "inline":
            system = (
                f"{system}\n\n# Skill for task type {question.task_type}\n\n"
                f"{self.skill_text(question.task_type)}"
            )
        user = Template(self.user_template).safe_substitute(question=question.question)
        if self.inline_context and question.context:
            user += f"\n\n<context>\n{question.context}\n</context>"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def dispatch(self, name: str, arguments: Any, question: Question) -> str:
        """Run one tool call; bad calls raise ToolArgumentError with the reason.

        `arguments` is the parsed JSON object, or the raw string when the model's JSON did not
        parse (the provider layer keeps it as text so the reason reaches the trajectory).
        """
        if isinstance(arguments, str):
            raise ToolArgumentError("arguments are not valid JSON")
        if name not in {t.name for t in self.tools_for(question)}:
            raise ToolArgumentError(f"unknown tool {str(name)[:80]!r}")
        name = self.real_name(name)
        if name not in TOOL_PARAMETERS:
            raise ToolArgumentError(f"unknown tool {str(name)[:80]!r}")
        validate_arguments(arguments, self._parameters(name))
        if name == "read_skill" and self.skill_mode == "progressive":
            found = self.skill_file_named(arguments["name"])
            if found is None:
                raise ToolArgumentError(f"no skill named {arguments['name'][:80]!r}")
            return self.skills[found] or "(empty skill)"
        if name == "read_skill":
            return self.skill_text(arguments["task_type"]) or "(no skill file)"
        if arguments.get("section", "summary") == "full":
            return question.context
        return question.context.splitlines()[0] if question.context else ""


def validate_arguments(arguments: Any, schema: dict[str, Any]) -> None:
    """The subset of JSON Schema our tools use: object, required, string, enum, no extras."""
    if not isinstance(arguments, dict):
        raise ToolArgumentError("arguments are not a JSON object")
    props = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in arguments]
    if missing:
        raise ToolArgumentError(f"missing argument {missing[0]!r}")
    for key, value in arguments.items():
        if key not in props:
            raise ToolArgumentError(f"unexpected argument {str(key)[:80]!r}")
        if props[key].get("type") == "string" and not isinstance(value, str):
            raise ToolArgumentError(f"argument {key!r} must be a string")
        if "enum" in props[key] and value not in props[key]["enum"]:
            raise ToolArgumentError(f"argument {key!r} must be one of {props[key]['enum']}")
