"""Two-stage diagnosis: classify each failure's cause, then build case packs (DESIGN §6.2).

Stage 1 asks the evolver model, per failure, whether the cause is missing context, an
interface/tool ambiguity, a runtime fault, or a real skill gap. Stage 2 groups the failures:
skill gaps into per-task-type skill packs (with contrasting successes), system-prompt and tool
ambiguities into packs that accumulate for the epoch's slow update.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from string import Template
from typing import Any

from core.jsonscan import find_json_object
from core.protocols import LLMProvider
from core.types import Question

CATEGORIES = ("missing_context", "interface", "runtime_fault", "skill_gap")
MAX_FAILURES_PER_PACK = 12
MAX_SUCCESSES_PER_PACK = 3
TRAJECTORY_CHARS = 3000


@dataclass(frozen=True)
class Failure:
    """One wrong answer with what the agent saw."""

    question: Question
    prediction: str
    stop_reason: str
    steps: tuple[dict[str, Any], ...]
    system: str
    skill: str
    tools: str


@dataclass(frozen=True)
class Diagnosis:
    question_id: str
    unit_id: str
    task_type: str
    category: str
    target: str  # "skill" | "system" | "tool:<name>"
    rationale: str
    degraded: bool = False


@dataclass(frozen=True)
class CaseItem:
    question_id: str
    unit_id: str
    question: str
    answer: str
    prediction: str
    note: str = ""

    def render(self, kind: str) -> str:
        return (f'<{kind} id="{self.question_id}">\n<question>\n{self.question}\n</question>\n'
                f"<expected>{self.answer}</expected>\n<got>{self.prediction}</got>\n"
                f"<diagnosis>{self.note}</diagnosis>\n</{kind}>")


@dataclass(frozen=True)
class CasePack:
    """Failures (and for skills, contrasting successes) for one evolution target."""

    target: str  # task type, "system" or "tool:<name>"
    failures: tuple[CaseItem, ...]
    successes: tuple[CaseItem, ...] = ()

    @property
    def unit_ids(self) -> frozenset[str]:
        return frozenset(c.unit_id for c in (*self.failures, *self.successes))

    def render(self) -> str:
        parts = [c.render("failure") for c in self.failures]
        parts += [c.render("success") for c in self.successes]
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "failures": [asdict(c) for c in self.failures],
                "successes": [asdict(c) for c in self.successes]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CasePack:
        return cls(target=data["target"],
                   failures=tuple(CaseItem(**c) for c in data["failures"]),
                   successes=tuple(CaseItem(**c) for c in data.get("successes", [])))


@dataclass(frozen=True)
class DiagnosisResult:
    diagnoses: tuple[Diagnosis, ...]
    skill_packs: dict[str, CasePack] = field(default_factory=dict)
    system_pack: CasePack | None = None
    tool_packs: dict[str, CasePack] = field(default_factory=dict)

    @property
    def degraded_count(self) -> int:
        return sum(d.degraded for d in self.diagnoses)


def render_trajectory(steps: Sequence[Mapping[str, Any]], limit: int = TRAJECTORY_CHARS) -> str:
    lines = []
    for s in steps:
        kind = s.get("type")
        if kind == "model":
            calls = "; ".join(f"{c['name']}({json.dumps(c['arguments'])})"
                              for c in s.get("tool_calls", []))
            lines.append(f"[model] {s.get('text', '')}" + (f" -> calls {calls}" if calls else ""))
        elif kind == "tool":
            lines.append(f"[tool {s.get('name')} {json.dumps(s.get('arguments'))}] "
                         f"{s.get('output', '')}")
        elif kind == "error":
            lines.append(f"[error] {s.get('error', '')}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n[... trajectory truncated ...]"


def diagnosis_prompt(template: str, failure: Failure) -> str:
    q = failure.question
    return Template(template).safe_substitute(
        task_type=q.task_type, question=q.question, answer=q.answer,
        prediction=failure.prediction or "(no answer)", stop_reason=failure.stop_reason,
        system=failure.system, skill=failure.skill, tools=failure.tools,
        trajectory=render_trajectory(failure.steps))


def parse_diagnosis(reply: str, question: Question) -> Diagnosis:
    """Defensive: anything unparseable is a degraded diagnosis, never an exception."""
    degraded = Diagnosis(question.question_id, question.unit_id, question.task_type, "unknown",
                         "skill", "diagnosis reply did not parse", degraded=True)
    obj = find_json_object(reply or "", ("category",))
    if not isinstance(obj, dict) or obj.get("category") not in CATEGORIES:
        return degraded
    target = obj.get("target") if isinstance(obj.get("target"), str) else "skill"
    if target not in ("skill", "system") and not re.fullmatch(r"tool:[\w-]{1,64}", target):
        target = "skill"
    rationale = str(obj.get("rationale", ""))[:500]
    return Diagnosis(question.question_id, question.unit_id, question.task_type,
                     obj["category"], target, rationale)


async def diagnose_failures(provider: LLMProvider, template: str, failures: Sequence[Failure],
                            *, limiter=None) -> list[Diagnosis]:
    """Stage 1, one evolver call per failure (concurrency bounded by the caller's limiter)."""
    import anyio

    results: dict[int, Diagnosis] = {}

    async def one(i: int, failure: Failure) -> None:
        prompt = diagnosis_prompt(template, failure)
        try:
            if limiter is not None:
                async with limiter:
                    reply = await provider.complete([{"role": "user", "content": prompt}],
                                                    role="evolver")
            else:
                reply = await provider.complete([{"role": "user", "content": prompt}],
                                                role="evolver")
            results[i] = parse_diagnosis(reply.text, failure.question)
        except Exception as e:  # a judge failure degrades this diagnosis only
            if type(e).__name__ == "BudgetExceeded":
                raise
            results[i] = parse_diagnosis("", failure.question)

    async with anyio.create_task_group() as tg:
        for i, f in enumerate(failures):
            tg.start_soon(one, i, f)
    return [results[i] for i in range(len(failures))]


def build_packs(diagnoses: Sequence[Diagnosis], failures: Sequence[Failure],
                successes: Sequence[tuple[Question, str]]) -> DiagnosisResult:
    """Stage 2: group diagnosed failures into skill, system and tool case packs."""
    by_id = {f.question.question_id: f for f in failures}
    skill: dict[str, list[CaseItem]] = {}
    system: list[CaseItem] = []
    tools: dict[str, list[CaseItem]] = {}
    for d in sorted(diagnoses, key=lambda d: d.question_id):
        f = by_id[d.question_id]
        item = CaseItem(d.question_id, d.unit_id, f.question.question, f.question.answer,
                        f.prediction, d.rationale)
        if d.category == "skill_gap":
            skill.setdefault(d.task_type, []).append(item)
        elif d.category == "interface" and d.target == "system":
            system.append(item)
        elif d.category == "interface" and d.target.startswith("tool:"):
            tools.setdefault(d.target[5:], []).append(item)
    skill_packs = {t: CasePack(t, tuple(items[:MAX_FAILURES_PER_PACK]),
                               _successes_for(t, successes))
                   for t, items in sorted(skill.items())}
    return DiagnosisResult(
        diagnoses=tuple(diagnoses), skill_packs=skill_packs,
        system_pack=CasePack("system", tuple(system[:MAX_FAILURES_PER_PACK])) if system else None,
        tool_packs={n: CasePack(f"tool:{n}", tuple(items[:MAX_FAILURES_PER_PACK]))
                    for n, items in sorted(tools.items())})


def _successes_for(task_type: str, successes: Sequence[tuple[Question, str]]) -> tuple[CaseItem, ...]:
    chosen = sorted((q for q, _ in successes if q.task_type == task_type),
                    key=lambda q: q.question_id)[:MAX_SUCCESSES_PER_PACK]
    answers = {q.question_id: a for q, a in successes}
    return tuple(CaseItem(q.question_id, q.unit_id, q.question, q.answer,
                          answers[q.question_id], "answered correctly") for q in chosen)


def merge_packs(packs: Sequence[CasePack], target: str) -> CasePack | None:
    """Accumulated packs of an epoch as one pack (deduplicated, capped)."""
    seen: dict[str, CaseItem] = {}
    for pack in packs:
        for item in pack.failures:
            seen.setdefault(item.question_id, item)
    items = [seen[k] for k in sorted(seen)][:MAX_FAILURES_PER_PACK * 2]
    return CasePack(target, tuple(items)) if items else None
