"""Two-stage diagnosis: classify each failure's cause, then build case packs
(docs/architecture.md#a-step).

Stage 1 triages each failure: deterministic rules decide what the log already shows
(core/evolution/triage.py), and only the rest go to the judge model (`judge_model`), which says
whether the cause is missing context, an interface/tool ambiguity, a runtime fault, or a real
skill gap. Every diagnosis records who decided it (`decided_by`). Stage 2 groups the failures:
skill gaps into per-task-type skill packs (with contrasting successes), system-prompt and tool
ambiguities into packs that accumulate for the epoch's slow update.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from string import Template
from typing import TYPE_CHECKING, Any

from core.errors import BudgetExceeded
from core.jsonscan import find_json_object
from core.protocols import LLMProvider
from core.types import Question

if TYPE_CHECKING:
    import anyio

    from core.structured import Attempt, FormatLadder

CATEGORIES = ("missing_context", "interface", "runtime_fault", "skill_gap")  # the judge's
# Decided only by a rule (core/evolution/triage.py): the right skill was never opened, so no
# edit of its text can reach the agent; the slow update trains descriptions for these instead.
ACTIVATION = "activation"
# Failures no skill, prompt or tool edit can fix: shown to the user (step report summaries,
# `report`, the TUI) because no evolution step acts on them.
NOWHERE_CATEGORIES = ("missing_context", "runtime_fault")
JUDGE = "judge"  # `Diagnosis.decided_by` of a judge's diagnosis; a rule's is "rule:<name>"
MAX_FAILURES_PER_PACK = 12
MAX_SUCCESSES_PER_PACK = 3
# how a failure carried from an earlier step's pack is marked: its answer may predate an edit
EARLIER_NOTE = "(shown in an earlier step; the answer is from then)"
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
    decided_by: str = JUDGE

    @property
    def contradiction(self) -> str | None:
        """How category and target disagree, or None. prompts/diagnose_failure.md: a skill gap
        is the skill file's fault, an interface problem the system prompt's or a tool's; the
        other categories name no text to fix, so any target goes with them."""
        if self.degraded:
            return None  # a placeholder's category/target were never the judge's
        if self.category == "skill_gap" and self.target != "skill":
            return f"skill_gap with target {self.target}"
        if self.category == "interface" and self.target == "skill":
            return "interface with target skill"
        return None


@dataclass(frozen=True)
class FailureTally:
    """One task type's diagnosed failures in a batch, as its step report records them."""

    failures: int
    by_category: dict[str, int]  # category -> failures, most first (ties by name)
    contradictory: int  # diagnoses whose category and target disagree
    decided_by: dict[str, int] = field(default_factory=dict)  # "judge" / "rule:<name>" -> n

    @classmethod
    def of(cls, diagnoses: Sequence[Diagnosis]) -> FailureTally:
        contradictory = sum(d.contradiction is not None for d in diagnoses)
        return cls(
            len(diagnoses),
            _most_first(d.category for d in diagnoses),
            contradictory,
            _most_first(d.decided_by for d in diagnoses),
        )

    def describe(self) -> str:
        """`11 failures, none a skill gap (runtime_fault 11)`, or `no failures in this batch`."""
        if not self.failures:
            return "no failures in this batch"
        gaps = self.by_category.get("skill_gap", 0)
        kinds = ", ".join(f"{c} {n}" for c, n in self.by_category.items())
        text = f"{_plural(self.failures, 'failure')}, "
        text += f"{_plural(gaps, 'skill gap')} ({kinds})" if gaps else f"none a skill gap ({kinds})"
        return text

    def contradiction_note(self) -> str:
        """`; 2 contradictory diagnoses`, appended to every step report's summary (a gate's,
        a skip's); "" when there are none."""
        if not self.contradictory:
            return ""
        return f"; {_plural(self.contradictory, 'contradictory diagnosis')}"

    def nowhere_note(self) -> str:
        """`; 3 failures no edit can fix (missing_context 2, runtime_fault 1)`, appended to
        every step report's summary, since no evolution acts on them; "" when there are none."""
        found = {c: n for c, n in self.by_category.items() if c in NOWHERE_CATEGORIES}
        if not found:
            return ""
        kinds = ", ".join(f"{c} {n}" for c, n in found.items())
        return f"; {_plural(sum(found.values()), 'failure')} no edit can fix ({kinds})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "failures": self.failures,
            "by_category": dict(self.by_category),
            "contradictory": self.contradictory,
            "decided_by": dict(self.decided_by),
        }


def _most_first(keys: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _plural(n: int, noun: str) -> str:
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-2]}es" if noun.endswith("is") else f"{n} {noun}s"


