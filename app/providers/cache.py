"""Request-hash response cache used in front of every provider (docs/architecture.md#models).

A resumed or repeated request (same model, messages, tools, sampling params and seed, which is
the sample index) is answered from SQLite and marked `cache_hit`. Every put commits at once, so
a SIGKILL loses at most the call in flight. The simulated model goes through this too, so the
hot path is one dict lookup, or one indexed SELECT plus one INSERT.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import sqlite_utils
from loguru import logger

from app.errors import storage_error
from app.secrets import scrub
from core.protocols import LLMProvider, Message, TelemetryRecorder
from core.types import LLMResponse, ToolCall, ToolSpec, Usage

BUSY_TIMEOUT_S = 5.0
# The spend ledger: one row per paid call, committed with its cached answer. Spend is a
# property of the run that pays (`owner_run_id`), kept across kills, resumes and redone steps
# (whose calls come back from the cache as free hits).
SPEND_TABLE = (
    "CREATE TABLE IF NOT EXISTS spend (id INTEGER PRIMARY KEY, owner_run_id TEXT NOT NULL, "
    "run_id TEXT, role TEXT, model TEXT, cost_usd REAL NOT NULL, pid INTEGER, at TEXT)"
)


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or not isinstance(
        exc, sqlite3.OperationalError
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, ToolSpec):
        return value.as_openai()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    # No str() fallback: an object repr with an address would make keys unstable.
    raise TypeError(f"cannot hash a {type(value).__name__} into a cache key")


# Built once: json.dumps with options constructs a new encoder on every call. ASCII output
# (the default) is canonical too and ~30 % faster to produce than ensure_ascii=False.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=_json_default)
_ROW_ENCODER = json.JSONEncoder(separators=(",", ":"))


def key_for(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec] | None,
    temperature: float,
    max_tokens: int,
    seed: int,
    role: str,
    response_format: dict[str, Any] | None = None,
) -> str:
    """sha256 of the canonical JSON of everything that determines the answer."""
    payload = {
        "model": model,
        "messages": messages,
        # None and [] ask the same thing; ToolSpecs are converted here, not via `default`.
        "tools": [t.as_openai() if isinstance(t, ToolSpec) else t for t in tools or ()],
        "temperature": float(temperature),  # 0 and 0.0 must not differ
        "max_tokens": int(max_tokens),
        "seed": int(seed),
        "role": role,
    }
    if response_format is not None:  # absent from older keys, which stay valid
        payload["response_format"] = response_format
    canonical = _KEY_ENCODER.encode(payload)
    return hashlib.sha256(canonical.encode()).hexdigest()


def response_to_json(response: LLMResponse) -> str:
    # Built by hand: dataclasses.asdict deep-copies and costs ~60 us a call on the hot path.
    # `cache_hit` is left out: it is a property of serving, not of the answer.
    data = {
        "text": response.text,
        "tool_calls": [
            {"id": tc.id, "name": tc.name, "arguments": tc.arguments} for tc in response.tool_calls
        ],
        "usage": {"tokens_in": response.usage.tokens_in, "tokens_out": response.usage.tokens_out},
        "cost_usd": response.cost_usd,
        "model": response.model,
        "latency_s": response.latency_s,
    }
    return _ROW_ENCODER.encode(data)


def response_from_json(text: str) -> LLMResponse:
    data = json.loads(text)
    return LLMResponse(
        text=data["text"],
        tool_calls=tuple(ToolCall(**tc) for tc in data.get("tool_calls") or ()),
        usage=Usage(**(data.get("usage") or {})),
        cost_usd=data.get("cost_usd", 0.0),
        model=data.get("model", ""),
        latency_s=data.get("latency_s", 0.0),
    )


class ResponseCache:
    """SQLite table `responses(key, response_json, created_at)` with a bounded dict in front."""

    key_for = staticmethod(key_for)

    def __init__(self, path: Path, *, memory_items: int = 50_000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = self._open()
        except sqlite3.DatabaseError as exc:  # e.g. torn by a power cut: it is only a cache
            if not _damaged(exc):  # a full disk is not a damaged cache: never set it aside
                raise storage_error(self.path, exc) from None
            self._set_aside(exc)
            try:
                self.db = self._open()
            except sqlite3.DatabaseError as again:
                raise storage_error(self.path, again) from None
        self._conn = self.db.conn
        self._lock = threading.Lock()
        self._memory: dict[str, LLMResponse] = {}
        self._memory_items = memory_items

    def _set_aside(self, exc: Exception) -> None:
        stamp = int(time.time())
        logger.warning(
            "response cache {} unreadable ({}); set aside, starting empty", self.path, exc
        )
        for suffix in ("", "-wal", "-shm"):  # a stale WAL must not replay into the new file
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.rename(part.with_name(f"{part.name}.corrupt-{stamp}"))

    def _open(self) -> sqlite_utils.Database:
        # Autocommit (isolation_level=None): each INSERT is its own committed transaction.
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            return self._prepare(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise

    def _prepare(self, conn: sqlite3.Connection) -> sqlite_utils.Database:
        db = sqlite_utils.Database(conn)
        db.enable_wal()
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        # WAL + synchronous=OFF: a committed row survives a process kill (the OS has it);
        # only an OS crash or power cut can lose or tear recent rows; a torn file is set aside
        # when next opened. It halves the cost of a put (~80 -> ~35 us), which the sim needs.
        conn.execute("PRAGMA synchronous=OFF")
        db.table("responses").create(
            {"key": str, "response_json": str, "created_at": str}, pk="key", if_not_exists=True
        )
        conn.execute(SPEND_TABLE)
        conn.execute("CREATE INDEX IF NOT EXISTS idx_spend_owner ON spend(owner_run_id)")
        return db

    def get(self, key: str) -> LLMResponse | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                return found
            row = self._conn.execute(
                "SELECT response_json FROM responses WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            response = response_from_json(row[0])
            self._remember(key, response)
            return response

    def put(
        self, key: str, response: LLMResponse, spend: tuple[str, str, str, str] | None = None
    ) -> None:
        """Store an answer; `spend` = (paying run, calling run, role, model) also records what
        the call cost in the ledger, in the same transaction: a paid call is never lost.

        A defective reply (`response.defect`) is paid for but is no answer: only its spend is
        recorded, so the next identical request asks the model again."""
        text = None if response.defect else scrub(response_to_json(response))  # redacted
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # UTC, cheap
        with self._lock:
            paid = spend  # every paid call, a free local model's too (max_calls counts them)
            self._write(key, text, created, paid, response.cost_usd)
            if text is None:
                return
            if response.cache_hit:
                response = dataclasses.replace(response, cache_hit=False)
            self._remember(key, response)

    def _write(
        self,
        key: str,
        text: str | None,
        created: str,
        paid: tuple[str, str, str, str] | None,
        cost_usd: float,
    ) -> None:
        """The answer row (unless `text` is None) and the ledger row, in one transaction."""
        if paid:
            self._conn.execute("BEGIN")
        try:
            if text is not None:
                self._conn.execute(
                    "INSERT OR REPLACE INTO responses (key, response_json, created_at) "
                    "VALUES (?, ?, ?)",
                    (key, text, created),
                )
            if paid:
                self._conn.execute(
                    "INSERT INTO spend (owner_run_id, run_id, role, model, cost_usd, pid, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*paid, cost_usd, os.getpid(), created),
                )
                self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def spend_total(self, owner_run_id: str) -> float:
        with self._lock:
            row = self._conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM spend WHERE owner_run_id = ?",
                (owner_run_id,),
            ).fetchone()
        return float(row[0])

    def paid_calls_by_run(self, owner_run_id: str) -> dict[str, int]:
        """The paid calls `owner_run_id` was charged, by the run that made them."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT run_id, COUNT(*) FROM spend WHERE owner_run_id = ? GROUP BY run_id",
                (owner_run_id,),
            ).fetchall()
        return {str(run_id): int(n) for run_id, n in rows}

    def __len__(self) -> int:
        with self._lock:
            count: int = self._conn.execute("SELECT count(*) FROM responses").fetchone()[0]
            return count

    def close(self) -> None:
        with self._lock:
            self._memory.clear()
            self._conn.close()

    def _remember(self, key: str, response: LLMResponse) -> None:
        if len(self._memory) >= self._memory_items:
            del self._memory[next(iter(self._memory))]  # drop the oldest insert: O(1), bounded
        self._memory[key] = response


