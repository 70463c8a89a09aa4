"""The LLM judge of best-of-N rollouts (app/harness/data/fork.py): scalar scores and pairwise
preferences from the judge role.

- k samples per question (`judge_samples`, default 3) at a low temperature
  (`judge_temperature`, default 0.1), each with its own seed so they are real samples;
- a per-batch call cap (`judge_max_calls_per_batch`): calls are reserved in a fixed order
  before they are made, so a batch never makes more than the cap; every sample past it gets
  the neutral score 5 (pairwise: a tie) and is recorded with `capped = 1`;
- pairwise comparisons are asked in both orders (A/B and B/A) and mapped back to branches,
  so a judge that prefers whatever it is shown first gains nothing;
- replies are untrusted: one JSON object is looked for (core/jsonscan.py); a score outside
  0-10, a missing key or no object at all is a parse error, recorded, and the sample is
  neutral.
Prompts: prompts/judge_scalar.md and prompts/judge_pairwise.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from string import Template

import anyio

from app.harness.workspace.harness_log.forks import JudgmentRecord
from app.paths import read_prompt
from app.providers.errors import BudgetExceeded, ProviderError
from app.secrets import scrub
from core.jsonscan import find_json_object
from core.protocols import LLMProvider

NEUTRAL_SCORE = 5.0
ANSWER_MAX_CHARS = 4000
DEFAULT_CRITERION = "the answer is correct for the case and follows the task's rules"


@dataclass(frozen=True)
class JudgeSettings:
    samples: int = 3
    temperature: float = 0.1
    max_calls: int = 100
    criterion: str = DEFAULT_CRITERION
    max_tokens: int = 256


@dataclass(frozen=True)
class Sample:
    kind: str  # scalar | pairwise
    sample: int
    score: float | None = None  # scalar
    preferred: str | None = None  # pairwise, in branch terms: "a", "b" or "tie"
    shown_first: str = "a"
    capped: bool = False
    parse_error: str = ""
    reasoning: str = ""
    cost_usd: float = 0.0


class CallBudget:
    """Calls one batch may make; `take` reserves one before the call is awaited."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.used = 0
        self.capped = 0

    def take(self) -> bool:
        if self.used >= self.cap:
            self.capped += 1
            return False
        self.used += 1
        return True


def same_model_warning(judge_model: str, agent_model: str) -> str | None:
    if judge_model == agent_model:
        return (
            f"judge_model is the agent model ({judge_model}): a model grading its own "
            "answers tends to favour them; set judge_model to a different model"
        )
    return None


def _template(name: str) -> Template:
    return Template(read_prompt(name))


def _fence(text: str) -> str:
    """Answer text inside the prompt's tags: cut, and unable to close the tag early."""
    return (text or "")[:ANSWER_MAX_CHARS].replace("</answer", "<\\/answer")


def parse_scalar(text: str) -> tuple[float | None, str, str]:
    obj = find_json_object(text, ("score",))
    if obj is None:
        return None, "", "no JSON object in the reply"
    score = obj.get("score")
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return None, "", f"score is not a number: {obj['score'][:40]!r}"
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return None, "", "score is missing or not a number"
    if not 0.0 <= score <= 10.0:
        return None, "", f"score {score} is outside 0-10"
    return float(score), str(obj.get("reasoning", ""))[:500], ""


def parse_pairwise(text: str) -> tuple[str | None, str, str]:
    obj = find_json_object(text, ("preferred",))
    if obj is None:
        return None, "", "no JSON object in the reply"
    pref = str(obj.get("preferred", "")).strip().upper()
    if pref not in ("A", "B", "TIE"):
        return None, "", f"preferred is not A, B or tie: {pref[:40]!r}"
    return pref.lower(), str(obj.get("reasoning", ""))[:500], ""


class Judge:
    def __init__(
        self, provider: LLMProvider, settings: JudgeSettings, model: str = "", concurrency: int = 16
    ) -> None:
        self.provider = provider
        self.limiter = anyio.CapacityLimiter(concurrency)
        self.settings = settings
        self.model = model
        self._scalar = _template("judge_scalar.md")
        self._pairwise = _template("judge_pairwise.md")

    async def _ask(self, prompt: str, sample: int) -> tuple[str, float, str]:
        try:
            async with self.limiter:
                reply = await self.provider.complete(
                    [{"role": "user", "content": prompt}],
                    temperature=self.settings.temperature,
                    max_tokens=self.settings.max_tokens,
                    seed=sample,
                    role="judge",
                )
        except BudgetExceeded:
            raise
        except ProviderError as e:
            return "", 0.0, f"judge call failed: {scrub(str(e))[:300]}"
        return reply.text, reply.cost_usd, ""

    async def score(self, question: str, answer: str, budget: CallBudget) -> list[Sample]:
        prompt = self._scalar.safe_substitute(
            criterion=self.settings.criterion, question=_fence(question), answer=_fence(answer)
        )
        out = []
        reserved = [budget.take() for _ in range(self.settings.samples)]
        for s, ok in enumerate(reserved):
            if not ok:
                out.append(Sample("scalar", s, NEUTRAL_SCORE, capped=True))
                continue
            text, cost, error = await self._ask(prompt, s)
            score, why, perr = parse_scalar(text) if not error else (None, "", error)
            out.append(
                Sample(
                    "scalar",
                    s,
                    NEUTRAL_SCORE if score is None else score,
                    parse_error=perr,
                    reasoning=scrub(why),
                    cost_usd=cost,
                )
            )
        return out

    async def compare(
        self, question: str, answer_a: str, answer_b: str, budget: CallBudget
    ) -> list[Sample]:
        """k samples in each order; `preferred` is in terms of (a, b) as passed in."""
        out = []
        orders = (("a", answer_a, answer_b), ("b", answer_b, answer_a))
        reserved = [[budget.take() for _ in range(self.settings.samples)] for _ in orders]
        for (first, x, y), oks in zip(orders, reserved, strict=True):
            prompt = self._pairwise.safe_substitute(
                criterion=self.settings.criterion,
                question=_fence(question),
                answer_a=_fence(x),
                answer_b=_fence(y),
            )
            for s, ok in enumerate(oks):
                if not ok:
                    out.append(
                        Sample("pairwise", s, preferred="tie", shown_first=first, capped=True)
                    )
                    continue
                text, cost, error = await self._ask(prompt, s)
                pref, why, perr = parse_pairwise(text) if not error else (None, "", error)
                if pref in ("a", "b") and first == "b":  # shown swapped: map back
                    pref = "b" if pref == "a" else "a"
                out.append(
                    Sample(
                        "pairwise",
                        s,
                        preferred=pref or "tie",
                        shown_first=first,
                        parse_error=perr,
                        reasoning=scrub(why),
                        cost_usd=cost,
                    )
                )
        return out


def mean_score(samples: list[Sample]) -> float:
    """Mean over samples that were really judged; neutral when none was."""
    real = [s.score for s in samples if not s.capped and not s.parse_error and s.score is not None]
    return sum(real) / len(real) if real else NEUTRAL_SCORE


def sample_row(
    rollout_id: str, question_id: str, s: Sample, a: int, b: int | None, model: str, at: str
) -> JudgmentRecord:
    return JudgmentRecord(
        run_id=rollout_id,
        question_id=question_id,
        kind=s.kind,
        branch_a=a,
        branch_b=b,
        shown_first=s.shown_first,
        sample=s.sample,
        score=s.score,
        preferred=s.preferred,
        capped=int(s.capped),
        parse_error=s.parse_error or None,
        reasoning=s.reasoning,
        model=model,
        cost_usd=s.cost_usd,
        at=at,
    )