@dataclass(frozen=True)
class CaseItem:
    question_id: str
    unit_id: str
    question: str
    answer: str
    prediction: str
    note: str = ""

    def render(self, kind: str) -> str:
        return (
            f'<{kind} id="{self.question_id}">\n<question>\n{self.question}\n</question>\n'
            f"<expected>{self.answer}</expected>\n<got>{self.prediction}</got>\n"
            f"<diagnosis>{self.note}</diagnosis>\n</{kind}>"
        )


@dataclass(frozen=True)
class CasePack:
    """Failures (and for skills, contrasting successes) for one evolution target."""

    target: str  # task type, "system" or "tool:<name>"
    failures: tuple[CaseItem, ...]
    successes: tuple[CaseItem, ...] = ()
    # a stronger model's verified answers to some of these very failures (`distill`,
    # app/distill.py): worked examples; empty outside a distillation, so no pack changes
    examples: tuple[CaseItem, ...] = ()

    @property
    def unit_ids(self) -> frozenset[str]:
        return frozenset(c.unit_id for c in (*self.failures, *self.successes))

    @property
    def tool_name(self) -> str | None:
        """The tool a "tool:<name>" pack is for; None for a task type's or the system's."""
        return self.target.removeprefix("tool:") if self.target.startswith("tool:") else None

    def render(self) -> str:
        parts = [c.render("failure") for c in self.failures]
        parts += [c.render("success") for c in self.successes]
        parts += [c.render("worked_example") for c in self.examples]
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "failures": [asdict(c) for c in self.failures],
            "successes": [asdict(c) for c in self.successes],
            **({"examples": [asdict(c) for c in self.examples]} if self.examples else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CasePack:
        return cls(
            target=data["target"],
            failures=tuple(CaseItem(**c) for c in data["failures"]),
            successes=tuple(CaseItem(**c) for c in data.get("successes", [])),
            examples=tuple(CaseItem(**c) for c in data.get("examples", [])),
        )


@dataclass(frozen=True)
class DiagnosisResult:
    diagnoses: tuple[Diagnosis, ...]
    skill_packs: dict[str, CasePack] = field(default_factory=dict)
    system_pack: CasePack | None = None
    tool_packs: dict[str, CasePack] = field(default_factory=dict)

    @property
    def degraded_count(self) -> int:
        return sum(d.degraded for d in self.diagnoses)

    def tally(self, task_type: str) -> FailureTally:
        return FailureTally.of([d for d in self.diagnoses if d.task_type == task_type])

    @property
    def contradictory(self) -> tuple[Diagnosis, ...]:
        return tuple(d for d in self.diagnoses if d.contradiction is not None)


def render_trajectory(steps: Sequence[Mapping[str, Any]], limit: int = TRAJECTORY_CHARS) -> str:
    lines = []
    for s in steps:
        kind = s.get("type")
        if kind == "model":
            calls = "; ".join(
                f"{c['name']}({json.dumps(c['arguments'])})" for c in s.get("tool_calls", [])
            )
            lines.append(f"[model] {s.get('text', '')}" + (f" -> calls {calls}" if calls else ""))
        elif kind == "tool":
            lines.append(
                f"[tool {s.get('name')} {json.dumps(s.get('arguments'))}] {s.get('output', '')}"
            )
        elif kind == "error":
            lines.append(f"[error] {s.get('error', '')}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n[... trajectory truncated ...]"


def diagnosis_prompt(template: str, failure: Failure) -> str:
    q = failure.question
    return Template(template).safe_substitute(
        task_type=q.task_type,
        question=q.question,
        answer=q.answer,
        prediction=failure.prediction or "(no answer)",
        stop_reason=failure.stop_reason,
        system=failure.system,
        skill=failure.skill,
        tools=failure.tools,
        trajectory=render_trajectory(failure.steps),
    )


DIAGNOSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "target": {"type": "string", "maxLength": 64},
        # bounded: a grammar-constrained small model otherwise runs on inside the string
        "rationale": {"type": "string", "maxLength": 300},
    },
    "required": ["category", "target", "rationale"],
}
DIAGNOSIS_MAX_TOKENS = 400
RAW_NOTE = "(diagnosis did not parse: raw failure)"


_CUT_CATEGORY = re.compile(
    r'^\s*\{\s*"category"\s*:\s*"(\w+)"\s*,\s*"target"\s*:\s*"([^"\n]{1,64})"'
)
SALVAGED = "salvaged: the reply was cut off after its category and target"


