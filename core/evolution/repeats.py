"""Re-proposed candidates: the evolver's text without the blacklist's annotations, and the key
under which two candidates are the same hypothesis (docs/training.md, "A candidate is tested once").

The evolver is shown its task type's rejected edits as a list (core/evolution/edits.py
`format_blacklist`), each line framed as `- [epoch E, step S] add in "Rules": <text>
(rejected: <reason>)`. A small model copies that frame into the rule it writes (measured on
real-conventions: "(rejected: gate futility …)" came back inside a usernames rule, one more
each step), so `strip_annotations` takes it out of every edit before the edit is applied.

A candidate is its base file and its applied edits. `candidate_key` is the same for two
candidates when the base file is the same text and the edit sets are equal once each text is
normalised (`normalise_text`: annotations and list markers out, case folded, punctuation that does not join two
letters or digits dropped, whitespace collapsed) and the edits are put in order; priority and
rationale never count. Punctuation inside a word or number stays ("YYYY-MM-DD" is not
"YYYY/MM/DD", "team-surname" not "team surname"): it is often the very convention a rule states.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace

from core.evolution.edits import Edit

# "(rejected:" as format_blacklist writes it, in any case and spacing
_ANNOTATION_OPEN = re.compile(r"[ \t]*\(\s*rejected\s*:", re.IGNORECASE)
# the "[epoch E, step S]" a blacklist line starts with
_BLACKLIST_HEAD = re.compile(r"\[\s*epoch\s+\d+\s*,\s*step\s+\d+\s*\][ \t]*", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)


def strip_annotations(text: str) -> str:
    """`text` without the blacklist's frame: every "(rejected: …)" (to its closing bracket,
    nested brackets included, or to the end of its line when it is never closed) and every
    "[epoch E, step S]". A line that lost an annotation loses its trailing spaces too; a text
    left with no letter or digit once an annotation is out is empty (nothing of a rule was
    left). Any other text comes back unchanged."""
    out: list[str] = []
    changed = False
    for line in text.split("\n"):
        stripped = _strip_line(line)
        if stripped != line:
            changed = True
            stripped = stripped.rstrip()
        out.append(stripped)
    result = "\n".join(out)
    if changed and not any(c.isalnum() for c in result):
        return ""
    return result


def _strip_line(line: str) -> str:
    line = _BLACKLIST_HEAD.sub("", line)
    while (found := _ANNOTATION_OPEN.search(line)) is not None:
        end, depth = found.end(), 1
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        line = line[: found.start()] + line[end:]
    return line


def strip_edit_annotations(edit: Edit) -> Edit:
    """The edit with its new text (`content`, `new`) stripped. `old` and `section` must match
    the file as it is, so they are left alone."""
    content, new = strip_annotations(edit.content), strip_annotations(edit.new)
    if (content, new) == (edit.content, edit.new):
        return edit
    return replace(edit, content=content, new=new)


def normalise_text(text: str) -> str:
    """The text as two proposals of one rule share it: annotations and list markers ("- ",
    "1. ") out, case folded, punctuation (and symbols: backticks, quotes) dropped unless it
    stands between two letters or digits, whitespace collapsed."""
    text = _LIST_MARKER.sub("", strip_annotations(text)).casefold()
    kept = []
    for i, c in enumerate(text):
        if unicodedata.category(c)[0] in "PS":
            inside = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            kept.append(c if inside else " ")
        else:
            kept.append(c)
    return _SPACE.sub(" ", "".join(kept)).strip()


def normalised_edit(edit: Edit) -> tuple[str, str, str, str, str]:
    """(op, section, content, old, new), each text normalised."""
    return (
        edit.op.strip().casefold(),
        normalise_text(edit.section),
        normalise_text(edit.content),
        normalise_text(edit.old),
        normalise_text(edit.new),
    )


def candidate_key(base: str, edits: Sequence[Edit]) -> str:
    """One key per candidate: the base file's exact text and its normalised edit set (in any
    order; the same edit twice counts once). Equal keys: the same hypothesis."""
    parts = sorted({json.dumps(normalised_edit(e)) for e in edits})
    digest = hashlib.sha256()
    digest.update(hashlib.sha256(base.encode("utf-8", "surrogatepass")).digest())
    digest.update("\n".join(parts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:24]
