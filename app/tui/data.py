"""Read-only access to a workspace for the TUI (docs/architecture.md#commands-and-the-tui).

Every query opens its own short-lived read-only connection (`HarnessLog(readonly=True)`), runs
a bounded query and closes it, so the TUI never holds a lock or a long read transaction while
`train` writes. Nothing here loads a whole table: step reports page with LIMIT/OFFSET (at most
tens of thousands of rows, sorted in SQL), runs and predictions page by keyset on indexed
columns (`_runs.seq`, `predictions(run_id, question_id)`), counts use covering indexes, and the
cost-by-role totals are kept incrementally by `llm_calls.id`.

All methods are blocking and meant to run in worker threads; the class is thread-safe.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from app.harness.log import HarnessLog, RunStatus
from app.harness.run_progress import progress_view
from app.harness.vocabulary import Count, SkipAction
from app.harness.workspace import KINDS, list_versions, read_manifest
from app.sanitize import visible, visible_sqlite_text, visible_tree
from core.evolution.gate import GateAction


# -- vocabularies -----------------------------------------------------------------------------
class ShownStatus(StrEnum):
    """The latest train run's status as the TUI shows it (from train.lock and `_runs`)."""

    RUNNING = "running"  # train.lock names a live process on this host
    STOPPED = "stopped"  # stopped, or marked running with no live process: resumable
    FINISHED = "finished"
    FAILED = "failed"
    NOT_STARTED = "not started"
    UNKNOWN = "unknown"  # train.lock is held on another host


SHOWN_STATUS: dict[str, ShownStatus] = {
    RunStatus.RUNNING: ShownStatus.STOPPED,  # no live process holds train.lock: resumable
    RunStatus.STOPPED: ShownStatus.STOPPED,
    RunStatus.DONE: ShownStatus.FINISHED,
    RunStatus.FAILED: ShownStatus.FAILED,
}
# The Overview's decision counts: step reports tallied by action (rolled back comes from the
# epoch reports).
COUNT_LABELS: tuple[str, ...] = (
    Count.ACCEPTED,
    Count.PROVISIONAL,
    Count.REJECTED,
    Count.ROLLED_BACK,
    Count.COOLDOWN,
    Count.SKIPPED,
    Count.EVOLVE_FAILED,
)
ACTION_TO_COUNT: dict[str, Count] = {
    GateAction.ACCEPT: Count.ACCEPTED,
    GateAction.ACCEPT_PROVISIONAL: Count.PROVISIONAL,
    GateAction.REJECT: Count.REJECTED,
    SkipAction.SKIP_COOLDOWN: Count.COOLDOWN,
    SkipAction.SKIP_NO_CHANGE: Count.SKIPPED,
    SkipAction.SKIP_NO_FAILURES: Count.SKIPPED,
    SkipAction.SKIP_NO_SKILL_GAPS: Count.SKIPPED,
    SkipAction.EVOLVE_FAILED: Count.EVOLVE_FAILED,
}

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
STEP_COLUMNS = (
    "id",
    "run_id",
    "epoch",
    "step",
    "task_type",
    "action",
    "cand_acc",
    "base_acc",
    "w",
    "l",
    "e_value",
    "n_used",
    "stop_reason",
    "edit_budget",
    "gate_run_id",
)
PREDICTION_COLUMNS = (
    "id",
    "run_id",
    "question_id",
    "unit_id",
    "task_type",
    "prediction",
    "answer",
    "correct",
    "stop_reason",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "latency_s",
)
# Latest row per (epoch, step, task type): a redone step's stale rows never show twice.
_LATEST_STEPS = "id IN (SELECT MAX(id) FROM step_reports GROUP BY epoch, step, task_type)"
_LATEST_EPOCHS = "id IN (SELECT MAX(id) FROM epoch_reports GROUP BY epoch)"
SEARCH_TIME_LIMIT_S = 20.0


class QueryCancelled(Exception):
    """A long query was interrupted (the worker that asked for it was cancelled)."""