def diagnosis_value(reply: str) -> tuple[dict[str, Any] | None, str]:
    """(the diagnosis object, "") or (None, why it is unusable).

    A reply that opens a valid object and names its category and target, then never closes
    (a small model running on inside the rationale until max_tokens) is salvaged: returned
    with the note `SALVAGED` as its second element, so callers record it as such."""
    obj = find_json_object(reply or "", ("category",))
    if not isinstance(obj, dict):
        cut = _CUT_CATEGORY.match(reply or "")
        if cut and cut.group(1) in CATEGORIES:
            return {
                "category": cut.group(1),
                "target": cut.group(2),
                "rationale": "(cut off) " + reply[cut.end() :].strip(' ,:"')[:200],
            }, SALVAGED
        return None, "no JSON object in the reply" + _looks_like(reply or "")
    category = obj.get("category")
    if category not in CATEGORIES:
        return (
            None,
            f"'category' must be one of {', '.join(CATEGORIES)} (got {str(category)[:40]!r})",
        )
    return obj, ""


def _looks_like(reply: str) -> str:
    if not reply.strip():
        return " (empty reply)"
    if re.search(r"^\s*(def |import |print\(|for .+:|class )", reply, re.MULTILINE):
        return " (it looks like code)"
    return ""


def parse_diagnosis(reply: str, question: Question, *, error: str = "") -> Diagnosis:
    """Defensive: anything unparseable is a degraded diagnosis, never an exception."""
    obj, why = diagnosis_value(reply)
    if obj is None:
        return Diagnosis(
            question.question_id,
            question.unit_id,
            question.task_type,
            "unknown",
            "skill",
            f"diagnosis reply did not parse: {error or why}"[:500],
            degraded=True,
        )
    target = obj.get("target")
    if not isinstance(target, str):
        target = "skill"
    if target not in ("skill", "system") and not re.fullmatch(r"tool:[\w-]{1,64}", target):
        target = "skill"
    rationale = str(obj.get("rationale", ""))[:500]
    return Diagnosis(
        question.question_id,
        question.unit_id,
        question.task_type,
        obj["category"],
        target,
        rationale,
    )


@dataclass(frozen=True)
class DiagnosisCall:
    """What one diagnosis cost: its requests (see core.structured.Attempt)."""

    question_id: str
    attempts: tuple[dict[str, Any], ...]


async def diagnose_failures(
    provider: LLMProvider,
    template: str,
    failures: Sequence[Failure],
    *,
    limiter: anyio.CapacityLimiter | None = None,
    ladder: FormatLadder | None = None,
    role: str = "judge",
    calls: list[DiagnosisCall] | None = None,
) -> list[Diagnosis]:
    """Stage 1, one judge call per failure (concurrency bounded by the caller's limiter).

    Each call asks for a structured reply at `ladder`'s response format and gets one repair
    request when its reply does not parse; its requests are appended to `calls`."""
    from core.concurrency import fan_out
    from core.structured import structured_complete

    async def diagnose(failure: Failure) -> Diagnosis:
        prompt = diagnosis_prompt(template, failure)
        attempts: list[Attempt] = []
        try:
            result = await structured_complete(
                provider,
                [{"role": "user", "content": prompt}],
                parse=diagnosis_value,
                schema=DIAGNOSIS_SCHEMA,
                ladder=ladder,
                role=role,
                max_tokens=DIAGNOSIS_MAX_TOKENS,
                name="diagnosis",
            )
            attempts = result.attempts
            diagnosis = parse_diagnosis(
                result.text if result.ok else "", failure.question, error=result.error
            )
        except Exception as e:  # a judge failure degrades this diagnosis only
            if isinstance(e, BudgetExceeded):
                raise
            attempts = list(getattr(e, "attempts", []))
            diagnosis = parse_diagnosis(
                "", failure.question, error=f"model call failed ({type(e).__name__})"
            )
        if calls is not None:
            calls.append(
                DiagnosisCall(failure.question.question_id, tuple(a.to_dict() for a in attempts))
            )
        return diagnosis

    return await fan_out(diagnose, failures, limiter=limiter)


def raw_diagnoses(diagnoses: Sequence[Diagnosis]) -> list[Diagnosis]:
    """Degraded diagnoses treated as skill gaps, so their raw failures still reach the evolver
    (used when too many diagnoses did not parse to trust the rest)."""
    return [
        Diagnosis(
            d.question_id, d.unit_id, d.task_type, "skill_gap", "skill", RAW_NOTE, degraded=True
        )
        if d.degraded
        else d
        for d in diagnoses
    ]


