"""The `memories` table and its full-text index `memories_fts`: verified winning branches
that later rollouts retrieve by BM25 (app/harness/rollouts/memory.py,
docs/architecture.md#the-harness-log)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.harness.workspace.harness_log.connection import LogConnection


@dataclass(frozen=True)
class MemoryRecord:
    """One memory as stored (its task, key steps and final answer on one line each)."""

    run_id: str
    question_id: str
    branch_index: int
    task_type: str | None
    task: str
    key_steps: str
    final_answer: str
    created_at: str
    skills_version: str | None


@dataclass(frozen=True)
class RecalledMemory:
    """A memory a task retrieved, with its BM25 score (lower is better)."""

    question_id: str
    task_type: str | None
    task: str
    key_steps: str
    final_answer: str
    run_id: str
    skills_version: str | None
    bm25: float


@dataclass(frozen=True)
class TeacherAnswer:
    """A memory a `distill` run stored, with its run's config (the teacher model's)."""

    question_id: str
    final_answer: str | None
    config_json: str | None


class MemoriesTable(LogConnection):
    """Writes and reads of memories."""

    def add_memories(self, rows: Sequence[MemoryRecord]) -> int:
        """Store the memories not stored yet (one transaction), each also in the full-text
        index; how many were new."""
        stored = 0
        with self._txn():
            for m in rows:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO memories (run_id, question_id, branch_index, "
                    "task_type, task, key_steps, final_answer, created_at, skills_version) "
                    "VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        m.run_id,
                        m.question_id,
                        m.branch_index,
                        m.task_type,
                        m.task,
                        m.key_steps,
                        m.final_answer,
                        m.created_at,
                        m.skills_version,
                    ),
                )
                if cur.rowcount:
                    self.conn.execute(
                        "INSERT INTO memories_fts (rowid, task, task_type) VALUES (?,?,?)",
                        (cur.lastrowid, m.task, m.task_type),
                    )
                    stored += 1
        return stored

    def recall(
        self, fts_query: str, exclude_question: str, run_id: str | None, limit: int
    ) -> list[RecalledMemory]:
        """The best `limit` memories matching an FTS5 query (of `run_id` only, if given),
        best first, leaving out those of `exclude_question`."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT m.question_id, m.task_type, m.task, m.key_steps, m.final_answer, "
                "m.run_id, m.skills_version, bm25(memories_fts) AS bm25 FROM memories_fts "
                "JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ? "
                "AND m.question_id != ? AND (? IS NULL OR m.run_id = ?) ORDER BY bm25 LIMIT ?",
                (fts_query, exclude_question, run_id, run_id, limit),
            ).fetchall()
        return [RecalledMemory(*r) for r in rows]

    def teacher_answers(self, question_ids: Sequence[str]) -> list[TeacherAnswer]:
        """The memories `distill` runs stored for these questions."""
        marks = ",".join("?" * len(question_ids))
        return [
            TeacherAnswer(*r)
            for r in self.conn.execute(
                "SELECT m.question_id, m.final_answer, r.config_json FROM memories m "
                "JOIN _runs r ON r.run_id = m.run_id WHERE r.kind = 'distill' "
                f"AND m.question_id IN ({marks})",
                tuple(question_ids),
            )
        ]

    def memory_count(self, run_id: str | None = None) -> int:
        """How many memories are stored (by `run_id` only, if given)."""
        if run_id is None:
            return int(self._scalar("SELECT COUNT(*) FROM memories"))
        return int(self._scalar("SELECT COUNT(*) FROM memories WHERE run_id = ?", (run_id,)))
