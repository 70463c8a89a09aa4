"""What one tool call produced, as the agent's trajectory records it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.types import ToolSpec


class ToolUnavailable(Exception):
    """A declared tool that cannot be offered (bad schema, server that did not start)."""


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    output: str  # what the model is shown
    error: str = ""  # why it failed (empty when ok)
    latency_ms: float = 0.0
    fault: str = ""  # the injected fault's kind, if this call was faulted

    def record(self) -> dict[str, Any]:
        """The fields a trajectory step gets (beside turn, name, arguments)."""
        out: dict[str, Any] = {
            "status": "ok" if self.ok else "error",
            "latency_ms": round(self.latency_ms, 2),
        }
        if self.error:
            out["error"] = self.error[:500]
        if self.fault:
            out["fault"] = self.fault
        return out


def checked_spec(name: str, description: str, parameters: Any) -> ToolSpec:
    """A ToolSpec whose parameters are a valid JSON schema of an object, else ToolUnavailable."""
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ToolUnavailable(f"tool {name!r}: parameters must be a JSON schema of type object")
    import jsonschema  # 40 ms of import: only for benchmarks that declare tools

    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as e:
        raise ToolUnavailable(f"tool {name!r}: invalid parameters schema: {e.message}") from None
    return ToolSpec(name=name, description=description or name, parameters=parameters)


def argument_error(spec: ToolSpec, arguments: Any) -> str:
    """Why `arguments` do not fit the tool's schema ('' when they do)."""
    if not isinstance(arguments, dict):
        return "arguments are not a JSON object"
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(spec.parameters).iter_errors(arguments)
    )
    return "" if error is None else f"bad arguments: {error.message[:300]}"


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
