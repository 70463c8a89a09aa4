"""Best-of-N rollouts (app/harness/data/): a fork's `branches`, the verifiers' `verdicts`, the
judge's `judgments`, the `rankings` and the ranked branches' `trajectory_classes`
(docs/architecture.md#the-harness-log). `VerdictRecord.build` makes every verdict row."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log.connection import LogConnection, LogQueries, LogRecord
from app.harness.workspace.harness_log.predictions import PredictionRecord
from app.harness.workspace.harness_log.rows import (
    BranchDetail,
    BranchRow,
    ForkQuestion,
    ForkRun,
    Verdict,
)
from app.secrets import scrub


@dataclass(frozen=True)
class BranchRecord(LogRecord):
    """One branch of a fork: the predictions table's columns plus the branch's own. `id` is
    None when writing (SQLite numbers the row) and the row's id when read."""

    TABLE = "branches"

    run_id: str
    question_id: str
    branch_index: int
    session_id: str | None = None
    temperature: float | None = None
    seed: int | None = None
    unit_id: str | None = None
    task_type: str | None = None
    prediction: str | None = None
    answer: str | None = None
    correct: int | None = None
    stop_reason: str | None = None
    steps_json: str | None = None
    tool_calls_json: str | None = None
    final_text: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    skills_version: str | None = None
    prompts_version: str | None = None
    created_at: str | None = None
    answer_source: str | None = None
    score: float | None = None
    check_status: str | None = None
    check_reason: str | None = None
    id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The columns by name: for code that takes a branch as a mapping (verifier
        plugins, the export formats)."""
        return dataclasses.asdict(self)

    @classmethod
    def of_prediction(
        cls,
        answer: PredictionRecord,
        *,
        branch_index: int,
        session_id: str,
        temperature: float,
        tool_calls_json: str,
        final_text: str,
    ) -> BranchRecord:
        """A branch: the answer's predictions row plus the branch's own columns (its seed
        is its index)."""
        return cls(
            **dataclasses.asdict(answer),
            branch_index=branch_index,
            session_id=session_id,
            temperature=temperature,
            seed=branch_index,
            tool_calls_json=tool_calls_json,
            final_text=final_text,
        )


@dataclass(frozen=True)
class RankedBranch:
    """A branch with its ranking."""

    branch: BranchRecord
    rank: int | None
    reward: float | None
    objective: float | None
    judge: float | None
    bt: float | None
    components_json: str | None

    def as_dict(self) -> dict[str, Any]:
        """The branch's columns and the ranking's, by name."""
        ranking = {f: getattr(self, f) for f in RANKING_COLUMNS}
        return {**self.branch.as_dict(), **ranking}


RANKING_COLUMNS = ("rank", "reward", "objective", "judge", "bt", "components_json")


@dataclass(frozen=True)
class VerdictRecord(LogRecord):
    """One verifier's verdict on one branch; `build` makes it."""

    TABLE = "verdicts"

    run_id: str
    question_id: str
    branch_index: int
    verifier: str
    status: str
    passed: int
    score: float | None
    reason: str
    cost_usd: float | None
    at: str
    elapsed_s: float | None

    @classmethod
    def build(
        cls,
        rollout_id: str,
        key: tuple[str, int],
        verifier: str,
        outcome: tuple[str, bool, float | None, str, float | None],
        elapsed_s: float | None = None,
    ) -> VerdictRecord:
        """The verdict of `verifier` on branch `key` (question id, branch index); `outcome` is
        the verdict's (status, passed, score, reason, cost); the reason scrubbed of secrets,
        the time taken (`rank --cascade` measures it) to the nanosecond."""
        status, passed, score, reason, cost_usd = outcome
        return cls(
            run_id=rollout_id,
            question_id=key[0],
            branch_index=key[1],
            verifier=verifier,
            status=status,
            passed=int(passed),
            score=score,
            reason=scrub(reason),
            cost_usd=cost_usd,
            at=now_iso(),
            elapsed_s=None if elapsed_s is None else round(elapsed_s, 9),
        )


@dataclass(frozen=True)
class JudgmentRecord(LogRecord):
    TABLE = "judgments"

    run_id: str
    question_id: str
    kind: str | None = None
    branch_a: int | None = None
    branch_b: int | None = None
    shown_first: str | None = None
    sample: int | None = None
    score: float | None = None
    preferred: str | None = None
    capped: int | None = None
    parse_error: str | None = None
    reasoning: str | None = None
    model: str | None = None
    cost_usd: float | None = None
    at: str | None = None


@dataclass(frozen=True)
class RankingRecord(LogRecord):
    TABLE = "rankings"

    run_id: str
    question_id: str
    branch_index: int
    rank: int | None = None
    reward: float | None = None
    objective: float | None = None
    judge: float | None = None
    bt: float | None = None
    components_json: str | None = None


@dataclass(frozen=True)
class TrajectoryClassRecord(LogRecord):
    """A ranked branch's trajectory class (core/curation.py)."""

    TABLE = "trajectory_classes"

    run_id: str
    question_id: str
    branch_index: int
    class_: str
    turns: int | None
    fault_turn: int | None
    remediation_turn: int | None
    divergence_turn: int | None
    detail_json: str


