"""Structured skill-file edits: parse the evolver's reply, apply it safely
(docs/architecture.md#a-step).

The evolver never writes a skill file directly. It proposes `add` / `replace` / `delete` edits on
markdown sections; this module parses that (untrusted) reply defensively and applies the edits
with one report per edit, refusing anything that escapes the target file, touches the protected
momentum block, removes the H1 title or empties the skill. Pure: no I/O, never executes input.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.jsonscan import find_json_object

OPS = ("add", "replace", "delete")
MAX_EDITS = 50
MAX_FIELD_CHARS = 4000
MAX_SECTION_CHARS = 200
MAX_FILE_CHARS = 300
MAX_SUGGESTIONS = 20
MAX_RAW_CHARS = 2_000_000
MAX_JSON_ATTEMPTS = 64

MOMENTUM_START = "<!-- momentum:start -->"
MOMENTUM_END = "<!-- momentum:end -->"

# Loose form of the markers: an edit that carries anything resembling one is refused, so a
# model cannot forge or split the protected block with spacing/case variants.
_MARKER_LIKE = re.compile(r"<!--\s*momentum\s*:\s*(start|end)\s*-->", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_CLOSING_HASHES = re.compile(r"\s+#+\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
_TOP_BULLET = re.compile(r"^([-*+]|\d+[.)])\s+\S")
_DRIVE = re.compile(r"^[A-Za-z]:")
# C0/C1 controls except \t and \n; bidi overrides/isolates that can hide text from reviewers.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_SEP = re.compile("[\u2028\u2029]")


# ---------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Edit:
    """One proposed change to one section of a skill file."""

    op: str
    section: str
    content: str = ""
    old: str = ""
    new: str = ""
    file: str = ""
    rationale: str = ""
    priority: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Edit:
        """Strict inverse of to_dict, for checkpointed probation edits."""
        if not isinstance(data, dict):
            raise ValueError(f"Edit: expected an object, got {type(data).__name__}")
        values: dict[str, Any] = {
            name: _require(data, name, str, "Edit")
            for name in ("op", "section", "content", "old", "new", "file", "rationale")
        }
        priority = _require(data, "priority", (int, float), "Edit")
        return cls(**values, priority=float(priority))


@dataclass(frozen=True)
class ParsedEdits:
    edits: tuple[Edit, ...]
    suggestions: tuple[str, ...]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class EditReport:
    """What happened to edit number `index`; `reason` explains a refusal or names the change."""

    index: int
    op: str
    section: str
    applied: bool
    reason: str


@dataclass(frozen=True)
class ClipInfo:
    """Which edits (original indices) survived the rank clip."""

    kept: tuple[int, ...]
    dropped: tuple[int, ...]
    budget: int

    @property
    def clipped(self) -> bool:
        return bool(self.dropped)


@dataclass(frozen=True)
class RejectedEdit:
    """An applied edit the gate (or probation) refused: shown to the evolver as a blacklist."""

    task_type: str
    op: str
    section: str
    text: str
    reason: str
    epoch: int
    step: int

    @classmethod
    def from_edit(
        cls, task_type: str, edit: Edit, reason: str, epoch: int, step: int
    ) -> RejectedEdit:
        """`text` is what characterises the edit: the new text, else the removed text."""
        text = edit.new or edit.content or edit.old
        return cls(task_type, edit.op, edit.section, text, reason, epoch, step)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> RejectedEdit:
        """Strict: a checkpoint we wrote ourselves must round-trip; corruption fails loudly."""
        if not isinstance(data, dict):
            raise ValueError(f"RejectedEdit: expected an object, got {type(data).__name__}")
        values: dict[str, Any] = {}
        for name in ("task_type", "op", "section", "text", "reason"):
            values[name] = _require(data, name, str, "RejectedEdit")
        for name in ("epoch", "step"):
            values[name] = _require(data, name, int, "RejectedEdit")
        return cls(**values)


def _require(data: dict[str, Any], name: str, kind: type | tuple[type, ...], owner: str) -> Any:
    """One checkpoint field of the expected type (bool is not a number here)."""
    if name not in data:
        raise ValueError(f"{owner}: missing field {name!r}")
    value = data[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{owner}: field {name!r} has the wrong type")
    return value


# ---------------------------------------------------------------------------------------------
# Parsing the evolver's reply


def sanitize_text(value: str) -> str:
    """Strip controls (keeping \\n, \\t) and fix lone surrogates so the file stays valid UTF-8."""
    value = value.replace("\r\n", "\n")
    value = _LINE_SEP.sub("\n", value)
    value = _CONTROL.sub("", value)
    return _SURROGATE.sub("\ufffd", value)


def _find_object(raw: str) -> dict[str, Any] | None:
    """The first JSON object carrying `edits`/`suggestions`, else the first object at all."""
    return find_json_object(raw, ("edits", "suggestions"), MAX_JSON_ATTEMPTS)


def parse_edits(raw: str) -> ParsedEdits:
    """Parse the evolver's reply; never raises. Bad edits become errors, good ones still parse."""
    try:
        return _parse(raw)
    except Exception as exc:  # last resort: untrusted input must never crash the run
        return ParsedEdits((), (), (f"internal parse failure: {type(exc).__name__}",))