# -- value types ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainStatus:
    state: str  # a ShownStatus, or `_runs.status` as stored when it is none of RunStatus
    detail: str = ""
    run_id: str | None = None
    pid: int | None = None


@dataclass(frozen=True)
class StepFilter:
    task_type: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class StepPage:
    rows: list[dict[str, Any]]
    offset: int
    total: int

    @property
    def has_prev(self) -> bool:
        return self.offset > 0

    @property
    def has_next(self) -> bool:
        return self.offset + len(self.rows) < self.total


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
class KeysetPage:
    """One page of a keyset-paginated list; `first`/`last` are the keys at its edges."""

    rows: list[dict[str, Any]]
    has_prev: bool
    has_next: bool
    first: Any = None
    last: Any = None


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
    more than a page to know whether another follows, and a page found backwards is read in
    reverse and turned round.
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

    def page(self, rows: list[dict[str, Any]], limit: int, cursor: PageCursor) -> KeysetPage:
        """The page from the (up to limit + 1) rows `where` selected, in list order."""
        more = len(rows) > limit
        rows = rows[:limit]
        if cursor.backwards:
            rows.reverse()
            has_prev, has_next = more, not cursor.last
        else:
            has_prev, has_next = cursor.after is not None or cursor.start is not None, more
        return KeysetPage(
            rows,
            has_prev,
            has_next,
            rows[0][self.column] if rows else None,
            rows[-1][self.column] if rows else None,
        )


# Runs newest first by `_runs.seq`; predictions by question id on (run_id, question_id).
RUNS_KEYSET = Keyset("seq", descending=True)
PREDICTIONS_KEYSET = Keyset("question_id")


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


@dataclass
class _CallTotals:
    max_id: int = 0
    rows: int = 0
    by_role: dict[str, dict[str, float]] = field(default_factory=dict)


# -- helpers ----------------------------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except (OSError, ValueError, OverflowError):
        return False
    return True


