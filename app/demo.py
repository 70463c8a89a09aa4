"""What `demo` prints after training: the learning curve and what to look at next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.paths import command_prefix, near
from app.providers.sim.notices import SIM_NOTICE

if TYPE_CHECKING:
    from app.api import TrainResult


def outcome_line(result: TrainResult) -> str:
    """The held-out result of a training run, as `demo` and `train` end with it."""

    def acc(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    return (
        f"test accuracy: baseline {acc(result.baseline_test_accuracy)} -> "
        f"final {acc(result.test_accuracy)} "
        f"(best {result.best_skills_version}/{result.best_prompts_version}, "
        f"best validation {acc(result.best_val_acc)})"
    )


def demo_summary(result: TrainResult) -> str:
    lines = ["", "learning curve (validation accuracy by epoch; test = held-out, never tuned on)"]
    for point in result.curve:
        bar = "#" * round(point.val_acc * 40)
        test = f"  test {point.test_acc:.3f}" if point.test_acc is not None else ""
        lines.append(f"  epoch {point.epoch}: val {point.val_acc:.3f}{test}  {bar}")
    curve = result.curve
    accepted, provisional = sum(p.accepted for p in curve), sum(p.provisional for p in curve)
    kept, rolled_back = sum(p.kept for p in curve), sum(p.rolled_back for p in curve)
    lines += [
        "",
        f"gate decisions: {accepted} accepted, {provisional} provisional "
        f"({kept} kept, {rolled_back} rolled back at epoch end), "
        f"{sum(p.rejected for p in curve)} rejected",
        outcome_line(result),
        f"model calls: {result.model_calls} ({result.cache_hits} from cache), "
        f"simulated cost ${result.cost_usd:.4f}, wall time {result.wall_seconds:.1f}s",
    ]
    if result.simulated_model:
        lines.append(SIM_NOTICE)
    program, workspace = command_prefix(), near(result.workspace)
    lines += [
        "",
        "next:",
        f"  {program} tui -w {workspace}       # browse steps, gate evidence, diffs",
        f"  {program} report -w {workspace}    # plain-text summary",
    ]
    return "\n".join(lines)
