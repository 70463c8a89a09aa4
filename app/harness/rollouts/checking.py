"""Which checker judges an answer, by the question's `checker`
(docs/checkers.md): a built-in one (core/checkers.py) in process, a user `module:function` in
an isolated worker (app/harness/rollouts/custom_checkers.py), `rubric` by the judge role
(app/harness/rollouts/rubric.py)."""

from __future__ import annotations

import anyio

from app.harness.rollouts.custom_checkers import CheckerPool
from app.harness.rollouts.rubric import RubricSettings, rubric_check
from core.checkers import RUBRIC, CheckResult, builtin_result, is_custom
from core.protocols import LLMProvider
from core.types import Question


class AnswerChecker:
    """One per session: owns the checker workers (closed with the session)."""

    def __init__(
        self,
        judge: LLMProvider | None = None,
        rubric: RubricSettings | None = None,
        pool: CheckerPool | None = None,
    ) -> None:
        self.judge = judge
        self.rubric = rubric or RubricSettings()
        self.pool = pool

    async def check(self, question: Question, prediction: str) -> CheckResult:
        kind = question.checker
        if kind == RUBRIC:
            if self.judge is None:
                return CheckResult.error("rubric checker without a judge model")
            if not str(question.checker_args.get("rubric", "")).strip():
                # a judge given no rubric would grade against nothing: no score at all
                return CheckResult.error("rubric checker without checker_args.rubric")
            return await rubric_check(self.judge, self.rubric, question, prediction)
        if is_custom(kind):
            if self.pool is None:
                self.pool = CheckerPool()
            return await anyio.to_thread.run_sync(self.pool.check, kind, question, prediction)
        return builtin_result(question, prediction)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


BUILTIN_ONLY = AnswerChecker()
