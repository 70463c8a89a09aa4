"""Lines more than one command prints: an evaluation's accuracy (`eval`, `infer`) and what the
stored memories added to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.cli._output import out

if TYPE_CHECKING:
    from app import api


def print_result(result: api.EvalResult, title: str) -> None:
    out(f"{title}: accuracy {result.accuracy:.3f} ({result.correct}/{result.total} units)")
    for task_type, score in result.per_task_type.items():
        out(f"  {task_type:<12} {score.accuracy:.3f}  ({score.correct}/{score.total})")
    if result.stop_reason_counts:
        out(
            "  stop reasons: "
            + ", ".join(f"{k}={v}" for k, v in sorted(result.stop_reason_counts.items()))
        )


def memories_line(result: api.EvalResult, k: int) -> None:
    """Say when answers drew on stored memories (memory_k > 0), or that there were none."""
    if result.memories_stored is None:
        return
    if result.memories_stored == 0:
        out(f"  memories: none stored yet, so memory_k={k} added nothing (`rank` stores them)")
    else:
        out(f"  memories: up to {k} per question, from {result.memories_stored} stored (memory_k)")
