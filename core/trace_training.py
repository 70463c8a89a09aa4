"""What an ingested trace (core/traces.py) may teach, by the feedback recorded with it, and the
trace as chat messages for the multi-turn training files (app/harness/data/export_ingest.py).

A trace is one recorded branch, judged by whoever used it, not by a checker: its feedback is
the only verdict there is.
- good: an edited output (the edit is the target, and the output it replaced is a rejected
  one), else every explicit score at or above GOOD_SCORE, else an accepted output;
- bad: an explicit score below BAD_SCORE, or the user abandoned it;
- error: the run or a tool call failed: kept for triage, never a training target of any kind;
- none: no verdict (no feedback, a middling score, only a retry, no final answer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from core.traces import GOOD_SCORE, FeedbackKind, Role, StepKind, Trace

BAD_SCORE = 0.5  # an explicit score below this (on 0..1) is a bad verdict


class TraceUse(StrEnum):
    GOOD = "good"
    BAD = "bad"
    ERROR = "error"
    NONE = "none"


@dataclass(frozen=True)
class TraceVerdict:
    use: TraceUse
    why: str
    target: str = ""  # the final reply to teach (GOOD): the edit, or the trace's own
    replaced: str = ""  # the reply an edit replaced (a rejected output), "" when none


def verdict(trace: Trace) -> TraceVerdict:
    if trace.failed:
        return TraceVerdict(TraceUse.ERROR, "error trace (kept for triage)")
    final = trace.final_answer.strip()
    for f in trace.feedback:
        if f.kind == FeedbackKind.EDITED and f.text.strip():
            edit = f.text.strip()
            return TraceVerdict(
                TraceUse.GOOD, "edited output", edit, final if final != edit else ""
            )
    if not final:
        why = "partial trace (it ends on a tool call)" if trace.partial else "no final answer"
        return TraceVerdict(TraceUse.NONE, why)
    scores = [f.score for f in trace.feedback if f.kind == FeedbackKind.SCORE]
    known = [s for s in scores if s is not None]
    if known and min(known) < BAD_SCORE:
        return TraceVerdict(TraceUse.BAD, "scored below the bad mark")
    if known and min(known) >= GOOD_SCORE:
        return TraceVerdict(TraceUse.GOOD, "good score", final)
    if known:
        return TraceVerdict(TraceUse.NONE, "a score between the bad and the good mark")
    if any(f.kind == FeedbackKind.ACCEPTED for f in trace.feedback):
        return TraceVerdict(TraceUse.GOOD, "accepted output", final)
    if any(f.kind == FeedbackKind.ABANDONED for f in trace.feedback):
        return TraceVerdict(TraceUse.BAD, "abandoned")
    return TraceVerdict(TraceUse.NONE, "no verdict in its feedback")


def final_index(trace: Trace) -> int:
    """The step index of the final reply (the last assistant message with text), -1 if none."""
    for i in range(len(trace.steps) - 1, -1, -1):
        s = trace.steps[i]
        if s.kind == StepKind.MESSAGE and s.role == Role.ASSISTANT and s.text.strip():
            return i
    return -1


def chat_messages(trace: Trace, *, final: str, json_arguments: bool) -> list[dict[str, Any]]:
    """The trace up to its final reply as OpenAI-style chat messages (tool calls on the
    assistant message that made them, each result as a `tool` message answering its call),
    the final reply replaced by `final`. Arguments as JSON text (`json_arguments`, OpenAI's
    chat fine-tuning) or as objects (chat templates, TRL)."""
    end = final_index(trace)
    out: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str]] = []  # (call id, tool name), not yet answered
    for i, s in enumerate(trace.steps[: end + 1] if end >= 0 else trace.steps):
        if s.kind == StepKind.TOOL_CALL:
            cid = s.tool_call_id or f"call_{i}"
            open_calls.append((cid, s.tool_name))
            if not out or out[-1]["role"] != "assistant":
                out.append({"role": "assistant", "content": ""})
            out[-1].setdefault("tool_calls", []).append(
                _call(cid, s.tool_name, s.arguments, json_arguments)
            )
        elif s.kind == StepKind.OBSERVATION:
            cid = _answered(open_calls, s.tool_call_id, s.tool_name)
            out.append({"role": "tool", "tool_call_id": cid, "content": s.text})
        else:
            text = final if i == end else s.text
            out.append({"role": s.role.value, "content": text})
    if end < 0 and final:  # an edit of a trace that ended without a reply
        out.append({"role": "assistant", "content": final})
    return out


def _call(cid: str, name: str, arguments: str, as_json: bool) -> dict[str, Any]:
    args: Any = arguments or "{}"
    if not as_json:
        try:
            args = json.loads(args)
        except ValueError:
            args = None
        if not isinstance(args, dict):
            args = {"_raw": arguments}  # arguments that were not an object, kept visible
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _answered(open_calls: list[tuple[str, str]], cid: str, name: str) -> str:
    """The call an observation answers: its own id, else the oldest open call of its tool."""
    for j, (open_id, open_name) in enumerate(open_calls):
        if (cid and open_id == cid) or (not cid and open_name == name):
            del open_calls[j]
            return open_id
    return cid or "call_unmatched"


def split_prompt(
    messages: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the opening system and user messages, the rest): a preference record's prompt and
    its completion."""
    n = 0
    while n < len(messages) and messages[n]["role"] in ("system", "user"):
        n += 1
    return list(messages[:n]), list(messages[n:])


def tool_names(trace: Trace) -> list[str]:
    return sorted(
        {s.tool_name for s in trace.steps if s.kind == StepKind.TOOL_CALL and s.tool_name}
    )
