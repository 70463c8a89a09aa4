"""What the web report shows, read from a workspace (read-only): the learning curve, the gate's
decisions with their evidence and diffs, per-task-type test accuracy, calls per role and the
savings figures. app/harness/serving/webpage.py turns it into HTML.

Every string here comes from the workspace, so it is untrusted: controls are made visible and
secrets scrubbed here; the page HTML-escapes all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.serving.savings import SavingsReport, savings_report
from app.harness.workspace.atomic import read_json_object
from app.harness.workspace.harness_log.reader import LogReader, open_reader
from app.harness.workspace.harness_log.rows import StepFilter
from app.harness.workspace.workspace import read_manifest
from app.sanitize import visible
from app.secrets import scrub
from core.stats import wilson_interval

MAX_DECISIONS = 400  # gate decisions of the latest step reports (a long run has thousands)
MAX_DIFF_CHARS = 6000
PROMPTS_KEPT = "prompts kept"  # an epoch's prompt change that passed its gate (epoch report)
PROMPTS_STEP = (
    10**6
)  # a prompt gate decides after the epoch's steps  # per decision; the TUI shows the whole diff


def clean(text: object) -> str:
    return scrub(visible(text))


@dataclass(frozen=True)
class EpochPoint:
    epoch: int
    val_acc: float
    test_acc: float | None


@dataclass(frozen=True)
class GateDecision:
    epoch: int
    step: int
    task_type: str
    action: str  # accept, accept_provisional, reject, ... (core/evolution/gate.py)
    w: int | None
    l: int | None  # noqa: E741 - the gate's losses, as the log names them
    e_value: float | None
    summary: str
    diff: str

    @property
    def accepted(self) -> bool:
        return self.action.startswith("accept") or self.action == PROMPTS_KEPT


@dataclass(frozen=True)
class TypeAccuracy:
    task_type: str
    correct: int
    total: int
    low: float
    high: float
    baseline: float | None = None  # the seed skills' accuracy on the same test units

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True)
class RoleUse:
    role: str
    calls: int
    cache_hits: int
    cost_usd: float


@dataclass(frozen=True)
class PageData:
    workspace: str
    current: str  # "skills/v3 prompts/v2"
    best: str  # "" when no best is recorded
    curve: list[EpochPoint] = field(default_factory=list)
    baseline_val: float | None = None
    baseline_test: float | None = None
    decisions: list[GateDecision] = field(default_factory=list)
    decisions_total: int = 0
    e_threshold: float | None = None
    per_type: list[TypeAccuracy] = field(default_factory=list)
    per_type_source: str = ""
    roles: list[RoleUse] = field(default_factory=list)
    savings: SavingsReport | None = None
    savings_missing: str = ""
    simulated: bool = False


def gather(root: Path) -> PageData:
    root = Path(root)
    manifest = read_manifest(root)
    cur = manifest.get("current") or {}
    best = manifest.get("best") or {}
    final = _final_test(root)
    base = PageData(
        workspace=clean(root.name),
        current=clean(f"{cur.get('skills')} {cur.get('prompts')}"),
        best=clean(f"{best.get('skills')} {best.get('prompts')}") if best else "",
        baseline_test=_float(final.get("baseline_test_accuracy")),
        per_type=_per_type(final),
        per_type_source=clean(final.get("run_id") or ""),
    )
    if not (root / "harness.db").is_file():
        return base
    with open_reader(root / "harness.db") as log:
        decisions, total, threshold = _decisions(log)
        fields: dict[str, Any] = {
            "curve": [EpochPoint(e.epoch, e.val_acc, e.test_acc) for e in log.epochs()],
            # the baseline run covers the whole benchmark: its accuracy on each pool is the
            # curve's epoch 0 (the final test's own figure when there is one)
            "baseline_val": log.baseline_accuracy_on("validation"),
            "baseline_test": base.baseline_test
            if base.baseline_test is not None
            else log.baseline_accuracy_on("test"),
            "decisions": decisions,
            "decisions_total": total,
            "e_threshold": threshold,
            "roles": [
                RoleUse(clean(r.role or "-"), r.calls, r.cache_hits or 0, r.cost_usd or 0.0)
                for r in log.calls.by_role()
            ],
            "simulated": log.any_simulated(),
        }
    savings, missing = _savings(root)
    return PageData(**{**base.__dict__, **fields, "savings": savings, "savings_missing": missing})


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _acc(value: object) -> str:
    v = _float(value)
    return "-" if v is None else f"{v:.3f}"


def _final_test(root: Path) -> dict[str, Any]:
    path = root / "analyses" / "final_test_eval.json"
    return read_json_object(path, "final test report") if path.is_file() else {}


def _per_type(final: dict[str, Any]) -> list[TypeAccuracy]:
    out = []
    base_of = final.get("baseline_per_task_type")
    base_of = base_of if isinstance(base_of, dict) else {}
    for task_type, entry in sorted((final.get("per_task_type") or {}).items()):
        correct, total = entry.get("correct"), entry.get("total")
        if not (isinstance(correct, int) and isinstance(total, int) and 0 <= correct <= total):
            continue
        low, high = wilson_interval(correct, total)
        base = _float(base_of.get(task_type))
        base = base if base is not None and 0.0 <= base <= 1.0 else None
        out.append(TypeAccuracy(clean(task_type), correct, total, low, high, base))
    return out


def _decisions(log: LogReader) -> tuple[list[GateDecision], int, float | None]:
    """The latest gate decisions in the order made, each with its diff from the step report."""
    flt = StepFilter()
    total = log.steps_count(flt)
    rows = log.steps(
        flt, sort="order", descending=False, offset=max(0, total - MAX_DECISIONS), limit=total
    )
    out, threshold = [], None
    prompts = _prompt_decisions(log)
    for row in rows:
        while prompts and prompts[0].epoch < row.epoch:
            out.append(prompts.pop(0))
        if row.gate_run_id is None:  # skipped steps (probation, cooldown, no failures)
            continue
        step = log.step_report(row.id)
        report = step.report if step is not None and step.report else {}
        threshold = _float(report.get("threshold")) or threshold
        out.append(
            GateDecision(
                epoch=row.epoch,
                step=row.step,
                task_type=clean(row.task_type),
                action=clean(row.action),
                w=row.w,
                l=row.l,
                e_value=row.e_value,
                summary=clean(report.get("summary") or ""),
                diff=clean(str(report.get("diff") or ""))[:MAX_DIFF_CHARS],
            )
        )
    return out + prompts, total, threshold


def _prompt_decisions(log: LogReader) -> list[GateDecision]:
    """Each epoch's prompt change with its gate test (core/evolution: R2 against R)."""
    out = []
    for e in log.epochs():
        test = e.report.get("prompts_test")
        if not isinstance(test, dict):
            continue
        verdict = clean(test.get("verdict") or "")
        wins, losses, ev = test.get("W"), test.get("L"), _float(test.get("e_value"))
        out.append(
            GateDecision(
                epoch=e.epoch,
                step=PROMPTS_STEP,
                task_type="prompts",
                action=f"prompts {verdict}",
                w=wins if isinstance(wins, int) else None,
                l=losses if isinstance(losses, int) else None,
                e_value=ev,
                summary=clean(
                    f"the epoch's prompt change, {verdict}: validation {_acc(test.get('r2_acc'))}"
                    f" with it, {_acc(e.report.get('r_acc'))} without ({test.get('stop_reason')})"
                ),
                diff="",
            )
        )
    return out


def _savings(root: Path) -> tuple[SavingsReport | None, str]:
    try:
        return savings_report(root), ""
    except UserError as e:  # no serve, eval or infer run yet: say so on the page
        return None, clean(str(e))
