"""HarnessLog: the harness log (docs/architecture.md#the-harness-log), one connection with
every table's writes and reads. Each table module adds its own; this class only puts them
together, so a caller holds one object and a schema change stays in its table's module."""

from __future__ import annotations

from app.harness.workspace.harness_log import calls, forks, gates, ingest, predictions, runs, steps
from app.harness.workspace.harness_log.calls import CallsTable
from app.harness.workspace.harness_log.connection import LogRecord
from app.harness.workspace.harness_log.forks import ForksTable
from app.harness.workspace.harness_log.gates import GatesTable
from app.harness.workspace.harness_log.ingest import IngestTable
from app.harness.workspace.harness_log.memories import MemoriesTable
from app.harness.workspace.harness_log.predictions import PredictionsTable
from app.harness.workspace.harness_log.runs import RunsTable
from app.harness.workspace.harness_log.steps import StepsTable

# The record type of each table written with `HarnessLog.insert` (memories have their own
# statement: each also goes into the full-text index).
RECORD_TYPES: dict[str, type[LogRecord]] = {
    kind.TABLE: kind
    for kind in (
        runs.RunRecord,
        predictions.PredictionRecord,
        calls.CallRecord,
        calls.ReplyAttemptRecord,
        gates.GateEvidenceRecord,
        gates.QuadrantRecord,
        gates.ShadowGateRecord,
        gates.HoldoutRecord,
        gates.DualMetricRecord,
        gates.DiagnosisRecord,
        gates.EvolutionRecord,
        steps.StepReportRecord,
        steps.EpochReportRecord,
        forks.BranchRecord,
        forks.VerdictRecord,
        forks.JudgmentRecord,
        forks.RankingRecord,
        forks.TrajectoryClassRecord,
        ingest.IngestedTraceRecord,
    )
}


class HarnessLog(
    RunsTable,
    PredictionsTable,
    CallsTable,
    GatesTable,
    StepsTable,
    ForksTable,
    MemoriesTable,
    IngestTable,
):
    """One writer connection per process (`HarnessLog(path)`); readers open their own
    (`HarnessLog(path, readonly=True)`, or `open_reader` for the typed read-only views)."""
