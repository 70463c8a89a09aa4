"""Chat messages as the formats record them (OpenAI `messages`, LangChain's serialised
messages, Inspect content parts), and the JSON-ish values inside them, into trace steps."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

from app.secrets import scrub_deep
from core.traces import Role, TraceBuilder, as_text

MAX_LITERAL_CHARS = 200_000
# the C scanner `json.loads` ends in, called without the two whitespace regexes around it
# (each span's messages are JSON in a string: this is on the hot path of ingest); typeshed
# does not declare the attribute JSONDecoder.__init__ sets
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


# -- OpenAI-style chat messages (shared with chat-json, LangSmith, Langfuse) --------------------
def chat_message(b: TraceBuilder, m: dict[str, Any], default: Role = Role.USER) -> None:
    role = role_of(m.get("role") or m.get("type"), default)
    content = m.get("content")
    if isinstance(content, list):
        content = parts_text(content)
    if role == Role.TOOL:
        b.observation(io_text(content), str(m.get("name") or ""), str(m.get("tool_call_id") or ""))
        return
    b.message(role, io_text(content))
    calls = m.get("tool_calls")
    if calls is None and isinstance(m.get("additional_kwargs"), dict):
        calls = m["additional_kwargs"].get("tool_calls")
    for call in _list(calls):
        tool_call(b, call)


def tool_call(b: TraceBuilder, call: dict[str, Any]) -> None:
    function = call.get("function")
    if isinstance(function, dict):  # OpenAI: {id, type, function: {name, arguments}}
        b.tool_call(
            str(function.get("name") or ""),
            args_text(function.get("arguments")),
            str(call.get("id") or ""),
        )
    else:  # LangChain: {id, name, args}; Inspect: {id, function, arguments}
        name = call.get("name") or (function if isinstance(function, str) else "")
        b.tool_call(
            str(name or ""),
            args_text(call.get("args", call.get("arguments"))),
            str(call.get("id") or ""),
        )


_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "human": Role.USER,
    "assistant": Role.ASSISTANT,
    "ai": Role.ASSISTANT,
    "model": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}


def role_of(value: Any, default: Role = Role.USER) -> Role:
    return _ROLES.get(str(value or "").lower(), default)


def parts_text(parts: list[Any]) -> str:
    texts = []
    for p in parts:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text", None):
            texts.append(as_text(p.get("content", p.get("text"))))
    return join_texts([t for t in texts if t])


SEAM_CHARS = 256  # text each side of a seam between parts that a secret may straddle


def join_texts(texts: list[str]) -> str:
    """The text parts of one message, one a line; parts whose seam splits a secret (an AWS
    key id in two parts) are joined without the newline, so redaction, which reads the
    stored text, sees the secret whole."""
    if len(texts) < 2:
        return texts[0] if texts else ""
    out = [texts[0]]
    for text in texts[1:]:
        out.append("" if _splits_secret(out[-1], text) else "\n")
        out.append(text)
    return "".join(out)


def _splits_secret(left: str, right: str) -> bool:
    tail, head = left[-SEAM_CHARS:], right[:SEAM_CHARS]
    seam = tail + head
    found = scrub_deep(seam)
    return found != seam and found != scrub_deep(tail) + scrub_deep(head)


def parse_json(value: Any) -> Any:
    """A JSON-encoded attribute decoded; deprecated `gen_ai.prompt` values were often Python
    literals (single quotes), read with `ast.literal_eval` (literals only, size-bounded)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{":
        return value
    try:
        parsed, end = _SCAN(text, 0)
        if end == len(text):  # what json.loads checks (the text is stripped already)
            return parsed
    except (ValueError, RecursionError, StopIteration):
        pass
    if len(text) <= MAX_LITERAL_CHARS:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return value


def io_text(value: Any) -> str:
    parsed = parse_json(value)
    if isinstance(parsed, dict) and set(parsed) <= {"content", "role"} and "content" in parsed:
        return as_text(parsed["content"])
    return as_text(value if isinstance(value, str) else parsed)


def args_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        parsed = parse_json(value)
        if isinstance(parsed, dict | list):
            return json.dumps(parsed, sort_keys=True, ensure_ascii=False)
        return value
    return as_text(value)


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
