"""Find a JSON object inside untrusted model text (fences, prose, trailing junk)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_JSON_ATTEMPTS = 64
MAX_RAW_CHARS = 2_000_000


def find_json_object(raw: str, wanted_keys: Iterable[str] = (),
                     max_attempts: int = MAX_JSON_ATTEMPTS) -> dict[str, Any] | None:
    """The first object holding any of `wanted_keys`, else the first object at all.

    Scans `{` positions with raw_decode; the attempt cap bounds the work on adversarial input.
    """
    if not isinstance(raw, str) or len(raw) > MAX_RAW_CHARS:
        return None
    wanted = tuple(wanted_keys)
    decoder = json.JSONDecoder()
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
    return first
