"""The typed rows the harness log's read layer returns (app/harness/workspace/harness_log/reader.py) and the
parameters its queries take: filters, keyset cursors, sort keys. Plain values, no I/O; the
column names are the log's (docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


# -- query parameters -------------------------------------------------------------------------
@dataclass(frozen=True)
class StepFilter:
    task_type: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class PredictionFilter:
    correct: bool | None = None
    task_type: str | None = None
    stop_reason: str | None = None
    search: str = ""

    @property
    def is_empty(self) -> bool:
        return (
            self.correct is None and not self.task_type and not self.stop_reason and not self.search
        )


@dataclass(frozen=True)
class PageCursor:
    """Which page of a keyset list (keys in the list's order): the first (nothing set), the
    one that follows `after` (the last key of the page before it), the one that precedes
    `before` (the first key of the page after it), the one that starts at `start` (a
    re-read of the page the user is on), or the `last` one."""

    after: Any = None
    before: Any = None
    start: Any = None
    last: bool = False

    @property
    def backwards(self) -> bool:
        """The page is read from its end: it is found by what comes after it."""
        return self.before is not None or self.last


@dataclass(frozen=True)
class Keyset:
    """Keyset pagination on one indexed column of a list shown in `descending` order or not.

    Every page, the last included, costs O(page) index steps: the query asks for one row
    more than a page to know whether another follows (the caller turns the rows into a page).
    """

    column: str
    descending: bool = False

    def where(self, cursor: PageCursor) -> tuple[list[str], list[Any], str]:
        """(conditions, their parameters, ORDER BY clause) selecting the cursor's page."""
        onward, backward = ("<", ">") if self.descending else (">", "<")
        conditions, params = [], []
        bounds = ((onward, cursor.after), (onward + "=", cursor.start), (backward, cursor.before))
        for op, key in bounds:
            if key is not None:
                conditions.append(f"{self.column} {op} ?")
                params.append(key)
        ascending = self.descending == cursor.backwards
        return conditions, params, f"ORDER BY {self.column} {'ASC' if ascending else 'DESC'}"


# Runs newest first by `_runs.seq`; predictions by question id on (run_id, question_id).
RUNS_KEYSET = Keyset("seq", descending=True)
PREDICTIONS_KEYSET = Keyset("question_id")

# Step-table sort keys -> SQL ORDER BY terms (whitelisted; never user text in SQL).
STEP_SORTS: dict[str, tuple[str, ...]] = {
    "order": ("epoch", "step", "task_type"),
    "epoch": ("epoch", "step", "task_type"),
    "step": ("step", "epoch", "task_type"),
    "task_type": ("task_type", "epoch", "step"),
    "action": ("action", "epoch", "step"),
    "cand_acc": ("cand_acc", "epoch", "step"),
    "base_acc": ("base_acc", "epoch", "step"),
    "w": ("w", "epoch", "step"),
    "l": ("l", "epoch", "step"),
    "e_value": ("e_value", "epoch", "step"),
    "n_used": ("n_used", "epoch", "step"),
    "stop_reason": ("stop_reason", "epoch", "step"),
    "edit_budget": ("edit_budget", "epoch", "step"),
}


# -- rows -------------------------------------------------------------------------------------
def json_object(text: str | None) -> dict[str, Any]:
    """A stored JSON object column as a dict ({} when empty, damaged or not an object)."""
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class RunRow:
    """One `_runs` row; `summary` and `provenance` are its JSON columns parsed."""

    seq: int
    run_id: str
    kind: str
    parent_run_id: str | None
    skills_version: str | None
    prompts_version: str | None
    status: str
    started_at: str | None
    finished_at: str | None
    summary: dict[str, Any]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class RunListRow:
    """A run on the TUI's runs page, with its prediction counts and resumes."""

    seq: int
    run_id: str
    kind: str
    parent_run_id: str | None
    skills_version: str | None
    prompts_version: str | None
    status: str
    started_at: str | None
    finished_at: str | None
    n_predictions: int
    n_correct: int
    simulated: bool
    accuracy: float | None
    resumes: int


@dataclass(frozen=True)
class EpochRow:
    """The latest `epoch_reports` row of an epoch; `report` is its parsed report JSON."""

    run_id: str
    epoch: int
    val_acc: float
    test_acc: float | None
    report: dict[str, Any]


@dataclass(frozen=True)
class EpochAccuracy:
    """One `epoch_reports` row without its report (every row, a redone epoch's too)."""

    run_id: str
    epoch: int
    val_acc: float
    test_acc: float | None


@dataclass(frozen=True)
class TriageCount:
    """Training steps' diagnosed failures of one category that one decider decided
    (core/evolution/triage.py): "judge", "rule:<name>" or "probe:context_inlined"."""

    category: str
    decided_by: str  # "judge" for rows written before migration 7 (the judge decided all)
    failures: int
    examples: tuple[str, ...]  # a few question ids, latest first


@dataclass(frozen=True)
class StepRow:
    """A step report as the steps table lists it."""

    id: int
    run_id: str
    epoch: int
    step: int
    task_type: str
    action: str
    cand_acc: float | None
    base_acc: float | None
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, named as the column
    e_value: float | None
    n_used: int | None
    stop_reason: str | None
    edit_budget: int | None
    gate_run_id: str | None


STEP_COLUMNS = tuple(StepRow.__dataclass_fields__)


@dataclass(frozen=True)
class StepReportRow:
    """One full `step_reports` row: every column (as stored) and the parsed report."""

    columns: dict[str, Any]
    report: dict[str, Any] | None  # None when `report_json` is empty or not an object

    @property
    def gate_run_id(self) -> str | None:
        return self.columns.get("gate_run_id")


@dataclass(frozen=True)
class GateEvidenceRow:
    """One family a gate observed, in ladder order."""

    idx: int
    unit_id: str
    base: int | float | None  # 0/1, or a scored checker's score (docs/checkers.md)
    cand: int | float | None
    outcome: str | None
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, named as the column
    e_win: float | None
    e_harm: float | None


@dataclass(frozen=True)
class PredictionRow:
    """A prediction as the predictions page lists it (no trajectory)."""

    id: int
    run_id: str
    question_id: str
    unit_id: str | None
    task_type: str | None
    prediction: str | None
    answer: str | None
    correct: int | None
    stop_reason: str | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    latency_s: float | None


PREDICTION_COLUMNS = tuple(PredictionRow.__dataclass_fields__)


@dataclass(frozen=True)
class RoleCalls:
    """Model calls of one role summed (`report`: None where SQLite's SUM had no rows)."""

    role: str | None
    calls: int
    cache_hits: int | None
    cost_usd: float | None
    tokens_in: int | None
    tokens_out: int | None


@dataclass(frozen=True)
class SpendRow:
    """Money paid for one run's calls."""

    owner_run_id: str
    paid_calls: int
    cost_usd: float


@dataclass(frozen=True)
class RoleIO:
    """Retries, timeouts and failures of one role's calls (schema 3 and later)."""

    retries: int
    timeouts: int
    failed: int


@dataclass(frozen=True)
class LogMarks:
    """High-water marks that change whenever a table the TUI shows gets rows."""

    steps: int | None
    gate_evidence: int | None
    predictions: int | None
    epochs: int | None
    calls: int | None
    runs: int | None
    last_runs: str | None  # status:finished_at of the three newest runs


@dataclass(frozen=True)
class ForkRun:
    run_id: str
    status: str
    summary_json: str | None


@dataclass(frozen=True)
class ForkQuestion:
    """One question of a fork: branches, right ones, and whether the ranker's top is right."""

    question_id: str
    task_type: str | None
    branches: int
    correct: int | None
    top_ok: float | None  # the top-ranked branch's objective (1.0 when right)


@dataclass(frozen=True)
class BranchRow:
    """One branch of a question with its rank (None before `rank`)."""

    id: int
    branch_index: int
    temperature: float | None
    prediction: str | None
    correct: int | None
    stop_reason: str | None
    rank: int | None
    reward: float | None
    objective: float | None
    bt: float | None


@dataclass(frozen=True)
class Verdict:
    branch_index: int
    verifier: str
    status: str


@dataclass(frozen=True)
class BranchDetail:
    """One branch in full: its row as stored, the judge's reasoning and the verdicts."""

    columns: dict[str, Any]
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunCalls:
    """One run's model calls summed: the paid ones (cost and tokens) and the cache hits."""

    paid_calls: int
    cache_hits: int
    cost_usd: float  # of the paid calls
    tokens_in: int  # of every call, cache hits included
    tokens_out: int
    models: tuple[str, ...]