def build_packs(
    diagnoses: Sequence[Diagnosis],
    failures: Sequence[Failure],
    successes: Sequence[tuple[Question, str]],
) -> DiagnosisResult:
    """Stage 2: group diagnosed failures into skill, system and tool case packs."""
    by_id = {f.question.question_id: f for f in failures}
    skill: dict[str, list[CaseItem]] = {}
    system: list[CaseItem] = []
    tools: dict[str, list[CaseItem]] = {}
    for d in sorted(diagnoses, key=lambda d: d.question_id):
        f = by_id[d.question_id]
        item = CaseItem(
            d.question_id,
            d.unit_id,
            f.question.question,
            f.question.answer,
            f.prediction,
            d.rationale,
        )
        if d.category == "skill_gap":
            skill.setdefault(d.task_type, []).append(item)
        elif d.category == "interface" and d.target == "system":
            system.append(item)
        elif d.category == "interface" and d.target.startswith("tool:"):
            tools.setdefault(d.target[5:], []).append(item)
    skill_packs = {
        t: CasePack(t, tuple(items[:MAX_FAILURES_PER_PACK]), _successes_for(t, successes))
        for t, items in sorted(skill.items())
    }
    return DiagnosisResult(
        diagnoses=tuple(diagnoses),
        skill_packs=skill_packs,
        system_pack=CasePack("system", tuple(system[:MAX_FAILURES_PER_PACK])) if system else None,
        tool_packs={
            n: CasePack(f"tool:{n}", tuple(items[:MAX_FAILURES_PER_PACK]))
            for n, items in sorted(tools.items())
        },
    )


def with_earlier_failures(
    pack: CasePack, earlier: Sequence[CaseItem], still_failing: Callable[[str], bool]
) -> CasePack:
    """The pack with failures its task type's evolver was shown in earlier steps appended,
    newest first, up to MAX_FAILURES_PER_PACK in all: those not in the pack whose question
    `still_failing` (by question id). Why: the evolver proposes rules for the failures it is
    shown, and the gate can confirm an edit that carries several rules where it cannot confirm
    one (docs/training.md, "How many edits a candidate carries"); an earlier pack's questions
    are left out of every gate ladder already, so showing them again costs the gate nothing."""
    room = MAX_FAILURES_PER_PACK - len(pack.failures)
    fresh = {c.question_id for c in pack.failures}
    carried = [
        c for c in reversed(earlier) if c.question_id not in fresh and still_failing(c.question_id)
    ][: max(room, 0)]
    if not carried:
        return pack
    marked = (replace(c, note=f"{EARLIER_NOTE} {c.note}") for c in carried)
    return replace(pack, failures=(*pack.failures, *marked))


def with_worked_examples(
    result: DiagnosisResult, examples: Mapping[str, tuple[str, str]]
) -> DiagnosisResult:
    """Each skill pack with the worked examples (question id -> (teacher model, its verified
    answer)) of the failures it holds; the other packs as they were."""
    if not examples:
        return result
    packs = {}
    for t, pack in result.skill_packs.items():
        worked = tuple(
            CaseItem(
                c.question_id,
                c.unit_id,
                c.question,
                c.answer,
                examples[c.question_id][1],
                f"verified answer of {examples[c.question_id][0]} to this failed case",
            )
            for c in pack.failures
            if c.question_id in examples
        )
        packs[t] = CasePack(pack.target, pack.failures, pack.successes, worked)
    return DiagnosisResult(result.diagnoses, packs, result.system_pack, result.tool_packs)


def _successes_for(
    task_type: str, successes: Sequence[tuple[Question, str]]
) -> tuple[CaseItem, ...]:
    chosen = sorted(
        (q for q, _ in successes if q.task_type == task_type), key=lambda q: q.question_id
    )[:MAX_SUCCESSES_PER_PACK]
    answers = {q.question_id: a for q, a in successes}
    return tuple(
        CaseItem(
            q.question_id,
            q.unit_id,
            q.question,
            q.answer,
            answers[q.question_id],
            "answered correctly",
        )
        for q in chosen
    )


def merge_packs(packs: Sequence[CasePack], target: str) -> CasePack | None:
    """Accumulated packs of an epoch as one pack (deduplicated, capped)."""
    seen: dict[str, CaseItem] = {}
    worked: dict[str, CaseItem] = {}
    for pack in packs:
        for item in pack.failures:
            seen.setdefault(item.question_id, item)
        for item in pack.examples:
            worked.setdefault(item.question_id, item)
    items = [seen[k] for k in sorted(seen)][: MAX_FAILURES_PER_PACK * 2]
    kept = {i.question_id for i in items}
    examples = tuple(worked[k] for k in sorted(worked) if k in kept)
    return CasePack(target, tuple(items), examples=examples) if items else None
