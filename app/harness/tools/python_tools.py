"""Python tools: `module:function` called in a sandboxed child with JSON arguments.

The schema comes from `parameters`/`description` when given, else from the function's
signature and docstring, read in a child too: the harness never imports a benchmark's code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.harness.tools.child import RESULT_MARK
from app.harness.tools.result import ToolResult, ToolUnavailable, as_text, checked_spec
from app.harness.tools.sandbox import Limits, Outcome, RunResult, SandboxPool
from app.harness.tools.spec import PythonTool, inside
from core.types import ToolSpec


def child_payload(run: RunResult) -> dict[str, Any] | None:
    """The JSON line child.py wrote last, or None when there is none (killed, garbled)."""
    for line in reversed(run.stdout.split("\n")):  # not splitlines: it splits at \x1e
        if line.startswith(RESULT_MARK):
            try:
                payload = json.loads(line[len(RESULT_MARK) :])
            except json.JSONDecodeError:
                return None
            return payload if isinstance(payload, dict) else None
    return None


def module_path(decl: PythonTool, bench_root: Path) -> list[str]:
    return [str(inside(bench_root, decl.path))]


async def describe(decl: PythonTool, bench_root: Path, pool: SandboxPool, cwd: Path) -> ToolSpec:
    """The tool's spec; ToolUnavailable with the reason when it cannot be had."""
    if decl.description is not None and decl.parameters is not None:
        return checked_spec(decl.name, decl.description, decl.parameters)
    run = await pool.run_python(
        "schema",
        decl.target,
        cwd,
        path=module_path(decl, bench_root),
        limits=pool.with_limits(timeout_s=decl.timeout_s),
    )
    payload = child_payload(run)
    if payload is None or not payload.get("ok"):
        reason = (payload or {}).get("error") or run.reason or run.stderr[-300:]
        raise ToolUnavailable(f"tool {decl.name!r}: cannot read {decl.target}: {reason}")
    found = payload["value"]
    return checked_spec(
        decl.name,
        decl.description if decl.description is not None else found.get("description", ""),
        decl.parameters if decl.parameters is not None else found.get("parameters"),
    )


async def call(
    decl: PythonTool,
    bench_root: Path,
    pool: SandboxPool,
    arguments: dict[str, Any],
    cwd: Path,
    limits: Limits | None = None,
) -> ToolResult:
    run = await pool.run_python(
        "call",
        decl.target,
        cwd,
        path=module_path(decl, bench_root),
        limits=limits or pool.with_limits(timeout_s=decl.timeout_s),
        stdin=json.dumps(arguments).encode(),
    )
    payload = child_payload(run)
    if run.outcome in (Outcome.OK, Outcome.EXIT) and payload is not None:
        if payload.get("ok"):
            return ToolResult(True, as_text(payload.get("value")), latency_ms=run.latency_ms)
        error = str(payload.get("error", "failed"))
        return ToolResult(False, f"error: {error}", error, run.latency_ms)
    reason = run.reason or "no result"
    if run.outcome == Outcome.EXIT and run.stderr:
        reason = f"{reason}: {run.stderr.strip().splitlines()[-1][:300]}"
    return ToolResult(False, f"error: {reason}", reason, run.latency_ms)