def _parse(raw: Any) -> ParsedEdits:
    if not isinstance(raw, str):
        return ParsedEdits((), (), (f"reply is not a string (got {type(raw).__name__})",))
    if len(raw) > MAX_RAW_CHARS:
        return ParsedEdits((), (), (f"reply too long ({len(raw)} chars > {MAX_RAW_CHARS})",))
    obj = _find_object(raw)
    if obj is None:
        return ParsedEdits((), (), ("invalid JSON: no JSON object found in the reply",))
    errors: list[str] = []
    edits = _parse_edit_list(obj, errors)
    suggestions = _parse_suggestions(obj.get("suggestions"), errors)
    return ParsedEdits(tuple(edits), tuple(suggestions), tuple(errors))


def _parse_edit_list(obj: dict[str, Any], errors: list[str]) -> list[Edit]:
    if "edits" not in obj and "suggestions" not in obj:
        errors.append("missing 'edits' list in the JSON object")
        return []
    items = obj.get("edits")
    if items is None:
        return []
    if not isinstance(items, list):
        errors.append(f"'edits' must be a list (got {type(items).__name__})")
        return []
    if len(items) > MAX_EDITS:
        errors.append(f"{len(items)} edits given, only the first {MAX_EDITS} kept")
        items = items[:MAX_EDITS]
    edits: list[Edit] = []
    for index, item in enumerate(items):
        edit = _parse_one(index, item, errors)
        if edit is not None:
            edits.append(edit)
    return edits


def _parse_suggestions(value: Any, errors: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        errors.append(f"'suggestions' must be a list (got {type(value).__name__})")
        return []
    if len(value) > MAX_SUGGESTIONS:
        errors.append(f"{len(value)} suggestions given, only the first {MAX_SUGGESTIONS} kept")
    out: list[str] = []
    for index, item in enumerate(value[:MAX_SUGGESTIONS]):
        if not isinstance(item, str):
            errors.append(f"suggestion {index}: not a string (got {type(item).__name__})")
            continue
        text = _cap(f"suggestion {index}", "text", sanitize_text(item).strip(), errors)
        if text:
            out.append(text)
    return out


def _cap(where: str, name: str, text: str, errors: list[str]) -> str:
    """Truncate free text (content/new/rationale) and say so: losing a tail beats losing all."""
    if len(text) <= MAX_FIELD_CHARS:
        return text
    errors.append(f"{where}: field '{name}' truncated from {len(text)} to {MAX_FIELD_CHARS} chars")
    return text[:MAX_FIELD_CHARS]


class _Bad(Exception):
    """A field problem that disqualifies the whole edit."""


class _Refused(Exception):
    """An edit that cannot be applied; the message is the report's reason."""


def _opt_str(item: dict[str, Any], name: str) -> str | None:
    """A string field or None when absent/null; any other type disqualifies the edit."""
    value = item.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"field '{name}' must be a string (got {type(value).__name__})")
    return sanitize_text(value)


