"""Find a JSON object inside untrusted model text (fences, prose, trailing junk).

Small models sometimes answer with a Python dict literal (single quotes, True/None) instead of
JSON; when no JSON object is found, such a literal is read with `ast.literal_eval`, which
evaluates literals only and never runs code.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from typing import Any

MAX_JSON_ATTEMPTS = 64
MAX_RAW_CHARS = 2_000_000
MAX_LITERAL_CHARS = 20_000


def find_json_object(
    raw: str, wanted_keys: Iterable[str] = (), max_attempts: int = MAX_JSON_ATTEMPTS
) -> dict[str, Any] | None:
    """The first object holding any of `wanted_keys`, else the first object at all.

    Scans `{` positions with raw_decode; the attempt cap bounds the work on adversarial input.
    """
    if not isinstance(raw, str) or len(raw) > MAX_RAW_CHARS:
        return None
    wanted = tuple(wanted_keys)
    # strict=False: raw newlines and tabs inside strings, which small models write, are kept
    decoder = json.JSONDecoder(strict=False)
    first: dict[str, Any] | None = None
    pos = raw.find("{")
    attempts = 0
    while pos != -1 and attempts < max_attempts:
        attempts += 1
        try:
            value, end = decoder.raw_decode(raw, pos)
        except (ValueError, RecursionError):
            pos = raw.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            if not wanted or any(k in value for k in wanted):
                return value
            first = first if first is not None else value
        pos = raw.find("{", max(end, pos + 1))
    if first is None:
        return find_python_dict(raw, wanted, max_attempts)
    return first


def find_python_dict(
    raw: str, wanted: tuple[str, ...] = (), max_attempts: int = MAX_JSON_ATTEMPTS
) -> dict[str, Any] | None:
    """The first Python dict literal with string keys (holding any of `wanted`, if given)."""
    pos = raw.find("{")
    attempts = 0
    while pos != -1 and attempts < max_attempts:
        attempts += 1
        end = _matching_brace(raw, pos)
        if end is not None and end - pos <= MAX_LITERAL_CHARS:
            try:
                value = ast.literal_eval(raw[pos : end + 1])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                value = None
            if (
                isinstance(value, dict)
                and all(isinstance(k, str) for k in value)
                and (not wanted or any(k in value for k in wanted))
            ):
                plain: dict[str, Any] = json.loads(json.dumps(value, default=str))
                return plain  # plain JSON types only
        pos = raw.find("{", pos + 1)
    return None


def _matching_brace(raw: str, start: int) -> int | None:
    depth, quote, escaped = 0, "", False
    for i in range(start, min(len(raw), start + MAX_LITERAL_CHARS + 1)):
        ch = raw[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None
