"""The TUI's view of one workspace (docs/architecture.md#commands-and-the-tui): what each screen
shows, read on demand.

Every query opens its own short-lived read-only connection (`open_reader` in
`app/harness/workspace/harness_log/reader.py`, which holds every query), runs a bounded query and closes it, so
the TUI never holds a lock or a long read transaction while `train` writes. Nothing here loads
a whole table: step reports page with LIMIT/OFFSET (at most tens of thousands of rows, sorted
in SQL), runs and predictions page by keyset on indexed columns (`app/tui/pagers.py`), and the
cost-by-role totals are kept incrementally by `llm_calls.id`. Change detection is in
`app/tui/fingerprints.py`, the train status and decision counts in `app/tui/status.py`.

All methods are blocking and meant to run in worker threads; the class is thread-safe.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.harness.training.gate_ladder import drawn_id
from app.harness.training.run_progress import progress_view
from app.harness.workspace.harness_log.reader import LogReader, QueryCancelled, open_reader
from app.harness.workspace.harness_log.rows import (
    PREDICTION_COLUMNS,
    PREDICTIONS_KEYSET,
    RUNS_KEYSET,
    STEP_COLUMNS,
    STEP_SORTS,
    PageCursor,
    PredictionFilter,
    StepFilter,
)
from app.harness.workspace.workspace import KINDS, list_versions, read_manifest
from app.sanitize import visible, visible_tree
from app.tui.diffs import colour_diff_lines, unified_diff
from app.tui.fingerprints import fingerprint, mtime, pid_alive
from app.tui.pagers import KeysetPage, StepPage, clamp_offset, keyset_page
from app.tui.status import (
    COUNT_LABELS,
    ShownStatus,
    TrainStatus,
    action_counts,
    lock_status,
    status_from_runs,
)

# app/providers/sim/notices.py ORACLE_MODEL (tests/app/providers/test_sim_oracle.py keeps them equal; the
# TUI imports no provider code)
ORACLE_MODEL = "sim/oracle"

# Names the screens, tests and benches import from here.
__all__ = [
    "COUNT_LABELS",
    "PREDICTION_COLUMNS",
    "STEP_COLUMNS",
    "STEP_SORTS",
    "KeysetPage",
    "Overview",
    "PredictionFilter",
    "QueryCancelled",
    "ShownStatus",
    "StepFilter",
    "StepPage",
    "TrainStatus",
    "VersionInfo",
    "WorkspaceData",
    "colour_diff_lines",
    "is_workspace",
    "list_workspaces",
    "pid_alive",
    "unified_diff",
]

SEARCH_TIME_LIMIT_S = 20.0


@dataclass(frozen=True)
class VersionInfo:
    kind: str
    version: str
    source: str
    parent: str | None
    description: str
    at: str
    sha256: str
    files: list[str]


@dataclass
class Overview:
    name: str
    manifest: dict[str, Any]
    checkpoint: dict[str, Any] | None
    status: TrainStatus
    epochs: list[dict[str, Any]]
    counts: dict[str, int]
    calls: list[dict[str, Any]]
    simulated: bool
    n_versions: dict[str, int] = field(default_factory=dict)
    oracle: bool = False  # a run used sim/oracle (any benchmark, a fixed answer rate)
    # the curve's epoch 0: the seed skills on the validation and test pools
    baseline_val: float | None = None
    baseline_test: float | None = None
    # baseline vs final test accuracy per task type (analyses/final_test_eval.json)
    per_type: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _CallTotals:
    max_id: int = 0
    rows: int = 0
    by_role: dict[str, dict[str, float]] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    """A JSON file or None when missing or mid-replace (the writer's rename is atomic)."""
    try:
        with open(path, encoding="utf-8") as f:
            return visible_tree(json.load(f))
    except (OSError, ValueError, RecursionError):
        return None


def _fraction(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
    return float(value) if ok else None


def per_type_test(final: dict[str, Any]) -> list[dict[str, Any]]:
    """Per task type of a final test report, its baseline and final accuracy (None where the
    report lacks a readable figure)."""
    per_type = final.get("per_task_type")
    per_type = per_type if isinstance(per_type, dict) else {}
    base_of = final.get("baseline_per_task_type")
    base_of = base_of if isinstance(base_of, dict) else {}
    out = []
    for task_type in sorted(set(per_type) | set(base_of)):
        entry = per_type.get(task_type)
        final_acc = entry.get("accuracy") if isinstance(entry, dict) else None
        out.append(
            {
                "task_type": str(task_type),
                "baseline": _fraction(base_of.get(task_type)),
                "final": _fraction(final_acc),
            }
        )
    return out


def is_workspace(path: Path) -> bool:
    return (Path(path) / "manifest.json").is_file()


def list_workspaces(folder: Path) -> list[dict[str, Any]]:
    """Workspaces directly under `folder` with a one-line summary each (for the picker)."""
    folder = Path(folder)
    found: list[dict[str, Any]] = []
    if not folder.is_dir():
        return found
    for p in sorted(folder.iterdir()):
        if not p.is_dir() or not is_workspace(p):
            continue
        try:
            manifest = read_manifest(p)
        except Exception as e:  # noqa: BLE001 - a broken workspace is listed, not fatal
            found.append({"path": p, "name": visible(p.name), "error": visible(e)})
            continue
        data = WorkspaceData(p)
        best = manifest.get("best") or {}
        progress = (data.checkpoint() or {}).get("progress") or {}
        manifest = visible_tree(manifest)
        try:
            status = data.run_status().state
        except Exception as e:  # noqa: BLE001 - a damaged log is listed as broken, not fatal
            found.append({"path": p, "name": visible(p.name), "error": visible(e)})
            continue
        found.append(
            {
                "path": p,
                "name": visible(p.name),
                "seed": manifest.get("seed") or "",
                "skills": manifest["current"]["skills"],
                "prompts": manifest["current"]["prompts"],
                "best_val": best.get("val_acc"),
                "status": status,
                "progress": _steps_done(progress) if progress else "",
                "modified": mtime(p / "manifest.json"),
                "error": None,
            }
        )
    return found


def _steps_done(progress: dict[str, Any]) -> str:
    """`11/16` while running; a finished run (early stop included) reads as `11/11`."""
    view = progress_view(progress)
    return f"{view.done}/{view.total or '?'}"


# -- the data source --------------------------------------------------------------------------
class WorkspaceData:
    """Everything the TUI shows, read on demand from one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.db_path = self.root / "harness.db"
        self._lock = threading.Lock()
        self._calls = _CallTotals()
        self._question_index: dict[str, int] | None = None

    @property
    def name(self) -> str:
        return visible(self.root.name)

    @contextlib.contextmanager
    def reader(
        self, cancelled: Callable[[], bool] | None = None, time_limit: float | None = None
    ) -> Iterator[LogReader | None]:
        """A fresh read-only reader for one batch of short queries (None: no log yet); every
        string it returns is printable."""
        if not self.db_path.exists():
            yield None
            return
        with (
            open_reader(
                self.db_path, printable=True, cancelled=cancelled, time_limit=time_limit
            ) as log,
            log.cancellable(),
        ):
            yield log

    # -- files ------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        manifest: dict[str, Any] = visible_tree(read_manifest(self.root))
        return manifest

    def checkpoint(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "checkpoint.json")
        return data if isinstance(data, dict) else None

    def lock_info(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "train.lock")
        return data if isinstance(data, dict) else None

    def run_status(self, log: LogReader | None = None) -> TrainStatus:
        """running only if train.lock names a live pid on this host; else from `_runs`."""
        shown = lock_status(self.lock_info())
        if shown is not None:
            return shown
        if log is None:
            with self.reader() as fresh:
                return status_from_runs(fresh)
        return status_from_runs(log)

    def fingerprint(self) -> dict[str, Any]:
        """Cheap per-kind change markers (app/tui/fingerprints.py)."""
        lock = self.lock_info()
        with self.reader() as log:
            return fingerprint(self.root, lock, log)

    # -- overview ---------------------------------------------------------------------------
    def overview(self, *, with_calls: bool = True) -> Overview:
        """Everything on the Overview. `with_calls=False` leaves the cost totals out (the
        first sum over a million-row llm_calls table takes seconds; see `call_totals`)."""
        manifest = self.manifest()
        with self.reader() as log:
            status = self.run_status(log)
            final = self.final_test()
            checkpoint = self.checkpoint()
            state = (checkpoint or {}).get("state")
            baseline_val = (
                _fraction(state.get("baseline_val_acc")) if isinstance(state, dict) else None
            )
            baseline_test = _fraction(final.get("baseline_test_accuracy"))
            if log is None:
                epochs, counts, calls, simulated = [], dict.fromkeys(COUNT_LABELS, 0), [], False
                oracle = False
            else:
                epoch_rows = log.epochs()
                epochs = [asdict(e) for e in epoch_rows]
                counts = action_counts(log, epoch_rows)
                calls = self.calls_by_role(log) if with_calls else []
                simulated = log.any_simulated()
                oracle = simulated and log.any_model(ORACLE_MODEL)
                if epochs and baseline_val is None:
                    baseline_val = log.baseline_accuracy_on("validation")
                if epochs and baseline_test is None:
                    baseline_test = log.baseline_accuracy_on("test")
        return Overview(
            name=self.name,
            manifest=manifest,
            checkpoint=checkpoint,
            status=status,
            epochs=epochs,
            counts=counts,
            calls=calls,
            simulated=simulated,
            n_versions={k: len(list_versions(self.root, k)) for k in KINDS},
            oracle=oracle,
            baseline_val=baseline_val,
            baseline_test=baseline_test,
            per_type=per_type_test(final),
        )

    def final_test(self) -> dict[str, Any]:
        """analyses/final_test_eval.json ({} before the final test)."""
        final = _read_json(self.root / "analyses" / "final_test_eval.json")
        return final if isinstance(final, dict) else {}

    def calls_by_role(self, log: LogReader) -> list[dict[str, Any]]:
        """Tokens and cost per role, summed incrementally by id. The tally of rows seen is
        compared with COUNT(*) in the same read snapshot; any deletion forces a full resum."""
        with self._lock:
            state = self._calls
            max_id, n_rows = log.calls.extent(state.max_id, state.rows)
            if max_id == state.max_id:
                return self._calls_rows(state)
            if max_id < state.max_id:
                state = _CallTotals()
            self._add_calls(log, state, max_id)
            if state.rows != n_rows:  # rows vanished below the high-water mark: resum
                state = _CallTotals()
                self._add_calls(log, state, max_id)
            self._calls = state
            return self._calls_rows(state)

    def call_totals(self) -> list[dict[str, Any]]:
        """Tokens and cost by role on a fresh connection (incremental after the first call)."""
        with self.reader() as log:
            return self.calls_by_role(log) if log is not None else []

    @staticmethod
    def _add_calls(log: LogReader, state: _CallTotals, max_id: int) -> None:
        keys = ("calls", "cache_hits", "tokens_in", "tokens_out", "cost_usd")
        for r in log.calls.by_role_between(state.max_id, max_id):
            acc = state.by_role.setdefault(r.role or "?", dict.fromkeys(keys, 0))
            for k in keys:
                acc[k] += getattr(r, k)
            state.rows += r.calls
        state.max_id = max_id

    @staticmethod
    def _calls_rows(state: _CallTotals) -> list[dict[str, Any]]:
        return [{"role": role, **vals} for role, vals in sorted(state.by_role.items())]

    # -- steps ------------------------------------------------------------------------------
    def step_filter_options(self) -> tuple[list[str], list[str]]:
        with self.reader() as log:
            if log is None:
                return [], []
            return log.step_task_types(), log.step_actions()

    def steps_page(
        self,
        flt: StepFilter,
        *,
        sort: str = "order",
        descending: bool = True,
        offset: int = 0,
        limit: int = 200,
    ) -> StepPage:
        with self.reader() as log:
            if log is None:
                return StepPage([], 0, 0)
            total = log.steps_count(flt)
            offset = clamp_offset(offset, total, limit)
            rows = log.steps(flt, sort=sort, descending=descending, offset=offset, limit=limit)
        return StepPage([asdict(r) for r in rows], offset, total)

    def step_detail(self, step_id: int, evidence_limit: int = 5000) -> dict[str, Any] | None:
        """The step's full report (DB row, falling back to its JSON file) and gate evidence."""
        with self.reader() as log:
            if log is None:
                return None
            step = log.step_report(step_id)
            if step is None:
                return None
            row = step.columns
            report = step.report
            if report is None:
                report = _read_json(
                    self.root
                    / "reports"
                    / "steps"
                    / f"e{row['epoch']}_s{row['step']}_{row['task_type']}.json"
                )
            evidence = []
            if step.gate_run_id:
                evidence = [
                    asdict(e)
                    for e in log.gate_evidence(step.gate_run_id, row["task_type"], evidence_limit)
                ]
        return {
            "row": row,
            "report": report if isinstance(report, dict) else {},
            "evidence": evidence,
        }

    # -- versions ---------------------------------------------------------------------------
    def versions(self, kind: str) -> list[VersionInfo]:
        out = []
        for v in list_versions(self.root, kind):
            meta = _read_json(self.root / kind / v / "_meta.json") or {}
            files = meta.get("files")
            if not isinstance(files, list):
                files = sorted(
                    p.name
                    for p in (self.root / kind / v).iterdir()
                    if p.is_file() and p.name != "_meta.json"
                )
            out.append(
                VersionInfo(
                    kind=kind,
                    version=v,
                    source=str(meta.get("source") or ""),
                    parent=meta.get("parent"),
                    description=str(meta.get("description") or ""),
                    at=str(meta.get("at") or ""),
                    sha256=str(meta.get("sha256") or ""),
                    files=list(files),
                )
            )
        return out

    def version_file(self, kind: str, version: str, name: str) -> str | None:
        if "/" in name or "\\" in name or name.startswith("."):
            return None
        path = self.root / kind / version.split("/")[-1] / name
        try:
            return visible(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def version_diff(self, kind: str, a: str, b: str, name: str) -> str:
        text_a = self.version_file(kind, a, name)
        text_b = self.version_file(kind, b, name)
        if text_a is None and text_b is None:
            return ""
        return unified_diff(
            text_a or "",
            text_b or "",
            f"{kind}/{a}/{name}" if text_a is not None else "/dev/null",
            f"{kind}/{b}/{name}" if text_b is not None else "/dev/null",
        )

    # -- runs -------------------------------------------------------------------------------
    def run_kinds(self) -> list[str]:
        with self.reader() as log:
            return log.run_kinds() if log is not None else []

    def runs_page(
        self,
        *,
        kind: str | None = None,
        before: int | None = None,
        after: int | None = None,
        last: bool = False,
        limit: int = 200,
    ) -> KeysetPage:
        """Runs newest first, keyset on `seq` (indexed). `before=page.last` is the next (older)
        page, `after=page.first` the previous (newer) one, `last` the oldest runs."""
        # In the list's order (newest first) an older seq comes after: `before` goes on.
        cursor = PageCursor(after=before, before=after, last=last)
        with self.reader() as log:
            if log is None:
                return KeysetPage([], False, False)
            rows = log.runs_page(kind, cursor, limit)
        return keyset_page(RUNS_KEYSET, rows, limit, cursor)

    def run(self, run_id: str) -> dict[str, Any] | None:
        with self.reader() as log:
            return log.run_columns(run_id) if log is not None else None

    # -- predictions ------------------------------------------------------------------------
    def predictions_page(
        self,
        run_id: str,
        flt: PredictionFilter,
        *,
        after: str | None = None,
        before: str | None = None,
        start: str | None = None,
        last: bool = False,
        limit: int = 200,
        cancelled: Callable[[], bool] | None = None,
    ) -> KeysetPage:
        """Keyset pagination on the unique index (run_id, question_id), so a page costs the
        same however large the run. `after`/`before` are the edges of the current page;
        `start` re-reads a page from its first key."""
        cursor = PageCursor(after=after, before=before, start=start, last=last)
        with self.reader(cancelled, SEARCH_TIME_LIMIT_S if flt.search else None) as log:
            if log is None:
                return KeysetPage([], False, False)
            rows = log.predictions_page(run_id, flt, cursor, limit)
        return keyset_page(PREDICTIONS_KEYSET, rows, limit, cursor)

    def predictions_count(
        self,
        run_id: str,
        flt: PredictionFilter,
        *,
        first_key: str | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> tuple[int, int | None]:
        """(matching rows, index of `first_key` among them or None). Uses covering indexes
        for the correct / task type filters; other filters scan the run's rows."""
        with self.reader(cancelled, SEARCH_TIME_LIMIT_S) as log:
            if log is None:
                return 0, None
            total = log.predictions_count(run_id, flt)
            position = None
            if first_key is not None and flt.is_empty:
                position = log.predictions_before(run_id, first_key)
        return total, position

    def prediction_task_types(self, run_id: str) -> list[str]:
        """Task types for the filter: the benchmark's list (cheap), else the run's rows."""
        bench = self.root / "questions" / "benchmark.toml"
        try:
            import tomllib

            types = tomllib.loads(bench.read_text(encoding="utf-8")).get("task_types")
            if isinstance(types, list) and types:
                return sorted(str(t) for t in types)
        except (OSError, ValueError):
            pass
        with self.reader() as log:
            return log.prediction_task_types(run_id) if log is not None else []

    def prediction(self, pred_id: int) -> dict[str, Any] | None:
        with self.reader() as log:
            row = log.prediction_columns(pred_id) if log is not None else None
        if row is None:
            return None
        try:
            steps = visible_tree(json.loads(row.get("steps_json") or "[]"))
        except (ValueError, RecursionError):
            steps = [{"type": "error", "error": "steps_json is not valid JSON"}]
        row["steps"] = steps if isinstance(steps, list) else []
        row.pop("steps_json", None)
        return row

    def question(self, question_id: str) -> dict[str, Any] | None:
        """The benchmark question (from the workspace's frozen copy), via a byte-offset index."""
        path = self.root / "questions" / "questions.jsonl"
        with self._lock:
            if self._question_index is None:
                index: dict[str, int] = {}
                try:
                    with open(path, "rb") as f:
                        offset = 0
                        for line in f:
                            with contextlib.suppress(
                                ValueError, AttributeError, TypeError, RecursionError
                            ):
                                index[visible(json.loads(line)["question_id"])] = offset
                            offset += len(line)
                except OSError:
                    pass
                self._question_index = index
            offset_of = self._question_index.get(visible(question_id))
            drawn = drawn_id(question_id)  # a gate draw asks its question again
            if offset_of is None and drawn is not None:
                offset_of = self._question_index.get(visible(drawn))
        if offset_of is None:
            return None
        try:
            with open(path, "rb") as f:
                f.seek(offset_of)
                obj = visible_tree(json.loads(f.readline()))
        except (OSError, ValueError, RecursionError):
            return None
        return obj if isinstance(obj, dict) else None
