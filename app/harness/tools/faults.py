"""Faults at the tool boundary (docs/tools.md#faults): which call fails, and how.

A fault is drawn per (seed, question, branch, turn, tool) from a hash, so a re-run injects
the same faults, and only on the first call of a tool in a rollout: the retry always reaches
the real tool, so every injected fault has a recovery path. `error` and `timeout` do not run
the tool (nothing changed, like a call that never arrived); the others run it and spoil what
comes back (the tool's effect happened, its answer was lost), so a tool that changes state
must be safe to repeat for those kinds to be recoverable.
"""

from __future__ import annotations

import hashlib
import json

from app.harness.tools.result import ToolResult
from app.harness.tools.spec import FaultKind, Faults

RUNS_THE_TOOL = frozenset({FaultKind.TRUNCATED, FaultKind.MALFORMED_JSON, FaultKind.EMPTY})


def draw(faults: Faults, question_id: str, branch: int, turn: int, tool: str) -> FaultKind | None:
    """The fault for this call, or None (a pure function of its arguments)."""
    if faults.tool_rate <= 0:
        return None
    key = f"{faults.seed}|{question_id}|{branch}|{turn}|{tool}".encode()
    digest = hashlib.sha256(key).digest()
    if int.from_bytes(digest[:8], "big") / 2**64 >= faults.tool_rate:
        return None
    return faults.kinds[int.from_bytes(digest[8:12], "big") % len(faults.kinds)]


def without_running(kind: FaultKind, timeout_s: float) -> ToolResult:
    """The result of a fault that stops the call before the tool runs."""
    if kind == FaultKind.TIMEOUT:
        reason = f"timed out after {timeout_s:g} s (injected)"
    else:
        reason = "tool failed with exit code 1 (injected)"
    return ToolResult(False, f"error: {reason}", reason, fault=kind.value)


def spoil(kind: FaultKind, real: ToolResult) -> ToolResult:
    """What comes back when the tool ran but its answer was lost on the way."""
    text = real.output
    if kind == FaultKind.EMPTY:
        text = ""
    elif kind == FaultKind.TRUNCATED:
        text = text[: len(text) // 2]
    else:  # malformed JSON: half of a JSON value that never closes
        text = json.dumps({"result": text})[: max(12, len(text) // 2 + 11)]
    return ToolResult(real.ok, text, real.error, real.latency_ms, fault=kind.value)
