"""Evolution calls: the evolver proposes structured edits, code applies them
(docs/architecture.md#a-step).

The model's reply is untrusted: it is parsed defensively, clipped to the edit budget, and
applied by `apply_edits`, which refuses any edit that targets another file or the protected
momentum block. Nothing the model says is executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from string import Template
from typing import Any

from core.errors import BudgetExceeded
from core.evolution.diagnose import CasePack
from core.evolution.edits import (
    MOMENTUM_END,
    MOMENTUM_START,
    ClipInfo,
    Edit,
    EditReport,
    ParsedEdits,
    RejectedEdit,
    applied_edits,
    apply_edits,
    format_blacklist,
    parse_edits,
    rank_clip,
    sanitize_text,
)
from core.evolution.repeats import strip_edit_annotations
from core.jsonscan import find_json_object
from core.protocols import LLMProvider
from core.structured import Attempt, FormatLadder, structured_complete


class EvolutionStatus(StrEnum):
    """How one evolution call ended (stored in evolutions.status)."""

    OK = "ok"  # the file changed
    NO_CHANGE = "no_change"  # edits parsed, none changed the file
    PARSE_FAILED = "parse_failed"  # the reply held no usable edit
    PROVIDER_ERROR = "provider_error"  # the model call failed


class TargetKind(StrEnum):
    """Which file an evolution call rewrites (stored in evolutions.target_kind)."""

    SKILL = "skill"  # a task type's skill file (app/harness/training/step.py)
    SYSTEM = "system"  # the system prompt (app/harness/training/slow_update.py)
    TOOL = "tool"  # a tool's description (app/harness/training/slow_update.py)


@dataclass(frozen=True)
class EvolutionRecord:
    """One evolution call, typed; `to_dict` is its JSON form (step reports, harness.db).

    `apply_report[i]` is the report of `edits[i]` (the edits kept by the clip, in order), so the
    two have the same length; a record that breaks this is refused at construction rather than
    losing edits when they are paired up.
    """

    status: EvolutionStatus
    target_kind: TargetKind
    target_file: str
    original: str
    evolved: str
    task_type: str = ""
    edits: tuple[Edit, ...] = ()
    apply_report: tuple[EditReport, ...] = ()
    suggestions: tuple[str, ...] = ()
    clip: ClipInfo | None = None  # None: no reply was parsed (a provider error)
    parse_errors: tuple[str, ...] = ()
    source_version: str = ""
    request_summary: str = ""
    attempts: tuple[Attempt, ...] = ()

    def __post_init__(self) -> None:
        if len(self.edits) != len(self.apply_report):
            raise ValueError(
                f"EvolutionRecord: {len(self.edits)} edit(s) but "
                f"{len(self.apply_report)} apply report(s)"
            )
        for position, report in enumerate(self.apply_report):
            if report.index != position:
                raise ValueError(
                    f"EvolutionRecord: apply report {position} is for edit {report.index}"
                )

    @property
    def changed(self) -> bool:
        return self.status == EvolutionStatus.OK

    def applied(self) -> tuple[Edit, ...]:
        """The edits that changed the file: only these count as tried (and maybe rejected)."""
        return applied_edits(self.edits, self.apply_report)

    def to_dict(self) -> dict[str, Any]:
        """JSON-plain: edits, reports and clip as objects; `clip` is {} when there was none."""
        data = asdict(self)
        data["clip"] = asdict(self.clip) if self.clip is not None else {}
        return data


def skill_prompt(
    template: str,
    *,
    task_type: str,
    file: str,
    skill: str,
    pack: CasePack,
    budget: int,
    rejected: Sequence[RejectedEdit],
) -> str:
    return Template(template).safe_substitute(
        task_type=task_type,
        file=file,
        skill=skill,
        cases=pack.render(),
        budget=budget,
        rejected=format_blacklist(rejected) or "(none)",
    )


def prompt_file_prompt(
    template: str, *, file: str, text: str, pack: CasePack, budget: int, tool: str = ""
) -> str:
    return Template(template).safe_substitute(
        file=file, prompt=text, cases=pack.render(), budget=budget, tool=tool
    )


def process_reply(
    reply: str,
    *,
    original: str,
    target_file: str,
    budget: int,
    target_kind: TargetKind,
    task_type: str = "",
    source_version: str = "",
    request_summary: str = "",
) -> EvolutionRecord:
    parsed = without_annotations(parse_edits(reply))
    copied = placeholder_problems(parsed.edits)
    if copied:  # never apply the prompt's own example text
        bad = {i for i, e in enumerate(parsed.edits) if placeholder_problems([e])}
        parsed = replace(
            parsed,
            edits=tuple(e for i, e in enumerate(parsed.edits) if i not in bad),
            errors=(*parsed.errors, *copied),
        )
    kept, clip = rank_clip(parsed.edits, budget)
    evolved, reports = apply_edits(original, kept, target_file)
    if not parsed.edits and parsed.errors:
        status = EvolutionStatus.PARSE_FAILED
    elif evolved != original:
        status = EvolutionStatus.OK
    else:
        status = EvolutionStatus.NO_CHANGE
    return EvolutionRecord(
        status=status,
        target_kind=target_kind,
        target_file=target_file,
        original=original,
        evolved=evolved,
        task_type=task_type,
        edits=kept,
        apply_report=reports,
        suggestions=parsed.suggestions,
        clip=clip,
        parse_errors=parsed.errors,
        source_version=source_version,
        request_summary=request_summary,
    )


def without_annotations(parsed: ParsedEdits) -> ParsedEdits:
    """The edits with the rejected list's annotations taken out of their new text
    (core/evolution/repeats.py `strip_annotations`): a small evolver copies "(rejected: …)"
    from the list it is shown into the rule it writes. An edit left with no new text is
    dropped, with an error naming it."""
    edits, errors = [], []
    for index, edit in enumerate(parsed.edits):
        stripped = strip_edit_annotations(edit)
        if stripped is not edit and _needed_text_lost(edit, stripped):
            errors.append(f"edit {index}: its text was only the rejected list's annotation")
            continue
        edits.append(stripped)
    if not errors and all(a is b for a, b in zip(edits, parsed.edits, strict=True)):
        return parsed
    return replace(parsed, edits=tuple(edits), errors=(*parsed.errors, *errors))


def _needed_text_lost(before: Edit, after: Edit) -> bool:
    return (bool(before.content.strip()) and not after.content.strip()) or (
        bool(before.new.strip()) and not after.new.strip()
    )


# Free text the model writes: bounded (a grammar-constrained small model otherwise runs on
# inside a string), one line, no quotes or angle brackets (the placeholders are `<...>`).
NEW_TEXT = {"type": "string", "pattern": r'^[^<>"\\\n]{3,200}$'}


def _edit_schema(
    op: str, required: tuple[str, ...], section: dict[str, Any], old: dict[str, Any]
) -> dict[str, Any]:
    props: dict[str, Any] = {"op": {"type": "string", "const": op}, "section": section}
    for key in required:
        props[key] = old if key == "old" else NEW_TEXT
    if op == "add":
        props["priority"] = {"type": "integer"}
    props["rationale"] = {"type": "string", "maxLength": 200}
    return {"type": "object", "properties": props, "required": ["op", "section", *required]}


def edits_schema(original: str = "") -> dict[str, Any]:
    """The reply's JSON schema, one shape per op so a grammar-constrained model cannot leave
    out what its op needs. Given the file, `section` must be one of its section titles and
    `old` one of its lines, as `apply_edits` requires anyway."""
    sections = section_titles(original) if original else ()
    lines = editable_lines(original)
    section = (
        {"type": "string", "enum": list(sections)}
        if sections
        else {"type": "string", "minLength": 1, "maxLength": 80}
    )
    old = {"type": "string", "enum": list(lines)} if lines else NEW_TEXT
    shapes = [_edit_schema("add", ("content",), section, old)]
    if lines or not original:
        shapes += [
            _edit_schema("replace", ("old", "new"), section, old),
            _edit_schema("delete", ("old",), section, old),
        ]
    return {
        "type": "object",
        "properties": {
            "edits": {"type": "array", "maxItems": 8, "items": {"anyOf": shapes}},
            "suggestions": {
                "type": "array",
                "maxItems": 3,
                "items": {"type": "string", "maxLength": 200},
            },
        },
        "required": ["edits"],
    }


def editable_lines(text: str) -> tuple[str, ...]:
    """The file's non-empty lines outside headings and the protected momentum block."""
    out, inside = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if MOMENTUM_START in stripped:
            inside = True
        if not inside and stripped and not stripped.startswith(("#", "<!--")):
            out.append(stripped)
        if MOMENTUM_END in stripped:
            inside = False
    return tuple(dict.fromkeys(out))[:60]


