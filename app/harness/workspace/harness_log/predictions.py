"""The `predictions` table: one answer per (run, question), its trajectory in `steps_json`
(docs/architecture.md#the-harness-log). `PredictionRecord.build` makes every row written,
whether an agent answered (app/harness/rollouts/inference.py), a served request
(app/harness/serving/agent.py) or an ingested trace (app/harness/ingest/service.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.harness.workspace.harness_log.connection import LogConnection, LogQueries, LogRecord
from app.harness.workspace.harness_log.rows import (
    PREDICTION_COLUMNS,
    PREDICTIONS_KEYSET,
    PageCursor,
    PredictionFilter,
    PredictionRow,
)
from app.secrets import scrub


@dataclass(frozen=True)
class PredictionRecord(LogRecord):
    """One `predictions` row as written; `build` makes it."""

    TABLE = "predictions"

    run_id: str
    question_id: str
    unit_id: str | None
    task_type: str | None
    prediction: str | None
    answer: str | None
    correct: int | None  # NULL: not graded (a served request, an unscored trace)
    stop_reason: str | None
    steps_json: str
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    latency_s: float | None
    skills_version: str | None
    prompts_version: str | None
    created_at: str
    answer_source: str | None
    score: float | None
    check_status: str | None
    check_reason: str | None

    @classmethod
    def build(
        cls,
        *,
        run_id: str,
        question_id: str,
        unit_id: str | None,
        task_type: str | None,
        prediction: str,
        answer: str | None,
        correct: bool | int | None,
        stop_reason: str | None,
        steps: Sequence[Mapping[str, Any]],
        tokens: tuple[int | None, int | None],
        cost_usd: float | None,
        latency_s: float | None,
        versions: tuple[str | None, str | None],
        created_at: str,
        answer_source: str | None = None,
        check: tuple[float | None, str | None, str | None] = (None, None, None),
    ) -> PredictionRecord:
        """The row of one answer: the trajectory as JSON, secrets scrubbed from the answer and
        trajectory, `correct` as 0/1 (None: not graded); `tokens` (in, out), `versions`
        (skills, prompts), `check` the checker's (score, status, reason)."""
        score, check_status, check_reason = check
        return cls(
            run_id=run_id,
            question_id=question_id,
            unit_id=unit_id,
            task_type=task_type,
            prediction=scrub(prediction),
            answer=answer,
            correct=None if correct is None else int(correct),
            stop_reason=stop_reason,
            steps_json=scrub(json.dumps(list(steps), ensure_ascii=False)),
            tokens_in=tokens[0],
            tokens_out=tokens[1],
            cost_usd=cost_usd,
            latency_s=latency_s,
            skills_version=versions[0],
            prompts_version=versions[1],
            created_at=created_at,
            answer_source=answer_source or None,
            score=score,
            check_status=check_status,
            check_reason=check_reason or None,
        )


@dataclass(frozen=True)
class PredictionTrajectory:
    """A prediction with its trajectory (what diagnosis and skill activation read)."""

    question_id: str
    task_type: str  # every writer writes a task type, an answer and a stop reason (`build`)
    prediction: str
    correct: int | None
    stop_reason: str
    steps_json: str


@dataclass(frozen=True)
class PredictionAnswer:
    """A prediction without its trajectory: the answer and the versions that gave it."""

    question_id: str
    task_type: str | None
    prediction: str | None
    correct: int | None
    skills_version: str | None


@dataclass(frozen=True)
class PredictionTotals:
    """A run's predictions counted, their tokens summed, and the highest skills version."""

    n: int
    tokens_in: int
    tokens_out: int
    skills_version: str | None


