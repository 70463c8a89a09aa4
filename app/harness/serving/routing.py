"""Which of the workspace's task types a served request is, so it gets that task type's trained
skill and declared tools rather than the untrained default (docs/serving.md#routing).

A request is routed, in this order, by
1. the model id `<name>/<task_type>` (exact),
2. the request's `skill_trainer.task_type` field (exact),
3. its task's words against the skills' descriptions, the catalog progressive mode shows the
   agent (app/harness/skills/agent_skills.py `catalog`): each word a task shares with a
   description counts 1/(number of descriptions holding it), words every description holds
   count nothing, and the best-scoring task type wins if it beats the runner-up. A tie or no
   shared word is refused (`RoutingError`): an unrouted request would get untrained text.

The task types are those with a skill file of their own (`<task_type>.md`) and those of the
workspace's questions (which may share `default-strategy.md`; such a type's name stands in
for the description it does not have).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.harness.rollouts.agent_prompts import AgentPrompts
from core.evolution.budget import DEFAULT_SKILL_FILE, resolve_skill_file
from core.types import Question

_WORD = re.compile(r"[a-z0-9]+")
# words that say nothing about a task type, whatever the descriptions hold
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "use",
        "what",
        "when",
        "which",
        "with",
    ]
)
SHOWN_TYPES = 20  # a refusal lists at most this many task types


class RoutingError(ValueError):
    """A request no task type fits: HTTP `status`, OpenAI error `code` and the field `param`."""

    def __init__(self, message: str, *, status: int, code: str, param: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.param = param


@dataclass(frozen=True)
class Route:
    task_type: str
    skill: str  # the skill file the task type uses ("" when the version has none for it)
    routed_by: str  # "model", "field" or "description"
    tools: tuple[str, ...] | None  # declared tools offered (None: the `default = true` ones)


@dataclass(frozen=True)
class TaskType:
    name: str
    skill: str
    tools: tuple[str, ...] | None
    words: frozenset[str]  # its description's words (its name's, without a skill of its own)


def _words(text: str) -> frozenset[str]:
    """Its words, lower-cased, a plural `s` dropped (`dates` and `date` are one word)."""
    words = (w for w in _WORD.findall(text.lower()) if w not in _STOP)
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


def _tools_of(questions: Sequence[Question], defaults: Iterable[str]) -> tuple[str, ...] | None:
    """The declared tools a task type's questions are offered, together (docs/tools.md): a
    question without a `tools` list gets the default ones."""
    if not questions:
        return None
    names: set[str] = set()
    for q in questions:
        names.update(defaults if q.tools is None else q.tools)
    return tuple(sorted(names))


@dataclass(frozen=True)
class Router:
    name: str  # the served model name
    types: dict[str, TaskType]

    @classmethod
    def build(
        cls,
        name: str,
        prompts: AgentPrompts,
        questions: Sequence[Question],
        default_tools: Iterable[str] = (),
    ) -> Router:
        described = {f[:-3]: desc for f, _, desc in prompts.catalog() if f != DEFAULT_SKILL_FILE}
        defaults = tuple(default_tools)
        by_type: dict[str, list[Question]] = {}
        for q in questions:
            by_type.setdefault(q.task_type, []).append(q)
        names = sorted(set(described) | set(by_type))
        types = {}
        for t in names:
            skill = resolve_skill_file(t, prompts.skills)
            types[t] = TaskType(
                name=t,
                skill=skill if skill in prompts.skills else "",
                tools=_tools_of(by_type.get(t, []), defaults),
                # a type without a skill of its own (it shares default-strategy.md) has no
                # description: its name stands in, as default descriptions are built from it
                words=_words(described.get(t, t.replace("_", " ").replace("-", " "))),
            )
        return cls(name, types)

    def model_ids(self) -> list[str]:
        return [self.name] + [f"{self.name}/{t}" for t in self.types]

    def route(self, model: str, field_type: str | None, task: str) -> Route:
        if model != self.name and not model.startswith(f"{self.name}/"):
            raise RoutingError(
                f"model {model[:80]!r} is not served here (this server serves {self.name!r} "
                f"and {self.name!r}/<task type>; GET /v1/models lists them)",
                status=404,
                code="model_not_found",
                param="model",
            )
        if model != self.name:
            return self._exact(model[len(self.name) + 1 :], "model", "model", 404)
        if field_type is not None:
            return self._exact(field_type, "field", "skill_trainer.task_type", 400)
        return self._classify(task)

    def _exact(self, task_type: str, by: str, param: str, status: int) -> Route:
        found = self.types.get(task_type)
        if found is None:
            raise RoutingError(
                f"{param}: {task_type[:80]!r} is not a task type of this workspace "
                f"({self._listed(self.types)})",
                status=status,
                code="model_not_found" if by == "model" else "unknown_task_type",
                param=param,
            )
        return Route(found.name, found.skill, by, found.tools)

    def _classify(self, task: str) -> Route:
        candidates = [t for t in self.types.values() if t.words]
        said = _words(task)
        holders: dict[str, int] = {}
        for t in candidates:
            for w in t.words:
                holders[w] = holders.get(w, 0) + 1
        scores = sorted(
            (
                (
                    sum(
                        1 / holders[w]
                        for w in t.words & said
                        if len(candidates) == 1 or holders[w] < len(candidates)
                    ),
                    t,
                )
                for t in candidates
            ),
            key=lambda s: -s[0],
        )
        if not scores or scores[0][0] == 0:
            raise self._unrouted("no task type's skill description shares a word with the task")
        if len(scores) > 1 and scores[1][0] == scores[0][0]:
            tied = [t.name for s, t in scores if s == scores[0][0]]
            raise self._unrouted(f"the task fits {' and '.join(tied[:SHOWN_TYPES])} equally")
        best = scores[0][1]
        return Route(best.name, best.skill, "description", best.tools)

    def _unrouted(self, why: str) -> RoutingError:
        return RoutingError(
            f"cannot tell which task type this is: {why}; name it with model "
            f"'{self.name}/<task type>' or skill_trainer.task_type ({self._listed(self.types)})",
            status=400,
            code="task_type_not_found",
            param="model",
        )

    @staticmethod
    def _listed(types: Iterable[str]) -> str:
        names = list(types)
        shown = ", ".join(names[:SHOWN_TYPES])
        more = f" and {len(names) - SHOWN_TYPES} more" if len(names) > SHOWN_TYPES else ""
        return f"task types: {shown}{more}" if names else "it has no task types"
