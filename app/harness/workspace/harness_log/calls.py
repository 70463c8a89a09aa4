"""The `llm_calls` and `reply_attempts` tables: every model call with its tokens, cost and
retries, and every attempt of a structured reply (docs/architecture.md#the-harness-log)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.harness.workspace.harness_log.connection import LogConnection, LogQueries, LogRecord
from app.harness.workspace.harness_log.rows import RoleCalls, RoleIO, RunCalls, SpendRow


@dataclass(frozen=True)
class CallRecord(LogRecord):
    """One `llm_calls` row as written (app/harness/rollouts/telemetry.py)."""

    TABLE = "llm_calls"

    run_id: str | None
    role: str | None = None
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    status: str | None = None
    cache_hit: int | None = None
    at: str | None = None
    attempts: int | None = None
    retries: int | None = None
    timeouts: int | None = None
    response_format: str | None = None


@dataclass(frozen=True)
class ReplyAttemptRecord(LogRecord):
    """One request of a structured call (app/harness/rollouts/model_io.py)."""

    TABLE = "reply_attempts"

    run_id: str
    purpose: str
    subject: str
    attempt: int | None
    response_format: str | None
    status: str | None
    error: str
    reply: str
    at: str


@dataclass(frozen=True)
class PaidCalls:
    """Calls of one role (None: every role) that were not cache hits, and their cost."""

    role: str | None
    paid: int
    cost_usd: float


class CallsTable(LogConnection):
    """Writes of model calls and reply attempts, and the sums a run's ETA needs."""

    def add_calls(self, rows: Sequence[CallRecord]) -> None:
        self.insert(rows)

    def add_reply_attempts(self, rows: Sequence[ReplyAttemptRecord]) -> None:
        self.insert(rows)

    def next_call_id(self) -> int:
        """The id the next model call will get (ids only grow)."""
        return int(self._scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM llm_calls"))

    def paid_calls_of_train(self, first_call_id: int, train_id: str) -> list[PaidCalls]:
        """Per role, the calls from `first_call_id` on of a training run: its own, its step
        runs' (`<train_id>-...`) and the baseline's."""
        where, params = _train_calls(first_call_id, train_id)
        return [
            PaidCalls(r[0], r[1] or 0, r[2] or 0.0)
            for r in self.conn.execute(
                "SELECT role, SUM(1 - cache_hit), SUM(cost_usd) FROM llm_calls "
                f"WHERE {where} GROUP BY role",
                params,
            )
        ]

    def paid_call_count_of_train(self, first_call_id: int, train_id: str) -> int:
        """`paid_calls_of_train` over every role: how many calls were paid."""
        where, params = _train_calls(first_call_id, train_id)
        return int(
            self._scalar(
                f"SELECT COALESCE(SUM(1 - cache_hit), 0) FROM llm_calls WHERE {where}", params
            )
        )


def _train_calls(first_call_id: int, train_id: str) -> tuple[str, tuple[object, ...]]:
    return (
        "id >= ? AND (run_id = 'baseline' OR run_id = ? OR run_id LIKE ? ESCAPE '\\')",
        (first_call_id, train_id, train_id + "-%"),
    )


class CallReader(LogQueries):
    """Model calls, structured replies and money paid."""

    def by_role(self) -> list[RoleCalls]:
        """Every call summed per role, in SQLite's group order."""
        return [
            RoleCalls(**r)
            for r in self._rows(
                "SELECT role, COUNT(*) AS calls, SUM(cache_hit) AS cache_hits, "
                "SUM(cost_usd) AS cost_usd, SUM(tokens_in) AS tokens_in, "
                "SUM(tokens_out) AS tokens_out FROM llm_calls GROUP BY role"
            )
        ]

    def by_role_between(self, after_id: int, upto_id: int) -> list[RoleCalls]:
        """Calls with after_id < id <= upto_id summed per role (0 for empty sums), so a
        caller can keep running totals by adding each new id range."""
        return [
            RoleCalls(**r)
            for r in self._rows(
                "SELECT role, COUNT(*) AS calls, COALESCE(SUM(cache_hit), 0) AS cache_hits, "
                "COALESCE(SUM(cost_usd), 0) AS cost_usd, COALESCE(SUM(tokens_in), 0) AS "
                "tokens_in, COALESCE(SUM(tokens_out), 0) AS tokens_out FROM llm_calls "
                "WHERE id > ? AND id <= ? GROUP BY role",
                (after_id, upto_id),
            )
        ]

    def extent(self, known_max_id: int, known_rows: int) -> tuple[int, int]:
        """(MAX(id), COUNT(*)) of llm_calls from one read snapshot; the count is only taken
        when the max moved from `known_max_id` (else `known_rows` is returned)."""
        conn = self.log.conn
        conn.execute("BEGIN")  # MAX and COUNT from one snapshot; a short read transaction
        try:
            max_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM llm_calls").fetchone()[0]
            n_rows = (
                conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]
                if max_id != known_max_id
                else known_rows
            )
        finally:
            conn.execute("COMMIT")
        return max_id, n_rows

    def latencies(self, role: str | None) -> list[float]:
        """Latencies of a role's paid (not cached) calls, sorted."""
        return sorted(
            r["latency_s"]
            for r in self._rows(
                "SELECT latency_s FROM llm_calls WHERE role = ? AND cache_hit = 0 AND "
                "latency_s IS NOT NULL",
                (role,),
            )
        )

    def role_io(self, role: str | None) -> RoleIO:
        row = self._rows(
            "SELECT COALESCE(SUM(retries), 0) AS retries, "
            "COALESCE(SUM(timeouts), 0) AS timeouts, "
            "SUM(status NOT IN ('ok', 'retried')) AS failed FROM llm_calls "
            "WHERE role = ?",
            (role,),
        )[0]
        return RoleIO(retries=row["retries"], timeouts=row["timeouts"], failed=row["failed"] or 0)

    def response_formats(self, role: str | None) -> list[str]:
        return sorted(
            r["f"]
            for r in self._rows(
                "SELECT DISTINCT response_format AS f FROM llm_calls WHERE role = ? AND "
                "response_format IS NOT NULL",
                (role,),
            )
        )

    def reply_statuses(self) -> dict[str, int]:
        """Structured replies counted by `purpose:status`."""
        return {
            f"{r['purpose']}:{r['status']}": r["n"]
            for r in self._rows(
                "SELECT purpose, status, COUNT(*) AS n FROM reply_attempts GROUP BY purpose, status"
            )
        }

    def run_totals(self, run_id: str) -> RunCalls:
        """A run's calls: how many were paid and what they cost, the cache hits, the tokens of
        every call (a cache hit logs its tokens at no cost), and the models called."""
        row = self._rows(
            "SELECT COALESCE(SUM(cache_hit = 0), 0) AS paid_calls, "
            "COALESCE(SUM(cache_hit), 0) AS cache_hits, "
            "COALESCE(SUM(CASE WHEN cache_hit = 0 THEN cost_usd END), 0) AS cost_usd, "
            "COALESCE(SUM(tokens_in), 0) AS tokens_in, "
            "COALESCE(SUM(tokens_out), 0) AS tokens_out "
            "FROM llm_calls WHERE run_id = ?",
            (run_id,),
        )[0]
        models = self._column(
            "SELECT DISTINCT model FROM llm_calls WHERE run_id = ? ORDER BY model", (run_id,)
        )
        return RunCalls(**row, models=tuple(models))

    def role_totals(self, run_id: str, role: str) -> RoleCalls:
        """One role's calls of a run summed (None where SQLite's SUM had no rows)."""
        row = self._rows(
            "SELECT role, COUNT(*) AS calls, SUM(cache_hit) AS cache_hits, "
            "SUM(cost_usd) AS cost_usd, SUM(tokens_in) AS tokens_in, "
            "SUM(tokens_out) AS tokens_out FROM llm_calls WHERE run_id = ? AND role = ?",
            (run_id, role),
        )[0]
        return RoleCalls(**{**row, "role": role})

    def spend_from_calls(self) -> list[SpendRow]:
        """Paid calls by run as `llm_calls` has them (a workspace from before the ledger)."""
        return [
            SpendRow(**r)
            for r in self._rows(
                "SELECT run_id AS owner_run_id, COUNT(*) AS paid_calls, "
                "SUM(cost_usd) AS cost_usd FROM llm_calls WHERE cache_hit = 0 "
                "AND cost_usd > 0 GROUP BY run_id ORDER BY MIN(id)"
            )
        ]

    def spend_ledger(self) -> list[SpendRow] | None:
        """Paid calls by run from a response cache's spend ledger (None: no ledger). This
        reader must be open on `response_cache.db`."""
        if not self.has_table("spend"):
            return None
        return [
            SpendRow(**r)
            for r in self._rows(
                "SELECT owner_run_id, COUNT(*) AS paid_calls, SUM(cost_usd) AS cost_usd "
                "FROM spend GROUP BY owner_run_id ORDER BY MIN(id)"
            )
        ]