@dataclass(frozen=True)
class BranchVerdict:
    """One verifier's verdict on one branch, as lineage reads it."""

    question_id: str
    branch_index: int
    verifier: str
    status: str
    passed: int


@dataclass(frozen=True)
class PassingBranchVerdict:
    """A branch ranked with objective 1 and one of its verdicts (None: it has none)."""

    question_id: str
    branch_index: int
    verifier: str | None
    passed: int | None


class ForksTable(LogConnection):
    """Writes and reads of a fork's branches and what ranking made of them."""

    def add_branches(self, rows: Sequence[BranchRecord]) -> None:
        """Branches already written (a resumed fork) are left as they are."""
        self.insert(rows, verb="INSERT OR IGNORE")

    def replace_verdicts(self, rollout_id: str, rows: Sequence[VerdictRecord]) -> None:
        """The rollout's verdicts, replacing earlier ones (one transaction)."""
        with self._txn():
            self._delete_run_rows("verdicts", rollout_id)
            self.insert(rows)

    def replace_rankings(
        self,
        rollout_id: str,
        judgments: Sequence[JudgmentRecord],
        rankings: Sequence[RankingRecord],
    ) -> None:
        """The rollout's judgments and rankings, replacing earlier ones (one transaction)."""
        with self._txn():
            self._delete_run_rows("judgments", rollout_id)
            self._delete_run_rows("rankings", rollout_id)
            self.insert(judgments)
            self.insert(rankings)

    def replace_trajectory_classes(
        self, rollout_id: str, rows: Sequence[TrajectoryClassRecord]
    ) -> None:
        with self._txn():
            self._delete_run_rows("trajectory_classes", rollout_id)
            self.insert(rows)

    def branches(self, rollout_id: str) -> list[BranchRecord]:
        """The rollout's branches by question id and branch index."""
        return [
            BranchRecord(**r)
            for r in self.query(
                "SELECT * FROM branches WHERE run_id = ? ORDER BY question_id, branch_index",
                (rollout_id,),
            )
        ]

    def branch(self, rollout_id: str, question_id: str, index: int) -> BranchRecord | None:
        rows = self.query(
            "SELECT * FROM branches WHERE run_id = ? AND question_id = ? AND branch_index = ?",
            (rollout_id, question_id, index),
        )
        return BranchRecord(**rows[0]) if rows else None

    def predictions_as_branches(self, run_id: str) -> list[BranchRecord]:
        """A run's predictions by question id, each as branch 0 of its question."""
        return [
            BranchRecord(**r, branch_index=0)
            for r in self.query(
                "SELECT * FROM predictions WHERE run_id = ? ORDER BY question_id", (run_id,)
            )
        ]

    def branch_outcomes(self, rollout_id: str) -> dict[tuple[str, int], int | None]:
        """(question id, branch index) -> correct, for every branch written."""
        return {
            (r[0], r[1]): r[2]
            for r in self.conn.execute(
                "SELECT question_id, branch_index, correct FROM branches WHERE run_id = ?",
                (rollout_id,),
            )
        }

    def branch_skills_versions(self, rollout_ids: Sequence[str]) -> list[str]:
        """The skills versions the rollouts' branches ran, sorted."""
        marks = ",".join("?" * len(rollout_ids))
        return [
            str(v)
            for v in self._column(
                f"SELECT DISTINCT skills_version FROM branches WHERE run_id IN ({marks}) "
                "ORDER BY skills_version",
                rollout_ids,
            )
        ]

    def has_ranking(self, rollout_id: str) -> bool:
        return bool(self.query("SELECT 1 FROM rankings WHERE run_id = ? LIMIT 1", (rollout_id,)))

    def ranked_branches(self, rollout_id: str) -> list[RankedBranch]:
        """The ranked branches by question id, best rank first."""
        out = []
        for r in self.query(
            "SELECT b.*, r.rank, r.reward, r.objective, r.judge, r.bt, r.components_json "
            "FROM branches b JOIN rankings r ON r.run_id = b.run_id AND "
            "r.question_id = b.question_id AND r.branch_index = b.branch_index "
            "WHERE b.run_id = ? ORDER BY b.question_id, r.rank",
            (rollout_id,),
        ):
            ranking = {c: r.pop(c) for c in RANKING_COLUMNS}
            out.append(RankedBranch(BranchRecord(**r), **ranking))
        return out

    def objectives(self, rollout_id: str) -> dict[tuple[str, int], float | None]:
        """(question id, branch index) -> the ranking's objective score."""
        return {
            (r[0], r[1]): r[2]
            for r in self.conn.execute(
                "SELECT question_id, branch_index, objective FROM rankings WHERE run_id = ?",
                (rollout_id,),
            )
        }

    def verdicts_of(self, rollout_id: str) -> list[BranchVerdict]:
        """The rollout's verdicts in the order written."""
        return [
            BranchVerdict(*r)
            for r in self.conn.execute(
                "SELECT question_id, branch_index, verifier, status, passed FROM verdicts "
                "WHERE run_id = ? ORDER BY id",
                (rollout_id,),
            )
        ]

    def passing_verdicts(self, rollout_id: str) -> list[PassingBranchVerdict]:
        """Each branch ranked with objective 1 and each of its verdicts (a branch without
        verdicts once, with None for the verdict)."""
        return [
            PassingBranchVerdict(*r)
            for r in self.conn.execute(
                "SELECT r.question_id, r.branch_index, v.verifier, v.passed FROM rankings r "
                "LEFT JOIN verdicts v ON v.run_id = r.run_id AND v.question_id = r.question_id "
                "AND v.branch_index = r.branch_index WHERE r.run_id = ? AND r.objective = 1",
                (rollout_id,),
            )
        ]

    def verifier_names(self, rollout_id: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT verifier FROM verdicts WHERE run_id = ? ORDER BY verifier",
                (rollout_id,),
            )
        ]

    def verdict_cost(self, rollout_id: str) -> float:
        return float(
            self._scalar(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM verdicts WHERE run_id = ?", (rollout_id,)
            )
        )

    def class_details(self, rollout_id: str) -> dict[tuple[str, int], str]:
        """(question id, branch index) -> the stored trajectory class's detail JSON."""
        return {
            (r[0], r[1]): r[2]
            for r in self.conn.execute(
                "SELECT question_id, branch_index, detail_json FROM trajectory_classes "
                "WHERE run_id = ?",
                (rollout_id,),
            )
        }

    def class_counts(self, rollout_id: str) -> dict[str, int]:
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT class, COUNT(*) FROM trajectory_classes WHERE run_id = ? GROUP BY class",
                (rollout_id,),
            )
        }