class CachingProvider:
    """`LLMProvider` that answers repeats from a `ResponseCache` and records every call."""

    def __init__(
        self,
        inner: LLMProvider,
        cache: ResponseCache,
        *,
        model_name: str,
        recorder: TelemetryRecorder | None = None,
        variant: str = "",
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.model_name = model_name
        # keyed with the model's name: a simulated model's non-default settings
        # (app/providers/factory.py sim_variant); "" keeps the plain name's keys
        self._key_model = f"{model_name} {variant}" if variant else model_name
        self.recorder = recorder
        self._store_failed = False

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int = 0,
        role: str = "agent",
        response_format: dict[str, Any] | None = None,
    ) -> LLMResponse:
        key = key_for(
            self._key_model, messages, tools, temperature, max_tokens, seed, role, response_format
        )
        cached = self._lookup(key)
        if cached is not None:
            # Served locally: nothing was spent and nothing was waited for.
            hit = dataclasses.replace(
                cached,
                cache_hit=True,
                latency_s=0.0,
                cost_usd=0.0,
                attempts=0,
                retries=0,
                timeouts=0,
            )
            self._record(role, hit, "ok", response_format)
            return hit
        start = time.perf_counter()
        extra = {"response_format": response_format} if response_format is not None else {}
        try:
            response = await self.inner.complete(
                messages,
                tools=tools,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                role=role,
                **extra,
            )
        except Exception as exc:  # recorded, never cached
            failed = LLMResponse(
                text="",
                latency_s=time.perf_counter() - start,
                attempts=getattr(exc, "call_attempts", 1),
                retries=getattr(exc, "call_retries", 0),
                timeouts=getattr(exc, "call_timeouts", 0),
            )
            status = (
                "timeout" if getattr(exc, "timed_out", False) else f"error:{type(exc).__name__}"
            )
            self._record(role, failed, status, response_format)
            raise
        self._store(key, response, role)
        self._record(role, response, _call_status(response), response_format)
        return response

    def _lookup(self, key: str) -> LLMResponse | None:
        try:
            return self.cache.get(key)
        except sqlite3.Error as exc:  # a cache fault costs a call, never the run
            logger.warning("response cache read failed ({}): {}", self.cache.path, exc)
            return None

    def _store(self, key: str, response: LLMResponse, role: str) -> None:
        tag = getattr(self.recorder, "spend_tag", None)
        spend = (*tag(), role, self.model_name) if tag else None
        try:
            self.cache.put(key, response, spend)
        except sqlite3.Error as exc:  # the answer is good and paid for: keep going
            if not self._store_failed:  # once: a full disk would otherwise warn per call
                logger.warning(
                    "response cache write failed ({}): {}; answers are not cached "
                    "until it works again",
                    self.cache.path,
                    exc,
                )
            self._store_failed = True
        else:
            self._store_failed = False

    def _record(
        self,
        role: str,
        response: LLMResponse,
        status: str,
        response_format: dict[str, Any] | None = None,
    ) -> None:
        if self.recorder is None:
            return
        self.recorder.record_call(
            {
                "role": role,
                "model": self.model_name,
                "tokens_in": response.usage.tokens_in,
                "tokens_out": response.usage.tokens_out,
                "cost_usd": response.cost_usd,
                "latency_s": response.latency_s,
                "status": status,
                "cache_hit": int(response.cache_hit),
                "attempts": response.attempts,
                "retries": response.retries,
                "timeouts": response.timeouts,
                "response_format": _format_name(response_format),
            }
        )


def _format_name(response_format: dict[str, Any] | None) -> str | None:
    """The response-format level a call asked for (core.structured.LEVELS), for the log."""
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind == "json_object" and "schema" in response_format:
        return "json_object_schema"
    return str(kind)


def _call_status(response: LLMResponse) -> str:
    """`llm_calls.status` of a call the model answered: a defective reply counts as failed."""
    if response.defect:
        return f"defect:{response.defect}"
    return "retried" if response.retries else "ok"