def _parse_one(index: int, item: Any, errors: list[str]) -> Edit | None:
    where = f"edit {index}"
    if not isinstance(item, dict):
        errors.append(f"{where}: not an object (got {type(item).__name__})")
        return None
    try:
        return _build_edit(where, item, errors)
    except _Bad as bad:
        errors.append(f"{where}: {bad}")
        return None


def _build_edit(where: str, item: dict[str, Any], errors: list[str]) -> Edit:
    op = _parse_op(item)
    section = _parse_section(item)
    file = _parse_file(item)
    content, old, new = _parse_bodies(op, item)
    return Edit(
        op=op,
        section=section,
        content=_cap(where, "content", content, errors),
        old=old,
        new=_cap(where, "new", new, errors),
        file=file,
        rationale=_cap(where, "rationale", (_lenient_str(where, item, errors)), errors),
        priority=_parse_priority(where, item, errors),
    )


def _parse_op(item: dict[str, Any]) -> str:
    op = _opt_str(item, "op")
    if op is None or not op.strip():
        raise _Bad("missing 'op'")
    norm = op.strip().lower()
    if norm not in OPS:
        raise _Bad(f"unknown op {op[:40]!r} (expected add, replace or delete)")
    return norm


def _parse_section(item: dict[str, Any]) -> str:
    section = _opt_str(item, "section")
    if section is None:
        raise _Bad("missing 'section'")
    section = section.strip().lstrip("#").strip()
    if not section:
        raise _Bad("empty 'section'")
    if "\n" in section:
        raise _Bad("'section' must be a single heading title")
    if len(section) > MAX_SECTION_CHARS:
        raise _Bad(f"'section' too long ({len(section)} chars > {MAX_SECTION_CHARS})")
    return section


def _parse_file(item: dict[str, Any]) -> str:
    file = _opt_str(item, "file") or ""
    if len(file) > MAX_FILE_CHARS:
        raise _Bad(f"'file' too long ({len(file)} chars > {MAX_FILE_CHARS})")
    return file.strip()


def _parse_bodies(op: str, item: dict[str, Any]) -> tuple[str, str, str]:
    """(content, old, new) after the per-op shape rules; irrelevant fields are dropped."""
    content = _opt_str(item, "content")
    if op == "add":
        if content is None or not content.strip():
            raise _Bad("add needs a non-empty 'content'")
        return content, "", ""
    old = _parse_old(item)
    new = _opt_str(item, "new")
    if op == "replace":
        if old is not None:
            if new is None:
                raise _Bad("replace with 'old' needs 'new'")
            return "", old, new
        if content is None or not content.strip():
            raise _Bad("replace needs 'old' and 'new', or a non-empty 'content'")
        return content, "", ""
    return "", old or "", ""


def _parse_old(item: dict[str, Any]) -> str | None:
    """`old` selects text to change: empty or truncated it would aim at the wrong span."""
    old = _opt_str(item, "old")
    if old is not None and not old.strip():
        raise _Bad("empty 'old' (omit it to target the whole section)")
    if old is not None and len(old) > MAX_FIELD_CHARS:
        raise _Bad(f"'old' too long ({len(old)} chars > {MAX_FIELD_CHARS})")
    return old


def _lenient_str(where: str, item: dict[str, Any], errors: list[str]) -> str:
    """Rationale is advisory: a wrong type is reported but does not sink the edit."""
    value = item.get("rationale")
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(f"{where}: 'rationale' ignored (not a string)")
        return ""
    return sanitize_text(value).strip()


def _parse_priority(where: str, item: dict[str, Any], errors: list[str]) -> float:
    """Priority only orders the rank clip: a bad value falls back to 0 with a warning."""
    value = item.get("priority")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.append(f"{where}: 'priority' ignored (not a number)")
        return 0.0
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        errors.append(f"{where}: 'priority' ignored (not finite)")
        return 0.0
    return number


# ---------------------------------------------------------------------------------------------
# Path safety


def _normalise_path(path: str) -> str:
    return "/".join(p for p in path.split("/") if p not in ("", "."))


def check_target(path: str, allowed_file: str) -> str | None:
    """Why an edit's `file` may not be written, or None. "" means the task type's own target.

    Pure string checks; the app layer additionally resolves symlinks on disk.
    """
    if path == "":
        return None
    reason = _unsafe_path(path)
    if reason:
        return reason
    if _normalise_path(path) != _normalise_path(allowed_file):
        return f"targets {_show(path)}, only {_show(allowed_file)} may be edited"
    return None


