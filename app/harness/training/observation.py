"""Step and epoch reports (JSON files + log rows) and gate evidence rows
(docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import difflib
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from app.harness.training.validate import ValidationOutcome
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.gates import GateEvidenceRecord, QuadrantRecord
from app.harness.workspace.harness_log.steps import EpochReportRecord, StepReportRecord
from core.evolution.evolve import EvolutionRecord
from core.evolution.gate import GateDecision

# Flags of the step being reported (e.g. "no_tool_calls"), set by the step that writes them.
current_step_flags: ContextVar[tuple[str, ...]] = ContextVar("current_step_flags", default=())
# The step's rollout activation per task type (skill_mode "progressive"/"tool";
# app/harness/skills/activation.py), set by the step that writes the reports.
current_step_activation: ContextVar[dict[str, Any] | None] = ContextVar(
    "current_step_activation", default=None
)


def skill_diff(before: str, after: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )


def step_report(
    *,
    run_id: str,
    epoch: int,
    step: int,
    task_type: str,
    action: str,
    budget: int,
    base_version: str,
    record: EvolutionRecord | None = None,
    outcome: ValidationOutcome | None = None,
    new_version: str | None = None,
    summary: str = "",
    diagnosis: dict[str, Any] | None = None,
) -> dict[str, Any]:
    d = outcome.decision if outcome else None
    plain = record.to_dict() if record else {}  # the record's JSON form, written below
    activation = current_step_activation.get()
    extra = {"activation": activation.get(task_type)} if activation is not None else {}
    return {
        **extra,
        "run_id": run_id,
        "epoch": epoch,
        "step": step,
        "task_type": task_type,
        "action": action,
        "gate_run_id": outcome.gate_run_id if outcome else None,
        "target_file": record.target_file if record else None,
        "base_version": base_version,
        "new_version": new_version,
        "cand_acc": outcome.cand_acc if outcome else None,
        "base_acc": outcome.base_acc if outcome else None,
        "W": d.W if d else None,
        "L": d.L if d else None,
        "e_value": d.e_value if d else None,
        "e_harm": d.e_harm if d else None,
        "n_used": d.n_used if d else None,
        "stop_reason": d.stop_reason if d else None,
        "units_used": d.units_used if d else None,
        "threshold": d.threshold if d else None,
        "horizon": d.horizon if d else None,
        "strategy": d.strategy if d else None,
        "delta_hat": d.delta_hat if d else None,
        "delta_shrunk": d.delta_shrunk if d else None,
        # < 1: accepted on the final look's coin with this probability (core/evolution/gate.py)
        "chance": d.chance if d else None,
        "edit_budget": budget,
        "edits": list(plain.get("edits", [])),
        "apply_report": list(plain.get("apply_report", [])),
        "clip": plain.get("clip", {}),
        "parse_errors": list(record.parse_errors) if record else [],
        "diff": skill_diff(record.original, record.evolved, record.target_file) if record else "",
        "summary": summary,
        # the task type's diagnosed failures (core/evolution/diagnose.py FailureTally.to_dict);
        # absent from reports written before it was recorded
        "diagnosis": diagnosis,
        "at": now_iso(),
        "flags": list(current_step_flags.get()),
        "reply_attempts": list(plain.get("attempts", [])),
    }


def write_step_report(root: Path, log: HarnessLog, report: dict[str, Any], row_run_id: str) -> None:
    import json

    name = f"e{report['epoch']}_s{report['step']}_{report['task_type']}.json"
    write_json_atomic(Path(root) / "reports" / "steps" / name, report)
    log.add_step_report(
        StepReportRecord(
            run_id=row_run_id,
            epoch=report["epoch"],
            step=report["step"],
            task_type=report["task_type"],
            action=report["action"],
            cand_acc=report["cand_acc"],
            base_acc=report["base_acc"],
            w=report["W"],
            l=report["L"],
            e_value=report["e_value"],
            n_used=report["n_used"],
            stop_reason=report["stop_reason"],
            edit_budget=report["edit_budget"],
            gate_run_id=report["gate_run_id"],
            report_json=json.dumps(report),
        )
    )


def evidence_rows(
    run_id: str, task_type: str, decision: GateDecision, epoch: int, step: int
) -> list[GateEvidenceRecord]:
    """`gate_evidence` rows, one per unit, for a gate run or a probation's continuation."""
    return [
        GateEvidenceRecord(
            run_id=run_id,
            epoch=epoch,
            step=step,
            task_type=task_type,
            idx=i,
            unit_id=e.unit_id,
            base=_stored(e.base),
            cand=_stored(e.cand),
            outcome=e.outcome,
            w=e.W,
            l=e.L,
            e_win=e.e_win,
            e_harm=e.e_harm,
        )
        for i, e in enumerate(decision.evidence)
    ]


def _stored(outcome: bool | float | None) -> int | float | None:
    """A unit's outcome as `gate_evidence` keeps it: 0/1 for pass/fail (as always), the score
    of a scored checker, NULL when its checker gave no verdict (docs/checkers.md)."""
    if outcome is None or isinstance(outcome, bool):
        return None if outcome is None else int(outcome)
    return float(outcome)


def quadrant_rows(
    outcome: ValidationOutcome, run_id: str, epoch: int, step: int
) -> list[QuadrantRecord]:
    return [
        QuadrantRecord(
            run_id=run_id,
            epoch=epoch,
            step=step,
            task_type=outcome.task_type,
            unit_id=u,
            quadrant=q,
        )
        for q, units in outcome.quadrants.items()
        for u in units
    ]


def write_epoch_report(
    root: Path, log: HarnessLog, report: dict[str, Any], row_run_id: str
) -> None:
    import json

    write_json_atomic(Path(root) / "reports" / "epochs" / f"e{report['epoch']}.json", report)
    log.add_epoch_report(
        EpochReportRecord(
            run_id=row_run_id,
            epoch=report["epoch"],
            val_acc=report["val_acc"],
            test_acc=report.get("test_acc"),
            report_json=json.dumps(report),
        )
    )