class PredictionsTable(LogConnection):
    """Writes and reads of `predictions`."""

    def upsert_predictions(self, rows: Sequence[PredictionRecord]) -> None:
        """(run_id, question_id) is unique: a retried question replaces its old row."""
        self.insert(rows, verb="INSERT OR REPLACE")

    def add_predictions(self, rows: Sequence[PredictionRecord]) -> None:
        """Rows whose (run_id, question_id) is already there are left as they are."""
        self.insert(rows, verb="INSERT OR IGNORE")

    def correctness(self, run_id: str) -> dict[str, bool]:
        return {
            r[0]: bool(r[1])
            for r in self.conn.execute(
                "SELECT question_id, correct FROM predictions WHERE run_id = ?", (run_id,)
            )
        }

    def scores(self, run_id: str) -> dict[str, float]:
        """question_id -> score, for the run's answers with a verdict."""
        return {
            r[0]: float(r[1])
            for r in self.conn.execute(
                "SELECT question_id, score FROM predictions WHERE run_id = ? AND score IS NOT NULL",
                (run_id,),
            )
        }

    def trajectories(self, run_id: str, *, by_question: bool = True) -> list[PredictionTrajectory]:
        """The run's predictions with their trajectories, by question id (`by_question`) or
        in the order SQLite reads them off its index (callers that count or key them)."""
        order = "ORDER BY question_id" if by_question else ""
        return [
            PredictionTrajectory(**r)
            for r in self.query(
                "SELECT question_id, task_type, prediction, correct, stop_reason, steps_json "
                f"FROM predictions WHERE run_id = ? {order}",
                (run_id,),
            )
        ]

    def question_ids(self, run_id: str) -> list[str]:
        """The run's question ids in the order their predictions were first written."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT question_id FROM predictions WHERE run_id = ? ORDER BY id", (run_id,)
            )
        ]

    def answers(self, run_id: str) -> list[PredictionAnswer]:
        """The run's predictions without trajectories, in the order SQLite reads them."""
        return self._answers("run_id = ?", (run_id,), order="")

    def candidate_answers(self, run_id: str, candidate_suffix: str) -> list[PredictionAnswer]:
        """A gate run's predictions by a candidate skills version (`...<suffix>`)."""
        return self._answers(
            "run_id = ? AND skills_version LIKE ?", (run_id, f"%{candidate_suffix}")
        )

    def base_answers(
        self, task_type: str, run_like: str, also_run: str, candidate_suffix: str
    ) -> list[PredictionAnswer]:
        """A task type's predictions of runs `LIKE run_like` (and `also_run`) made by a skills
        version that is not a candidate (`...<suffix>`), in the order written."""
        return self._answers(
            "task_type = ? AND (run_id LIKE ? OR run_id = ?) AND skills_version NOT LIKE ?",
            (task_type, run_like, also_run, f"%{candidate_suffix}"),
        )

    def _answers(
        self, where: str, params: Sequence[Any], order: str = "ORDER BY id"
    ) -> list[PredictionAnswer]:
        return [
            PredictionAnswer(**r)
            for r in self.query(
                "SELECT question_id, task_type, prediction, correct, skills_version "
                f"FROM predictions WHERE {where} {order}",
                params,
            )
        ]

    def totals(self, run_id: str) -> PredictionTotals:
        row = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), "
            "MAX(skills_version) FROM predictions WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        return PredictionTotals(*row)

    def any_tool_call(self, run_id: str) -> bool:
        """Whether any prediction of the run called a tool."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM predictions WHERE run_id = ? AND "
            'steps_json LIKE \'%"type": "tool"%\'',
            (run_id,),
        ).fetchone()
        return bool(row[0])


class PredictionViews(LogQueries):
    """Predictions as the TUI's predictions page and `report` read them (`LogReader`)."""

    @staticmethod
    def _prediction_where(run_id: str, flt: PredictionFilter) -> tuple[list[str], list[Any]]:
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
        self, run_id: str, flt: PredictionFilter, cursor: PageCursor, limit: int
    ) -> list[PredictionRow]:
        """Up to limit + 1 predictions of the cursor's page (PREDICTIONS_KEYSET) on the unique
        index (run_id, question_id), so a page costs the same however large the run."""
        where, params = self._prediction_where(run_id, flt)
        conditions, keys, order = PREDICTIONS_KEYSET.where(cursor)
        sql = (
            f"SELECT {', '.join(PREDICTION_COLUMNS)} FROM predictions "
            f"INDEXED BY idx_pred_run_q WHERE {' AND '.join(where + conditions)} {order} LIMIT ?"
        )
        return [PredictionRow(**r) for r in self._rows(sql, [*params, *keys, limit + 1])]

    def predictions_count(self, run_id: str, flt: PredictionFilter) -> int:
        where, params = self._prediction_where(run_id, flt)
        return int(
            self._scalar(f"SELECT COUNT(*) FROM predictions WHERE {' AND '.join(where)}", params)
        )

    def predictions_before(self, run_id: str, question_id: str) -> int:
        """How many of the run's predictions sort before `question_id` (covering index)."""
        return int(
            self._scalar(
                "SELECT COUNT(*) FROM predictions WHERE run_id = ? AND question_id < ?",
                (run_id, question_id),
            )
        )

    def prediction_task_types(self, run_id: str) -> list[str]:
        return self._column(
            "SELECT DISTINCT task_type FROM predictions WHERE run_id = ? LIMIT 100", (run_id,)
        )

    def prediction_columns(self, pred_id: int) -> dict[str, Any] | None:
        """One prediction with every column as stored (its trajectory in `steps_json`)."""
        rows = self._rows("SELECT * FROM predictions WHERE id = ?", (pred_id,))
        return rows[0] if rows else None

    def ingested_counts(self) -> dict[str, dict[str, int]]:
        """Ingested traces by source: how many, and how many failed (schema 8 and later)."""
        if not self.has_table("ingested_traces"):
            return {}
        return {
            r["source"]: {"traces": r["n"], "failed": r["failed"] or 0, "families": r["fam"]}
            for r in self._rows(
                "SELECT source, COUNT(*) AS n, SUM(failed) AS failed, COUNT(DISTINCT family) AS fam "
                "FROM ingested_traces GROUP BY source ORDER BY source"
            )
        }

    def answer_sources(self) -> dict[str, int]:
        """Predictions by how their answer was found (schema 3 and later)."""
        return {
            r["answer_source"]: r["n"]
            for r in self._rows(
                "SELECT answer_source, COUNT(*) AS n FROM predictions WHERE answer_source IS NOT NULL "
                "GROUP BY answer_source"
            )
        }

    def extracted_correct(self) -> int:
        """Right answers found without an `ANSWER:` line."""
        return int(
            self._scalar(
                "SELECT COUNT(*) AS n FROM predictions WHERE answer_source IS NOT NULL AND "
                "answer_source != 'answer_line' AND correct = 1"
            )
        )

    def prediction_latencies(self, run_id: str) -> list[float]:
        """latency_s of every answered question of a run, sorted (savings: p50/p95)."""
        return sorted(
            r["latency_s"]
            for r in self._rows(
                "SELECT latency_s FROM predictions WHERE run_id = ? AND latency_s IS NOT NULL",
                (run_id,),
            )
        )

    def prediction_count(self, run_id: str) -> int:
        return int(self._scalar("SELECT COUNT(*) FROM predictions WHERE run_id = ?", (run_id,)))
