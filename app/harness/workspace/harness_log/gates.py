"""What training decides and why: the gate's evidence per unit (`gate_evidence`), validation
quadrants (`quadrant_pair`), the other bet's verdict (`shadow_gate`), held-out and dual-metric
accuracies, the judge's diagnoses and the evolver's edits (`evolutions`)
(docs/architecture.md#the-harness-log)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.harness.workspace.harness_log.connection import LogConnection, LogRecord, escape_like


@dataclass(frozen=True)
class GateEvidenceRecord(LogRecord):
    """One unit a gate observed, in ladder order (`idx`); base/cand are 0/1, a scored
    checker's score, or NULL without a verdict (docs/checkers.md)."""

    TABLE = "gate_evidence"

    run_id: str
    epoch: int
    step: int
    task_type: str
    idx: int
    unit_id: str
    base: int | float | None
    cand: int | float | None
    outcome: str | None
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, named as the column
    e_win: float | None
    e_harm: float | None


@dataclass(frozen=True)
class QuadrantRecord(LogRecord):
    TABLE = "quadrant_pair"

    run_id: str
    epoch: int
    step: int
    task_type: str
    unit_id: str
    quadrant: str


@dataclass(frozen=True)
class ShadowGateRecord(LogRecord):
    """What the other bet (fixed or mixture) would have decided on the same evidence."""

    TABLE = "shadow_gate"

    run_id: str
    epoch: int
    step: int
    task_type: str
    strategy: str
    action: str
    e_value: float | None
    n_used: int | None


@dataclass(frozen=True)
class HoldoutRecord(LogRecord):
    TABLE = "holdout_eval"

    run_id: str
    epoch: int
    label: str
    skills_version: str | None
    prompts_version: str | None
    accuracy: float | None
    eval_run_id: str | None


@dataclass(frozen=True)
class DualMetricRecord(LogRecord):
    TABLE = "dual_metric"

    run_id: str
    epoch: int
    eval_run_id: str
    hard_acc: float | None


@dataclass(frozen=True)
class DiagnosisRecord(LogRecord):
    """One failure the judge (or a triage rule, or the probe: `decided_by`) diagnosed."""

    TABLE = "diagnoses"

    run_id: str
    question_id: str
    task_type: str | None
    category: str | None
    target: str | None
    rationale: str | None
    degraded: int | None
    parse_error: str | None
    decided_by: str | None


@dataclass(frozen=True)
class EvolutionRecord(LogRecord):
    """The evolver's edits of one task type at one step; `result_version` is set once the
    gate accepts them (`GatesTable.set_result_version`)."""

    TABLE = "evolutions"

    run_id: str
    epoch: int
    step: int
    task_type: str
    target_kind: str | None
    target_file: str | None
    status: str | None
    request_summary: str | None
    edits_json: str | None
    apply_report_json: str | None
    clip_json: str | None
    source_version: str | None
    result_version: str | None
    parse_errors_json: str | None
    attempts_json: str | None


@dataclass(frozen=True)
class UnitOutcomes:
    """A unit's base and candidate outcomes at a gate."""

    unit_id: str
    base: int | float | None
    cand: int | float | None


@dataclass(frozen=True)
class EvolutionEdits:
    status: str | None
    edits_json: str | None


@dataclass(frozen=True)
class JudgedFailure:
    """A diagnosis with who decided it and how its rollout's answer stopped."""

    category: str | None
    question_id: str
    decided_by: str
    stop_reason: str | None


class GatesTable(LogConnection):
    """Writes and reads of the gate and evolution tables."""

    def add_gate_evidence(self, rows: Sequence[GateEvidenceRecord]) -> None:
        self.insert(rows)

    def add_quadrants(self, rows: Sequence[QuadrantRecord]) -> None:
        self.insert(rows)

    def add_shadow_gate(self, row: ShadowGateRecord) -> None:
        self.insert([row])

    def add_holdout_evals(self, rows: Sequence[HoldoutRecord]) -> None:
        self.insert(rows)

    def add_dual_metric(self, row: DualMetricRecord) -> None:
        self.insert([row])

    def add_diagnoses(self, rows: Sequence[DiagnosisRecord]) -> None:
        self.insert(rows)

    def add_evolutions(self, rows: Sequence[EvolutionRecord]) -> None:
        self.insert(rows)

    def set_result_version(self, run_id: str, task_type: str, version: str) -> None:
        """The version an evolution produced; known only once its gate accepted it, after
        the row was written (app/harness/training/step.py `settle`)."""
        with self._txn():
            self.conn.execute(
                "UPDATE evolutions SET result_version = ? WHERE run_id = ? AND task_type = ?",
                (version, run_id, task_type),
            )

    def unit_outcomes(self, gate_run_id: str) -> list[UnitOutcomes]:
        return [
            UnitOutcomes(*r)
            for r in self.conn.execute(
                "SELECT unit_id, base, cand FROM gate_evidence WHERE run_id = ?", (gate_run_id,)
            )
        ]

    def evolution_edits(self, run_like: str, task_type: str) -> list[EvolutionEdits]:
        """The evolutions of a task type by runs `LIKE run_like`."""
        return [
            EvolutionEdits(*r)
            for r in self.conn.execute(
                "SELECT status, edits_json FROM evolutions WHERE run_id LIKE ? AND task_type = ?",
                (run_like, task_type),
            )
        ]

    def deciders(self, run_prefix: str) -> dict[str, int]:
        """Parsed (not degraded) diagnoses of the training steps whose run id starts with
        `run_prefix` (`<train>-e<E>-s<S>-diag`), counted by who decided them."""
        if "decided_by" not in self.columns("diagnoses"):
            return {}
        pattern = escape_like(run_prefix) + "%-diag"
        rows = self.conn.execute(
            "SELECT decided_by, COUNT(*) FROM diagnoses WHERE run_id LIKE ? ESCAPE '\\' "
            "AND substr(run_id, 1, ?) = ? AND degraded = 0 GROUP BY decided_by",
            (pattern, len(run_prefix), run_prefix),
        )
        return {str(who): int(n) for who, n in rows if who is not None}

    def judged_failures(self, run_like: str, task_type: str) -> list[JudgedFailure]:
        """The diagnoses of a task type by runs `LIKE run_like` (`<step>-diag`), each with the
        stop reason of the latest answer of its step's rollout (`<step>-rollout`); decided by
        the judge where a log from before migration 7 does not say."""
        who = (
            "COALESCE(d.decided_by, 'judge')"
            if "decided_by" in self.columns("diagnoses")
            else "'judge'"
        )
        return [
            JudgedFailure(*r)
            for r in self.conn.execute(
                f"SELECT d.category, d.question_id, {who}, "
                "(SELECT p.stop_reason FROM predictions p WHERE p.question_id = d.question_id AND "
                "p.run_id = substr(d.run_id, 1, length(d.run_id) - 5) || '-rollout' "
                "ORDER BY p.id DESC LIMIT 1) "
                "FROM diagnoses d WHERE d.run_id LIKE ? AND d.task_type = ?",
                (run_like, task_type),
            )
        ]