EDITS_SCHEMA: dict[str, Any] = edits_schema()


# The example values of prompts/evolve_*.md: a model that copies them proposes nothing.
PLACEHOLDERS = ("<one rule>", "<title>", "<exact text>", "<exact line>", "<text>")


def placeholder_problems(edits: Sequence[Edit], sections: tuple[str, ...] = ()) -> list[str]:
    """A message naming the edits that copy the prompt's example text (and the real sections);
    empty when none do."""
    bad = [
        i
        for i, e in enumerate(edits)
        if any(
            ph in (getattr(e, k, "") or "")
            for k in ("section", "content", "old", "new")
            for ph in PLACEHOLDERS
        )
    ]
    if not bad:
        return []
    hint = f"; this file's sections: {', '.join(sections)}" if sections else ""
    return [
        f"edit(s) {', '.join(map(str, bad))} copy the prompt's placeholder text "
        f"({', '.join(PLACEHOLDERS)}) instead of real rules and section titles{hint}"
    ]


def section_titles(text: str) -> tuple[str, ...]:
    import re

    return tuple(
        dict.fromkeys(
            m.group(1).strip() for m in re.finditer(r"^#{2,6}\s+(.+)$", text, re.MULTILINE)
        )
    )


def edits_value(reply: str, sections: tuple[str, ...] = ()) -> tuple[Any, str]:
    """(the parsed edits, "") when the reply holds usable edits or a deliberate empty list;
    (None, the parse errors) otherwise: that reply earns a repair request."""
    parsed = parse_edits(reply)
    copied = placeholder_problems(parsed.edits, sections)
    if copied and all(placeholder_problems([e]) for e in parsed.edits):
        return None, "; ".join(copied)[:300]
    if parsed.edits or not parsed.errors:
        return parsed, ""
    return None, "; ".join(parsed.errors)[:300]