class ForkReader(LogQueries):
    """Best-of-N rollouts: fork runs, branches, verdicts, judge scores, rankings."""

    def runs(self) -> list[ForkRun]:
        """Fork runs, newest first."""
        return [
            ForkRun(**r)
            for r in self._rows(
                "SELECT run_id, status, summary_json FROM _runs WHERE kind = 'fork' "
                "ORDER BY seq DESC"
            )
        ]

    def questions(self, rollout_id: str) -> list[ForkQuestion]:
        return [
            ForkQuestion(**r)
            for r in self._rows(
                "SELECT b.question_id, MAX(b.task_type) AS task_type, COUNT(*) AS branches, "
                "SUM(b.correct) AS correct, MAX(CASE WHEN r.rank = 1 THEN r.objective END) "
                "AS top_ok FROM branches b LEFT JOIN rankings r ON r.run_id = b.run_id AND "
                "r.question_id = b.question_id AND r.branch_index = b.branch_index "
                "WHERE b.run_id = ? GROUP BY b.question_id ORDER BY b.question_id",
                (rollout_id,),
            )
        ]

    def branches(self, rollout_id: str, question_id: str) -> list[BranchRow]:
        """The question's branches, best rank first (unranked ones by index)."""
        return [
            BranchRow(**r)
            for r in self._rows(
                "SELECT b.id, b.branch_index, b.temperature, b.prediction, b.correct, "
                "b.stop_reason, r.rank, r.reward, r.objective, r.bt FROM branches b LEFT JOIN "
                "rankings r ON r.run_id = b.run_id AND r.question_id = b.question_id AND "
                "r.branch_index = b.branch_index WHERE b.run_id = ? AND b.question_id = ? "
                "ORDER BY COALESCE(r.rank, 1000000), b.branch_index",
                (rollout_id, question_id),
            )
        ]

    def verdicts(self, rollout_id: str, question_id: str) -> list[Verdict]:
        return [
            Verdict(**r)
            for r in self._rows(
                "SELECT branch_index, verifier, status FROM verdicts WHERE run_id = ? "
                "AND question_id = ? ORDER BY id",
                (rollout_id, question_id),
            )
        ]

    def scalar_scores(self, rollout_id: str, question_id: str) -> list[tuple[int, float]]:
        """(branch, score) of the judge's valid, uncapped scalar samples on a question."""
        return [
            (j["branch_a"], j["score"])
            for j in self._rows(
                "SELECT branch_a, score FROM judgments WHERE run_id = ? AND "
                "question_id = ? AND kind = 'scalar' AND capped = 0 AND "
                "parse_error IS NULL",
                (rollout_id, question_id),
            )
        ]

    def branch(self, branch_id: int) -> BranchDetail | None:
        rows = self._rows("SELECT * FROM branches WHERE id = ?", (branch_id,))
        if not rows:
            return None
        b = rows[0]
        key = (b["run_id"], b["question_id"], b["branch_index"])
        reasoning = self._rows(
            "SELECT kind, branch_a, branch_b, shown_first, sample, score, preferred, capped, "
            "reasoning FROM judgments WHERE run_id = ? AND question_id = ? AND (branch_a = ? OR "
            "branch_b = ?) ORDER BY id LIMIT 40",
            (*key, b["branch_index"]),
        )
        verdicts = self._rows(
            "SELECT verifier, status, reason, cost_usd FROM verdicts WHERE run_id = ? AND "
            "question_id = ? AND branch_index = ? ORDER BY id",
            key,
        )
        return BranchDetail(b, reasoning, verdicts)
