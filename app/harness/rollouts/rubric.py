"""The rubric checker: `checker = "rubric"` answers scored by the judge role.

A question's rubric is `checker_args.rubric` (its pass line `checker_args.pass_threshold`,
core.checkers.pass_threshold). The judge model (`judge_model`) grades the answer k times
(`rubric_samples`, default 3) at a low temperature (`rubric_temperature`, default 0.1), each
sample with its own seed so they are real samples; every call goes through the provider, so it
is cached and charged like every other call. The prompt (prompts/judge_rubric.md) holds the
question, the rubric and the answer only: never which skills or prompts version wrote it, so a
judge cannot favour a version.

Replies are untrusted. A reply without a JSON object holding a number 0-10 as `score` (or a
failed call) is `invalid`: it is excluded and counted, NEVER scored 0 — a judge that cannot
answer says nothing about the answer. The score is the mean of the valid samples / 10; an
answer whose samples are all invalid has no verdict (core.checkers.CheckStatus.INVALID): it is
left out of accuracy and of the gate's evidence, and counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from string import Template

from app.paths import read_prompt
from app.providers.errors import BudgetExceeded, ProviderError
from app.secrets import scrub
from core.checkers import CheckResult, CheckStatus
from core.jsonscan import find_json_object
from core.protocols import LLMProvider
from core.types import Question

PROMPT_FILE = "judge_rubric.md"
TEXT_MAX_CHARS = 4000
SCORE_MAX = 10.0


@dataclass(frozen=True)
class RubricSettings:
    samples: int = 3
    temperature: float = 0.1
    max_tokens: int = 256


def parse_rubric_score(text: str) -> tuple[float | None, str]:
    """(score in [0, 10], "") or (None, why the reply is invalid)."""
    obj = find_json_object(text or "", ("score",))
    if obj is None:
        return None, "no JSON object in the reply"
    score = obj.get("score")
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return None, "score is not a number"
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return None, "score is missing or not a number"
    if not 0.0 <= score <= SCORE_MAX:
        return None, f"score {score} is outside 0-10"
    return float(score), ""


def _fence(text: str, tag: str) -> str:
    """Text inside the prompt's tags: cut, and unable to close its tag early."""
    return (text or "")[:TEXT_MAX_CHARS].replace(f"</{tag}", f"<\\/{tag}")


def rubric_prompt(question: Question, prediction: str) -> str:
    rubric = str(question.checker_args.get("rubric", "")).strip()
    return Template(read_prompt(PROMPT_FILE)).safe_substitute(
        question=_fence(question.question, "question"),
        rubric=_fence(rubric, "rubric"),
        answer=_fence(prediction, "answer"),
    )


async def rubric_check(
    judge: LLMProvider, settings: RubricSettings, question: Question, prediction: str
) -> CheckResult:
    prompt = rubric_prompt(question, prediction)
    scores: list[float] = []
    samples: list[float | None] = []
    errors: list[str] = []
    for sample in range(settings.samples):
        try:
            reply = await judge.complete(
                [{"role": "user", "content": prompt}],
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=sample,
                role="judge",
            )
        except BudgetExceeded:
            raise
        except ProviderError as e:
            errors.append(f"judge call failed: {scrub(str(e))[:200]}")
            samples.append(None)
            continue
        score, why = parse_rubric_score(reply.text)
        if score is None:
            errors.append(why)
        else:
            scores.append(score / SCORE_MAX)
        samples.append(None if score is None else score / SCORE_MAX)
    invalid = len(errors)
    if not scores:
        return CheckResult(
            CheckStatus.INVALID,
            None,
            f"all {invalid} judge replies invalid: {errors[0] if errors else 'no samples'}",
            invalid_replies=invalid,
            samples=tuple(samples),
        )
    note = f"{invalid} of {settings.samples} judge replies invalid ({errors[0]})" if invalid else ""
    return CheckResult(
        CheckStatus.OK,
        sum(scores) / len(scores),
        note,
        invalid_replies=invalid,
        valid_replies=len(scores),
        samples=tuple(samples),
    )