def _unsafe_path(path: str) -> str | None:
    if "\0" in path:
        return "path contains NUL"
    if _CONTROL.search(path) or "\n" in path or "\t" in path:
        return "path contains control characters"
    if "\\" in path:
        return "path contains a backslash"
    if _DRIVE.match(path):
        return "path has a drive letter"
    if path.startswith("/"):
        return "path is absolute"
    if ".." in path.split("/"):
        return "path contains '..'"
    if not path.endswith(".md"):
        return "not a .md file"
    return None


def _show(text: str, limit: int = 80) -> str:
    """Quote untrusted text for a reason string: one line, bounded."""
    flat = " ".join(sanitize_text(text).split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


# ---------------------------------------------------------------------------------------------
# Markdown layout


@dataclass(frozen=True)
class _Heading:
    line: int
    level: int
    key: str


@dataclass(frozen=True)
class _Layout:
    """Headings outside code fences and the momentum block; the protected lines."""

    headings: tuple[_Heading, ...]
    span: tuple[int, int] | None  # inclusive line range of a well-formed momentum block
    protected: frozenset[int]
    fenced: frozenset[int]


def _clean_title(section: str) -> str:
    """The heading text an edit names: `## Rules` and ` Rules ` both mean `Rules`."""
    return " ".join(section.strip().lstrip("#").split())


def _title_key(title: str) -> str:
    return " ".join(title.split()).casefold()


def _heading_of(line: str) -> tuple[int, str] | None:
    match = _HEADING.match(line)
    if not match:
        return None
    return len(match.group(1)), _CLOSING_HASHES.sub("", match.group(2)).strip()


def _momentum_offsets(text: str) -> tuple[int, int] | None:
    """(start of START, start of END) when exactly one well-ordered pair exists."""
    if text.count(MOMENTUM_START) != 1 or text.count(MOMENTUM_END) != 1:
        return None
    start, end = text.find(MOMENTUM_START), text.find(MOMENTUM_END)
    return (start, end) if start + len(MOMENTUM_START) <= end else None


def _momentum_span(lines: list[str]) -> tuple[int, int] | None:
    offsets = _momentum_offsets("\n".join(lines))
    if offsets is None:
        return None
    first = next(i for i, line in enumerate(lines) if MOMENTUM_START in line)
    last = next(i for i, line in enumerate(lines) if MOMENTUM_END in line)
    return first, last


def _fence_marker(line: str) -> str | None:
    stripped = line.lstrip()
    for char in "`~":
        if stripped.startswith(char * 3):
            return char * (len(stripped) - len(stripped.lstrip(char)))
    return None


def _closes(line: str, marker: str | None, fence: str) -> bool:
    """A closing fence: the same character, at least as long, nothing else on the line."""
    if not marker or marker[0] != fence[0] or len(marker) < len(fence):
        return False
    return not line.strip().strip(fence[0])


def _layout(lines: list[str]) -> _Layout:
    span = _momentum_span(lines)
    protected = {
        i for i, line in enumerate(lines) if MOMENTUM_START in line or MOMENTUM_END in line
    }
    if span:
        protected.update(range(span[0], span[1] + 1))
    headings: list[_Heading] = []
    fenced: set[int] = set()
    fence: str | None = None
    for i, line in enumerate(lines):
        if i in protected:
            continue
        marker = _fence_marker(line)
        if fence is not None:
            fenced.add(i)
            fence = None if _closes(line, marker, fence) else fence
            continue
        if marker:
            fence = marker
            fenced.add(i)
            continue
        heading = _heading_of(line)
        if heading:
            headings.append(_Heading(i, heading[0], _title_key(heading[1])))
    return _Layout(tuple(headings), span, frozenset(protected), frozenset(fenced))


def _section_end(layout: _Layout, pos: int, n_lines: int) -> int:
    """End (exclusive) of heading `pos`'s section; the momentum block is a hard boundary."""
    head = layout.headings[pos]
    end = n_lines
    for other in layout.headings[pos + 1 :]:
        if other.level <= head.level:
            end = other.line
            break
    if layout.span and head.line < layout.span[0] < end:
        end = layout.span[0]
    return end


def _direct_end(layout: _Layout, pos: int, section_end: int) -> int:
    """End of the section's own text, before its first sub-heading."""
    if pos + 1 < len(layout.headings):
        return min(layout.headings[pos + 1].line, section_end)
    return section_end


def _find_section(layout: _Layout, section: str) -> int | None:
    key = _title_key(_clean_title(section))
    for pos, head in enumerate(layout.headings):
        if head.key == key:
            return pos
    return None


def _section_in_momentum(lines: list[str], layout: _Layout, section: str) -> bool:
    if not layout.span:
        return False
    key = _title_key(_clean_title(section))
    for i in range(layout.span[0], layout.span[1] + 1):
        heading = _heading_of(lines[i])
        if heading and _title_key(heading[1]) == key:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Momentum block


def momentum_inner(text: str) -> str | None:
    """The guidance between the markers, stripped; None when markers are absent or malformed."""
    offsets = _momentum_offsets(text)
    if offsets is None:
        return None
    return text[offsets[0] + len(MOMENTUM_START) : offsets[1]].strip()


_MOMENTUM_BLOCK = re.compile(
    re.escape(MOMENTUM_START) + r".*?" + re.escape(MOMENTUM_END) + r"\n?", re.DOTALL
)
_MARKER_LINE = re.compile(_MARKER_LIKE.pattern + r"\n?", re.IGNORECASE)


def strip_momentum(text: str) -> str:
    """A skill file without our internals, for anything that leaves the workspace (an exported
    SKILL.md, a training-data prompt): the momentum block with its guidance, then any
    marker-like leftover (case or spacing variants, an unpaired marker)."""
    return _MARKER_LINE.sub("", _MOMENTUM_BLOCK.sub("", text))


def replace_momentum(text: str, block: str) -> str:
    """Set the momentum block's content (the only way it changes).

    Markers are appended at the end when absent; stray/malformed markers are removed first so
    the file ends up with exactly one well-formed block.
    """
    inner = _MARKER_LIKE.sub("", sanitize_text(block)).strip()
    body = f"{inner}\n" if inner else ""
    offsets = _momentum_offsets(text)
    if offsets is not None:
        head = text[: offsets[0] + len(MOMENTUM_START)]
        return f"{head}\n{body}{text[offsets[1] :]}"
    cleaned = text.replace(MOMENTUM_START, "").replace(MOMENTUM_END, "").rstrip()
    prefix = f"{cleaned}\n\n" if cleaned else ""
    return f"{prefix}{MOMENTUM_START}\n{body}{MOMENTUM_END}\n"


# ---------------------------------------------------------------------------------------------
# Applying edits


def _block_lines(text: str) -> list[str]:
    """Edit text as lines: newlines normalised, trailing spaces and outer blank lines dropped."""
    lines = [line.rstrip() for line in sanitize_text(text).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    """True when `needle` occurs as consecutive lines (compared stripped) in `haystack`."""
    hay = [line.strip() for line in haystack]
    ned = [line.strip() for line in needle]
    width = len(ned)
    return any(hay[i : i + width] == ned for i in range(len(hay) - width + 1))


def _insert(lines: list[str], at: int, block: list[str], sep_before: bool) -> list[str]:
    """Insert `block` at `at`, with a blank line before (if asked) and after when needed."""
    before = [""] if sep_before and at > 0 and lines[at - 1].strip() else []
    after = [""] if at < len(lines) and lines[at].strip() else []
    return lines[:at] + before + block + after + lines[at:]


def _last_content(lines: list[str], start: int, end: int) -> int | None:
    for i in range(end - 1, start - 1, -1):
        if lines[i].strip():
            return i
    return None


def _add(lines: list[str], layout: _Layout, pos: int | None, edit: Edit) -> tuple[list[str], str]:
    block = _block_lines(edit.content)
    if not block:
        raise _Refused("add needs a non-empty 'content'")
    if pos is None:
        limit = layout.span[0] if layout.span else len(lines)
        anchor = _last_content(lines, 0, limit)
        at = 0 if anchor is None else anchor + 1
        heading = f"## {_clean_title(edit.section)}"
        return _insert(lines, at, [heading, "", *block], True), "created section"
    head = layout.headings[pos]
    end = _section_end(layout, pos, len(lines))
    if _contains_run(lines[head.line + 1 : end], block):
        raise _Refused("duplicate: the section already contains this text")
    direct = _direct_end(layout, pos, end)
    anchor = _last_content(lines, head.line + 1, direct)
    if anchor is None:
        return _insert(lines, head.line + 1, block, True), "added to section"
    joins_list = bool(_LIST_ITEM.match(lines[anchor]) and _LIST_ITEM.match(block[0]))
    return _insert(lines, anchor + 1, block, not joins_list), "added to section"


def _replace_section(lines: list[str], layout: _Layout, pos: int, edit: Edit) -> list[str]:
    head = layout.headings[pos]
    if head.level == 1:
        raise _Refused("would replace the whole skill under its H1 title; edit a sub-section")
    end = _section_end(layout, pos, len(lines))
    body = _block_lines(edit.content)
    if not body:
        raise _Refused("replace needs 'old' and 'new', or a non-empty 'content'")
    if _block_lines("\n".join(lines[head.line + 1 : end])) == body:
        raise _Refused("no change")
    tail: list[str] = []
    i = end
    while i > head.line + 1 and not lines[i - 1].strip():
        tail.append("")
        i -= 1
    if not tail and end < len(lines):
        tail = [""]
    return lines[: head.line + 1] + ["", *body] + tail + lines[end:]


def _delete_section(lines: list[str], layout: _Layout, pos: int) -> list[str]:
    head = layout.headings[pos]
    if head.level == 1:
        raise _Refused("would delete the file's H1 title")
    end = _section_end(layout, pos, len(lines))
    return lines[: head.line] + lines[end:]


def _locate(body: str, old: str) -> tuple[int, str]:
    """Position and needle of `old` in the body (exact, else stripped); refuse ambiguity."""
    for needle in (old, old.strip()):
        if needle and needle in body:
            count = body.count(needle)
            if count > 1:
                raise _Refused(f"'old' text is ambiguous ({count} matches); quote more context")
            return body.find(needle), needle
    return -1, ""


def _whole_lines(body: str, at: int, needle: str) -> tuple[int, int]:
    """Widen a deletion that covers whole lines to swallow one newline, leaving no blank."""
    end = at + len(needle)
    starts_line = at == 0 or body[at - 1] == "\n"
    ends_line = end == len(body) or body[end] == "\n"
    if starts_line and ends_line:
        if end < len(body):
            return at, end + 1
        if at > 0:
            return at - 1, end
    return at, end


def _replace_text(lines: list[str], layout: _Layout, pos: int, edit: Edit) -> list[str]:
    head = layout.headings[pos]
    end = _section_end(layout, pos, len(lines))
    body = "\n".join(lines[head.line + 1 : end])
    at, needle = _locate(body, edit.old)
    if at < 0:
        raise _Refused(_not_found_reason(lines, layout, edit.old))
    if edit.op == "delete":
        start, stop = _whole_lines(body, at, needle)
        new_body = body[:start] + body[stop:]
    else:
        replacement = "\n".join(line.rstrip() for line in sanitize_text(edit.new).split("\n"))
        new_body = body[:at] + replacement + body[at + len(needle) :]
    return lines[: head.line + 1] + new_body.split("\n") + lines[end:]


def _not_found_reason(lines: list[str], layout: _Layout, old: str) -> str:
    if layout.span:
        block = "\n".join(lines[layout.span[0] : layout.span[1] + 1])
        if old.strip() and old.strip() in block:
            return "'old' text is inside the protected momentum block"
    return "'old' text not found in the section"


def _precheck(edit: Edit, allowed_file: str) -> None:
    if edit.op not in OPS:
        raise _Refused(f"unknown op {_show(edit.op, 40)}")
    if not _clean_title(edit.section) or "\n" in edit.section:
        raise _Refused("invalid section title")
    reason = check_target(edit.file, allowed_file)
    if reason:
        raise _Refused(reason)
    if any(_MARKER_LIKE.search(t) for t in (edit.content, edit.old, edit.new, edit.section)):
        raise _Refused("touches the momentum block markers")
    fences = [t for t in (edit.content, edit.new) if t]
    if any(sum(1 for ln in t.split("\n") if _fence_marker(ln)) % 2 for t in fences):
        raise _Refused("unbalanced code fence in the new text")


def _apply_one(lines: list[str], edit: Edit, allowed_file: str) -> tuple[list[str], str]:
    _precheck(edit, allowed_file)
    layout = _layout(lines)
    pos = _find_section(layout, edit.section)
    if pos is None and edit.op != "add":
        if _section_in_momentum(lines, layout, edit.section):
            raise _Refused("section is inside the protected momentum block")
        raise _Refused(f"section {_show(edit.section)} not found")
    if edit.op == "add":
        return _add(lines, layout, pos, edit)
    assert pos is not None
    if edit.old:
        done = "replaced text" if edit.op == "replace" else "deleted text"
        return _replace_text(lines, layout, pos, edit), done
    if edit.op == "replace":
        return _replace_section(lines, layout, pos, edit), "replaced section"
    return _delete_section(lines, layout, pos), "deleted section"


def _protected_text(lines: list[str]) -> list[str]:
    layout = _layout(lines)
    return [lines[i] for i in sorted(layout.protected)]


def _h1_count(lines: list[str]) -> int:
    return sum(1 for h in _layout(lines).headings if h.level == 1)


def _has_content(lines: list[str]) -> bool:
    layout = _layout(lines)
    heads = {h.line for h in layout.headings}
    return any(
        line.strip() and i not in heads and i not in layout.protected
        for i, line in enumerate(lines)
    )


def _postcheck(before: list[str], after: list[str]) -> None:
    if after == before:
        raise _Refused("no change")
    if _protected_text(after) != _protected_text(before):
        raise _Refused("would change the protected momentum block")
    if _h1_count(before) and not _h1_count(after):
        raise _Refused("would delete the file's H1 title")
    if not _has_content(after):
        raise _Refused("would empty the skill")


def apply_edits(
    text: str, edits: Sequence[Edit], allowed_file: str
) -> tuple[str, tuple[EditReport, ...]]:
    """Apply edits in order, each on the result of the previous; one report per edit.

    A refused edit leaves the text untouched; the result is a pure function of the inputs.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    trailing_newline = text.endswith("\n")
    reports: list[EditReport] = []
    for index, edit in enumerate(edits):
        try:
            candidate, what = _apply_one(lines, edit, allowed_file)
            if trailing_newline and candidate and candidate[-1] != "":
                candidate = [*candidate, ""]
            _postcheck(lines, candidate)
        except _Refused as refused:
            reports.append(EditReport(index, edit.op, edit.section, False, str(refused)))
            continue
        lines = candidate
        reports.append(EditReport(index, edit.op, edit.section, True, what))
    if not any(r.applied for r in reports):
        return text, tuple(reports)
    return "\n".join(lines), tuple(reports)


# ---------------------------------------------------------------------------------------------
# Budget, blacklist, consolidation


def _rank_key(item: tuple[int, Edit]) -> tuple[float, int]:
    """NaN or non-numeric priorities rank last instead of breaking the sort."""
    index, edit = item
    try:
        priority = float(edit.priority)
    except (TypeError, ValueError):
        priority = -math.inf
    if math.isnan(priority):
        priority = -math.inf
    return -priority, index


def rank_clip(edits: Sequence[Edit], budget: int) -> tuple[tuple[Edit, ...], ClipInfo]:
    """Keep the best `budget` edits (priority desc, then original order), in original order."""
    budget = max(0, budget)
    ranked = sorted(enumerate(edits), key=_rank_key)
    kept = sorted(index for index, _ in ranked[:budget])
    dropped = sorted(index for index, _ in ranked[budget:])
    return tuple(edits[i] for i in kept), ClipInfo(tuple(kept), tuple(dropped), budget)


def applied_edits(edits: Sequence[Edit], reports: Sequence[EditReport]) -> tuple[Edit, ...]:
    """Edits whose report says applied: only these count as tried (and maybe rejected)."""
    done = sorted({r.index for r in reports if r.applied and 0 <= r.index < len(edits)})
    return tuple(edits[i] for i in done)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(sanitize_text(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_blacklist(rejected: Sequence[RejectedEdit], limit: int = 20) -> str:
    """Markdown list for the evolver prompt, newest first; untrusted text flattened to one line."""
    if not rejected:
        return "(none)"
    order = sorted(range(len(rejected)), key=lambda i: (rejected[i].epoch, rejected[i].step, i))
    newest = [rejected[i] for i in reversed(order)]
    shown = newest[: max(0, limit)]
    lines = [
        f"- [epoch {r.epoch}, step {r.step}] {_one_line(r.op, 20)} in "
        f'"{_one_line(r.section, 80)}": {_one_line(r.text, 200)} '
        f"(rejected: {_one_line(r.reason, 120)})"
        for r in shown
    ]
    if len(newest) > len(shown):
        lines.append(f"- ... and {len(newest) - len(shown)} older rejected edits not shown")
    return "\n".join(lines)


def _items(lines: list[str], start: int, end: int, skip: frozenset[int]) -> list[list[int]]:
    """Top-level bullet items (bullet line + indented continuation lines) as line-index lists."""
    items: list[list[int]] = []
    current: list[int] | None = None
    for i in range(start, end):
        line = lines[i]
        if i in skip:
            current = None
        elif _TOP_BULLET.match(line):
            current = [i]
            items.append(current)
        elif current is not None and line.strip() and line[:1] in (" ", "\t"):
            current.append(i)
        else:
            current = None
    return items


def _segments(layout: _Layout, n_lines: int) -> list[tuple[int, int]]:
    """Each heading's own text (to the next heading of any level), plus the preamble."""
    starts = [0] + [h.line + 1 for h in layout.headings]
    ends = [h.line for h in layout.headings] + [n_lines]
    return list(zip(starts, ends, strict=True))


def _duplicate_lines(lines: list[str], layout: _Layout, skip: frozenset[int]) -> set[int]:
    drop: set[int] = set()
    for start, end in _segments(layout, len(lines)):
        seen: set[tuple[str, ...]] = set()
        for item in _items(lines, start, end, skip):
            key = tuple(lines[i].rstrip() for i in item)
            if key in seen:
                drop.update(item)
            seen.add(key)
    return drop


def _appendix_overflow(
    lines: list[str], layout: _Layout, skip: frozenset[int], max_lines: int
) -> set[int]:
    drop: set[int] = set()
    for pos, head in enumerate(layout.headings):
        if head.key != "appendix":
            continue
        end = _section_end(layout, pos, len(lines))
        items = _items(lines, head.line + 1, end, skip)
        for item in items[: max(0, len(items) - max(0, max_lines))]:
            drop.update(item)
    return drop


def consolidate_appendix(text: str, max_lines: int) -> tuple[str, int]:
    """Dedupe bullets per section and keep only the newest `max_lines` Appendix bullets.

    The appendix is where accepted one-line lessons accumulate; without a cap it grows every
    epoch until it crowds out the rules. Code blocks and the momentum block are never touched.
    """
    lines = text.split("\n")
    layout = _layout(lines)
    skip = layout.protected | layout.fenced
    drop = _duplicate_lines(lines, layout, skip)
    kept = [line for i, line in enumerate(lines) if i not in drop]
    kept_layout = _layout(kept)
    kept_skip = kept_layout.protected | kept_layout.fenced
    overflow = _appendix_overflow(kept, kept_layout, kept_skip, max_lines)
    final = [line for i, line in enumerate(kept) if i not in overflow]
    return "\n".join(final), len(drop) + len(overflow)


def edit_set_key(edits: Sequence[Edit]) -> str:
    """One hypothesis per set of changes: the same edits proposed again, in any order and with
    any rationale or priority, give the same key (whitespace at the ends of texts ignored)."""
    parts = sorted(
        json.dumps([e.op, e.section.strip(), e.content.strip(), e.old.strip(), e.new.strip()])
        for e in edits
    )
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