async def evolve(
    provider: LLMProvider,
    prompt: str,
    *,
    original: str,
    target_file: str,
    budget: int,
    target_kind: TargetKind,
    task_type: str = "",
    source_version: str = "",
    request_summary: str = "",
    ladder: FormatLadder | None = None,
) -> EvolutionRecord:
    """One evolver call (plus one repair request if its reply does not parse); provider
    failures become a record, never an exception. `ladder` picks the response format."""
    try:
        result = await structured_complete(
            provider,
            [{"role": "user", "content": prompt}],
            parse=lambda text: edits_value(text, section_titles(original)),
            schema=edits_schema(original),
            ladder=ladder,
            role="evolver",
            name="edits",
        )
    except Exception as e:
        if isinstance(e, BudgetExceeded):
            raise
        attempts = tuple(getattr(e, "attempts", []))
        return EvolutionRecord(
            status=EvolutionStatus.PROVIDER_ERROR,
            target_kind=target_kind,
            target_file=target_file,
            original=original,
            evolved=original,
            task_type=task_type,
            parse_errors=(f"{type(e).__name__}",),
            source_version=source_version,
            request_summary=request_summary,
            attempts=attempts,
        )
    record = process_reply(
        result.text,
        original=original,
        target_file=target_file,
        budget=budget,
        target_kind=target_kind,
        task_type=task_type,
        source_version=source_version,
        request_summary=request_summary,
    )
    return replace(record, attempts=tuple(result.attempts))


def momentum_guidance(reply: str, max_lines: int = 8, max_chars: int = 800) -> str | None:
    """The guidance block from a momentum reply, sanitised; None when unusable."""
    obj = find_json_object(reply, ("guidance",))
    text = obj.get("guidance") if isinstance(obj, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    text = sanitize_text(text).replace(MOMENTUM_START, "").replace(MOMENTUM_END, "")
    lines = [ln.rstrip() for ln in text.strip().splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(lines[:max_lines])[:max_chars] or None
