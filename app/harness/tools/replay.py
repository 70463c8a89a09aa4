"""Replay tools (`kind = "replay"`): a tool that answers the agent's calls from recorded
observations instead of running anything (docs/tools.md#replay-tools).

The recording is a JSON Lines file of the benchmark folder, one recorded call a line:
`{"question_id", "tool", "arguments", "observation", "error"?}` (what `ingest
--to-benchmark` writes from traces with tool calls). A call is answered when its question,
tool and arguments (compared as JSON values: key order and spacing do not count) were
recorded; any other call gets the fixed `NOT_RECORDED` observation, as an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.tools.result import ToolResult

NOT_RECORDED = "not recorded: the recording has no answer to this call (tool and arguments)"
MAX_RECORDING_BYTES = 256 * 1024 * 1024
MAX_OBSERVATION_CHARS = 100_000


def call_key(arguments: Any) -> str:
    """The arguments as canonical JSON (a JSON text is read first: recorded arguments are
    often the text the model wrote)."""
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Recording:
    """(question id, tool, canonical arguments) -> (observation, error)."""

    answers: dict[tuple[str, str, str], tuple[str, bool]] = field(default_factory=dict)

    def answer(self, question_id: str, tool: str, arguments: Any) -> ToolResult:
        found = self.answers.get((question_id, tool, call_key(arguments)))
        if found is None:
            return ToolResult(False, NOT_RECORDED, "not recorded")
        text, error = found
        return ToolResult(not error, text, "recorded error" if error else "")


def load(path: Path, tools: set[str]) -> Recording:
    """The recorded calls of `tools` in `path`; a bad line is one UserError naming file:line."""
    if path.stat().st_size > MAX_RECORDING_BYTES:
        raise UserError(f"{path}: larger than {MAX_RECORDING_BYTES // 2**20} MB")
    rec = Recording()
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise UserError(f"{path}:{n}: not JSON ({e.msg})") from None
            if not isinstance(row, dict) or not all(
                isinstance(row.get(k), str) for k in ("question_id", "tool", "observation")
            ):
                raise UserError(
                    f"{path}:{n}: a recorded call needs string question_id, tool and observation"
                )
            if row["tool"] in tools:
                key = (row["question_id"], row["tool"], call_key(row.get("arguments", {})))
                text = row["observation"][:MAX_OBSERVATION_CHARS]
                rec.answers.setdefault(key, (text, bool(row.get("error"))))
    return rec