def _read_json(path: Path) -> Any:
    """A JSON file or None when missing or mid-replace (the writer's rename is atomic)."""
    try:
        with open(path, encoding="utf-8") as f:
            return visible_tree(json.load(f))
    except (OSError, ValueError, RecursionError):
        return None


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def colour_diff_lines(diff: str) -> list[tuple[str, str]]:
    """(line, style) pairs for a unified diff; the widgets turn them into rich Text."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        out.append((line, style))
    return out


def unified_diff(a: str, b: str, a_name: str, b_name: str, context: int = 3) -> str:
    return "".join(
        difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            fromfile=a_name,
            tofile=b_name,
            n=context,
        )
    )


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
                "modified": _mtime(p / "manifest.json"),
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
    ) -> Iterator[HarnessLog | None]:
        """A fresh read-only connection for one batch of short queries (None: no log yet)."""
        if not self.db_path.exists():
            yield None
            return
        log = HarnessLog(self.db_path, readonly=True)
        log.conn.text_factory = visible_sqlite_text  # every string shown comes out printable
        if cancelled is not None or time_limit is not None:
            deadline = time.monotonic() + time_limit if time_limit else None

            def check() -> int:
                if cancelled is not None and cancelled():
                    return 1
                return 1 if deadline is not None and time.monotonic() > deadline else 0

            log.conn.set_progress_handler(check, 20_000)
        try:
            yield log
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e):
                raise QueryCancelled(str(e)) from None
            raise
        finally:
            log.close()

    # -- files ------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        return visible_tree(read_manifest(self.root))

    def checkpoint(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "checkpoint.json")
        return data if isinstance(data, dict) else None

    def lock_info(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "train.lock")
        return data if isinstance(data, dict) else None

    def run_status(self, log: HarnessLog | None = None) -> TrainStatus:
        """running only if train.lock names a live pid on this host; else from `_runs`."""
        lock = self.lock_info()
        if lock and isinstance(lock.get("pid"), int):
            host = lock.get("host") or ""
            if host and host != socket.gethostname():
                return TrainStatus(
                    ShownStatus.UNKNOWN,
                    f"train.lock held by pid {lock['pid']} on {host}",
                    pid=lock["pid"],
                )
            if pid_alive(lock["pid"]):
                return TrainStatus(
                    ShownStatus.RUNNING,
                    f"pid {lock['pid']} since {lock.get('started_at', '?')}",
                    pid=lock["pid"],
                )
        if log is None:
            with self.reader() as fresh:
                return self._status_from_runs(fresh)
        return self._status_from_runs(log)

    @staticmethod
    def _status_from_runs(log: HarnessLog | None) -> TrainStatus:
        if log is None:
            return TrainStatus(ShownStatus.NOT_STARTED)
        rows = log.query(
            "SELECT run_id, status, started_at, finished_at, summary_json "
            "FROM _runs WHERE kind = 'train' ORDER BY seq DESC LIMIT 1"
        )
        if not rows:
            return TrainStatus(ShownStatus.NOT_STARTED, "no train run in the log")
        r = rows[0]
        state = SHOWN_STATUS.get(r["status"] or "", r["status"] or ShownStatus.UNKNOWN)
        when = r["finished_at"] or r["started_at"] or ""
        detail = (
            f"{r['run_id']} (no live process; resume with train --resume)"
            if state == ShownStatus.STOPPED
            else f"{r['run_id']} {when}"
        )
        reason = _run_reason(r.get("summary_json"))
        if reason and r["status"] in (
            RunStatus.FAILED,
            RunStatus.STOPPED,
        ):  # say why, where people look
            detail += f": {reason}"
        resumes = log.resumes([r["run_id"]])
        if resumes:  # a resumed run is not a plain "done"
            detail += f"; resumed {_times(len(resumes))}, last {resumes[-1].text()}"
        return TrainStatus(state, visible(detail), run_id=r["run_id"])

    # -- change detection -------------------------------------------------------------------
    def fingerprint(self) -> dict[str, Any]:
        """Cheap per-kind change markers: MAX(id) on rowid tables, file mtimes, lock liveness."""
        fp: dict[str, Any] = {
            "checkpoint": _mtime(self.root / "checkpoint.json"),
            "manifest": _mtime(self.root / "manifest.json"),
            "versions": (_mtime(self.root / "skills"), _mtime(self.root / "prompts")),
        }
        lock = self.lock_info()
        fp["status"] = (
            _mtime(self.root / "train.lock"),
            pid_alive(lock["pid"]) if lock and isinstance(lock.get("pid"), int) else None,
        )
        with self.reader() as log:
            if log is None:
                return fp
            row = log.conn.execute(
                "SELECT (SELECT MAX(id) FROM step_reports), (SELECT MAX(id) FROM gate_evidence),"
                " (SELECT MAX(id) FROM predictions), (SELECT MAX(id) FROM epoch_reports),"
                " (SELECT MAX(id) FROM llm_calls), (SELECT MAX(seq) FROM _runs)"
            ).fetchone()
            last_runs = log.conn.execute(
                "SELECT group_concat(status || ':' || COALESCE(finished_at, '')) FROM "
                "(SELECT status, finished_at FROM _runs ORDER BY seq DESC LIMIT 3)"
            ).fetchone()
        fp["steps"] = (row[0], row[1])
        fp["predictions"] = row[2]
        fp["epochs"] = row[3]
        fp["calls"] = row[4]
        fp["runs"] = (row[5], last_runs[0])
        fp["status"] = (*fp["status"], last_runs[0])
        return fp

    # -- overview ---------------------------------------------------------------------------
    def overview(self, *, with_calls: bool = True) -> Overview:
        """Everything on the Overview. `with_calls=False` leaves the cost totals out (the
        first sum over a million-row llm_calls table takes seconds; see `call_totals`)."""
        manifest = self.manifest()
        with self.reader() as log:
            status = self.run_status(log)
            if log is None:
                epochs, counts, calls, simulated = [], dict.fromkeys(COUNT_LABELS, 0), [], False
            else:
                epochs = self.epochs(log)
                counts = self.action_counts(log, epochs)
                calls = self.calls_by_role(log) if with_calls else []
                simulated = self.simulated(log)
        return Overview(
            name=self.name,
            manifest=manifest,
            checkpoint=self.checkpoint(),
            status=status,
            epochs=epochs,
            counts=counts,
            calls=calls,
            simulated=simulated,
            n_versions={k: len(list_versions(self.root, k)) for k in KINDS},
        )

    @staticmethod
    def epochs(log: HarnessLog) -> list[dict[str, Any]]:
        rows = log.query(
            f"SELECT run_id, epoch, val_acc, test_acc, report_json FROM epoch_reports "
            f"WHERE {_LATEST_EPOCHS} ORDER BY epoch"
        )
        out = []
        for r in rows:
            try:
                report = visible_tree(json.loads(r.pop("report_json") or "{}"))
            except (ValueError, RecursionError):
                report = {}
            r["report"] = report if isinstance(report, dict) else {}
            out.append(r)
        return out

    @staticmethod
    def action_counts(log: HarnessLog, epochs: list[dict[str, Any]]) -> dict[str, int]:
        """Counts from the step reports (live, includes the epoch in flight); rolled back
        comes from the epoch reports (only the slow update rolls back)."""
        counts = dict.fromkeys(COUNT_LABELS, 0)
        for r in log.query(
            f"SELECT action, COUNT(*) AS n FROM step_reports WHERE {_LATEST_STEPS} GROUP BY action"
        ):
            label = ACTION_TO_COUNT.get(r["action"] or "")
            if label:
                counts[label] += r["n"]
        counts[Count.ROLLED_BACK] = sum(
            int((e["report"].get("counts") or {}).get(Count.ROLLED_BACK) or 0) for e in epochs
        )
        return counts

    def calls_by_role(self, log: HarnessLog) -> list[dict[str, Any]]:
        """Tokens and cost per role, summed incrementally by id. The tally of rows seen is
        compared with COUNT(*) in the same read snapshot; any deletion forces a full resum."""
        with self._lock:
            state = self._calls
            conn = log.conn
            conn.execute("BEGIN")  # MAX and COUNT from one snapshot; a short read transaction
            try:
                max_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM llm_calls").fetchone()[0]
                n_rows = (
                    conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]
                    if max_id != state.max_id
                    else state.rows
                )
            finally:
                conn.execute("COMMIT")
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
    def _add_calls(log: HarnessLog, state: _CallTotals, max_id: int) -> None:
        keys = ("calls", "cache_hits", "tokens_in", "tokens_out", "cost_usd")
        for r in log.query(
            "SELECT role, COUNT(*) AS calls, COALESCE(SUM(cache_hit), 0) AS cache_hits, "
            "COALESCE(SUM(tokens_in), 0) AS tokens_in, COALESCE(SUM(tokens_out), 0) AS "
            "tokens_out, COALESCE(SUM(cost_usd), 0) AS cost_usd FROM llm_calls "
            "WHERE id > ? AND id <= ? GROUP BY role",
            (state.max_id, max_id),
        ):
            acc = state.by_role.setdefault(r["role"] or "?", dict.fromkeys(keys, 0))
            for k in keys:
                acc[k] += r[k]
            state.rows += r["calls"]
        state.max_id = max_id

    @staticmethod
    def _calls_rows(state: _CallTotals) -> list[dict[str, Any]]:
        return [{"role": role, **vals} for role, vals in sorted(state.by_role.items())]

    @staticmethod
    def simulated(log: HarnessLog) -> bool:
        return (
            log.conn.execute(
                "SELECT 1 FROM _runs WHERE json_valid(provenance_json) AND "
                "json_extract(provenance_json, '$.simulated_model') = 1 LIMIT 1"
            ).fetchone()
            is not None
        )

    # -- steps ------------------------------------------------------------------------------
    def step_filter_options(self) -> tuple[list[str], list[str]]:
        with self.reader() as log:
            if log is None:
                return [], []
            types = [
                r[0]
                for r in log.conn.execute(
                    "SELECT DISTINCT task_type FROM step_reports ORDER BY task_type"
                )
                if r[0]
            ]
            actions = [
                r[0]
                for r in log.conn.execute(
                    "SELECT DISTINCT action FROM step_reports ORDER BY action"
                )
                if r[0]
            ]
        return types, actions

    def steps_page(
        self,
        flt: StepFilter,
        *,
        sort: str = "order",
        descending: bool = True,
        offset: int = 0,
        limit: int = 200,
    ) -> StepPage:
        terms = STEP_SORTS.get(sort, STEP_SORTS["order"])
        direction = "DESC" if descending else "ASC"
        # the chosen column in the chosen direction; ties read naturally (task type A-Z)
        order = (
            ", ".join(
                f"{t} {'ASC' if t == 'task_type' and i else direction}" for i, t in enumerate(terms)
            )
            + f", id {direction}"
        )
        where, params = [_LATEST_STEPS], []
        if flt.task_type:
            where.append("task_type = ?")
            params.append(flt.task_type)
        if flt.action:
            where.append("action = ?")
            params.append(flt.action)
        clause = " AND ".join(where)
        with self.reader() as log:
            if log is None:
                return StepPage([], 0, 0)
            total = log.conn.execute(
                f"SELECT COUNT(*) FROM step_reports WHERE {clause}", params
            ).fetchone()[0]
            offset = max(0, min(offset, max(0, total - 1) // limit * limit))
            rows = log.query(
                f"SELECT {', '.join(STEP_COLUMNS)} FROM step_reports "
                f"WHERE {clause} ORDER BY {order} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        return StepPage(rows, offset, total)

    def step_detail(self, step_id: int, evidence_limit: int = 5000) -> dict[str, Any] | None:
        """The step's full report (DB row, falling back to its JSON file) and gate evidence."""
        with self.reader() as log:
            if log is None:
                return None
            rows = log.query("SELECT * FROM step_reports WHERE id = ?", (step_id,))
            if not rows:
                return None
            row = rows[0]
            report: Any = None
            with contextlib.suppress(ValueError, TypeError, RecursionError):
                report = visible_tree(json.loads(row.get("report_json") or "null"))
            if not isinstance(report, dict):
                report = _read_json(
                    self.root
                    / "reports"
                    / "steps"
                    / f"e{row['epoch']}_s{row['step']}_{row['task_type']}.json"
                )
            evidence = []
            if row.get("gate_run_id"):
                evidence = log.query(
                    "SELECT idx, unit_id, base, cand, outcome, w, l, e_win, e_harm "
                    "FROM gate_evidence WHERE run_id = ? AND task_type = ? ORDER BY idx LIMIT ?",
                    (row["gate_run_id"], row["task_type"], evidence_limit),
                )
        row.pop("report_json", None)
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
            if log is None:
                return []
            return [
                r[0]
                for r in log.conn.execute("SELECT DISTINCT kind FROM _runs ORDER BY kind")
                if r[0]
            ]

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
        conditions, keys, order = RUNS_KEYSET.where(cursor)
        where, params = (["kind = ?", *conditions], [kind, *keys]) if kind else (conditions, keys)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self.reader() as log:
            if log is None:
                return KeysetPage([], False, False)
            page = RUNS_KEYSET.page(
                log.query(
                    f"SELECT seq, run_id, kind, parent_run_id, skills_version, prompts_version, "
                    f"status, started_at, finished_at, provenance_json, summary_json FROM _runs "
                    f"{clause} {order} LIMIT ?",
                    [*params, limit + 1],
                ),
                limit,
                cursor,
            )
            rows = page.rows
            resumed = Counter(x.run_id for x in log.resumes([r["run_id"] for r in rows]))
            counts = (
                {
                    r["run_id"]: r
                    for r in log.query(
                        f"SELECT run_id, COUNT(*) AS n, SUM(correct) AS n_correct FROM predictions "
                        f"WHERE run_id IN ({', '.join('?' for _ in rows)}) GROUP BY run_id",
                        [r["run_id"] for r in rows],
                    )
                }
                if rows
                else {}
            )
        for r in rows:
            c = counts.get(r["run_id"])
            r["n_predictions"] = c["n"] if c else 0
            r["n_correct"] = (c["n_correct"] or 0) if c else 0
            prov = _loads(r.pop("provenance_json"))
            summary = _loads(r.pop("summary_json"))
            r["simulated"] = bool(prov.get("simulated_model"))
            r["accuracy"] = summary.get("accuracy")
            r["resumes"] = resumed[r["run_id"]]
        return page

    def run(self, run_id: str) -> dict[str, Any] | None:
        with self.reader() as log:
            return log.run(run_id) if log is not None else None

    # -- predictions ------------------------------------------------------------------------
    def _prediction_where(self, run_id: str, flt: PredictionFilter) -> tuple[list[str], list[Any]]:
        where: list[str] = ["run_id = ?"]
        params: list[Any] = [run_id]
        if flt.correct is not None:
            where.append("correct = ?")
            params.append(int(flt.correct))
        if flt.task_type:
            where.append("task_type = ?")
            params.append(flt.task_type)
        if flt.stop_reason:
            where.append("stop_reason = ?")
            params.append(flt.stop_reason)
        if flt.search:
            like = (
                "%" + flt.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            where.append(
                "(question_id LIKE ? ESCAPE '\\' OR prediction LIKE ? ESCAPE '\\' "
                "OR answer LIKE ? ESCAPE '\\' OR steps_json LIKE ? ESCAPE '\\')"
            )
            params += [like] * 4
        return where, params

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
        where, params = self._prediction_where(run_id, flt)
        conditions, keys, order = PREDICTIONS_KEYSET.where(cursor)
        sql = (
            f"SELECT {', '.join(PREDICTION_COLUMNS)} FROM predictions "
            f"INDEXED BY idx_pred_run_q WHERE {' AND '.join(where + conditions)} {order} LIMIT ?"
        )
        with self.reader(cancelled, SEARCH_TIME_LIMIT_S if flt.search else None) as log:
            if log is None:
                return KeysetPage([], False, False)
            rows = log.query(sql, [*params, *keys, limit + 1])
        return PREDICTIONS_KEYSET.page(rows, limit, cursor)

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
        where, params = self._prediction_where(run_id, flt)
        with self.reader(cancelled, SEARCH_TIME_LIMIT_S) as log:
            if log is None:
                return 0, None
            total = log.conn.execute(
                f"SELECT COUNT(*) FROM predictions WHERE {' AND '.join(where)}", params
            ).fetchone()[0]
            position = None
            if first_key is not None and flt.is_empty:
                position = log.conn.execute(
                    "SELECT COUNT(*) FROM predictions WHERE run_id = ? AND question_id < ?",
                    (run_id, first_key),
                ).fetchone()[0]
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
            if log is None:
                return []
            return [
                r[0]
                for r in log.conn.execute(
                    "SELECT DISTINCT task_type FROM predictions WHERE run_id = ? LIMIT 100",
                    (run_id,),
                )
                if r[0]
            ]

    def prediction(self, pred_id: int) -> dict[str, Any] | None:
        with self.reader() as log:
            if log is None:
                return None
            rows = log.query("SELECT * FROM predictions WHERE id = ?", (pred_id,))
        if not rows:
            return None
        row = rows[0]
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
        if offset_of is None:
            return None
        try:
            with open(path, "rb") as f:
                f.seek(offset_of)
                obj = visible_tree(json.loads(f.readline()))
        except (OSError, ValueError, RecursionError):
            return None
        return obj if isinstance(obj, dict) else None


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = visible_tree(json.loads(text or "{}"))
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _run_reason(summary_json: str | None) -> str:
    """The failure or stop reason a run stored in its summary ("" if none)."""
    try:
        summary = json.loads(summary_json or "{}")
    except ValueError:
        return ""
    reason = summary.get("reason") if isinstance(summary, dict) else None
    return str(reason)[:200] if reason else ""
