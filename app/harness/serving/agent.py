"""One served request: the workspace's agent (the built-in loop, or the outside agent `[agent]`
names, through its gateway: app/harness/agents/), logged as a serve-run prediction.

The request carries no reference answer, so nothing is checked: a served prediction stores
`answer` and `correct` as NULL and its verdict step says `checked: false`. Its first step is the
request itself (task, task type, context size), so the log holds what was asked as well as
what was answered (a benchmark prediction finds its question in the frozen benchmark instead).
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings, prediction_row, rollout_question
from app.harness.rollouts.telemetry import LogRecorder, calls_logged_as
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.predictions import PredictionRecord
from core.evolution.budget import resolve_skill_file
from core.protocols import LLMProvider
from core.types import Prediction, Question, StopReason

TASK_IN_LOG_CHARS = 4000
OVERHEAD_KEPT = 10_000


@dataclass(frozen=True)
class ServedAnswer:
    request_id: str
    content: str  # the agent's final reply, as the client sees it
    answer: str  # the `ANSWER:` (or fallback) the reply gave; "" when none
    stop_reason: str
    error: str  # the provider error that ended the loop (stop_reason "error"), else ""
    skills_opened: tuple[str, ...]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    agent_s: float  # time inside the agent loop, the limiter's wait excluded


@dataclass
class ServeCounters:
    requests: int = 0
    errors: int = 0
    budget_refusals: int = 0
    in_flight: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=time.monotonic)
    started_unix: int = field(default_factory=lambda: int(time.time()))
    # server time minus agent time per answered request, the latest OVERHEAD_KEPT of them
    overheads_s: deque[float] = field(default_factory=lambda: deque(maxlen=OVERHEAD_KEPT))


class ServedAgent:
    """Answers requests with one workspace version and writes each one to the serve run."""

    def __init__(
        self,
        *,
        name: str,
        run_id: str,
        provider: LLMProvider,
        prompts: AgentPrompts,
        settings: AgentSettings,
        log: HarnessLog,
        recorder: LogRecorder,
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.name = name
        self.run_id = run_id
        self.provider = provider
        self.prompts = prompts
        self.settings = settings
        self.log = log
        self.recorder = recorder
        self.limiter = limiter
        self.counters = ServeCounters()
        self._pending: list[PredictionRecord] = []

    async def answer(
        self, task: str, task_type: str, context: str, tools: tuple[str, ...] | None = None
    ) -> ServedAnswer:
        """The agent's answer; BudgetExceeded propagates (the app answers 402). `tools`: the
        declared tools offered (app/harness/serving/routing.py; None: the default ones)."""
        request_id = f"chatcmpl-{secrets.token_hex(12)}"
        question = Question(
            question_id=request_id,
            task_type=task_type,
            question=task,
            answer="",
            context=context,
            tools=tools,
        )
        self.counters.in_flight += 1
        try:
            async with self.limiter:
                with calls_logged_as(self.run_id):
                    p = await rollout_question(self.provider, self.prompts, question, self.settings)
        except BaseException:
            self.counters.errors += 1
            raise
        finally:
            self.counters.in_flight -= 1
        self.counters.requests += 1
        self.counters.cost_usd += p.cost_usd
        self._pending.append(self._row(p, question))
        served = self._served(p, request_id)
        if served.error:
            self.counters.errors += 1
        return served

    def _served(self, p: Prediction, request_id: str) -> ServedAnswer:
        texts = [s.get("text") or "" for s in p.steps if s.get("type") == "model"]
        errors = [s.get("error") or "" for s in p.steps if s.get("type") == "error"]
        verdict = next((s for s in p.steps if s.get("type") == "verdict"), {})
        if self.prompts.skill_mode == "inline":  # the file inlined, if the version has it
            inlined = resolve_skill_file(p.task_type, self.prompts.skills)
            opened: tuple[str, ...] = (inlined,) if inlined in self.prompts.skills else ()
        else:
            opened = tuple(verdict.get("skills_opened") or ())
        return ServedAnswer(
            request_id=request_id,
            content=texts[-1] if texts else "",
            answer=p.prediction,
            stop_reason=str(p.stop_reason),
            error=errors[-1] if p.stop_reason == StopReason.ERROR and errors else "",
            skills_opened=opened,
            tokens_in=p.tokens_in,
            tokens_out=p.tokens_out,
            cost_usd=p.cost_usd,
            agent_s=p.latency_s,
        )

    def _row(self, p: Prediction, question: Question) -> PredictionRecord:
        request = {
            "type": "request",
            "task": question.question[:TASK_IN_LOG_CHARS],
            "task_type": question.task_type,
            "context_chars": len(question.context),
        }
        steps = [request] + [_unchecked(s) for s in p.steps]
        # a served request has no reference answer: nothing to grade it by
        return replace(
            prediction_row(replace(p, steps=tuple(steps)), self.run_id), answer=None, correct=None
        )

    def flush(self) -> None:
        """Write the answered requests and their model calls (one transaction each)."""
        rows = self._pending[:]
        self.log.upsert_predictions(rows)
        del self._pending[: len(rows)]  # only once written: a failed write is retried
        self.recorder.flush()

    def summary(self) -> dict[str, Any]:
        c = self.counters
        return {
            "requests": c.requests,
            "errors": c.errors,
            "budget_refusals": c.budget_refusals,
            "cost_usd": round(c.cost_usd, 8),
            "served_s": round(time.monotonic() - c.started, 3),
            **overhead_summary(list(c.overheads_s)),
            "skills_version": self.prompts.skills_version,
            "prompts_version": self.prompts.prompts_version,
        }


def _unchecked(step: dict[str, Any]) -> dict[str, Any]:
    """The verdict step without a reference answer or a correctness it never had."""
    if step.get("type") != "verdict":
        return step
    kept = {k: v for k, v in step.items() if k not in ("answer", "correct", "checker")}
    return {**kept, "checked": False}


def overhead_summary(overheads_s: list[float]) -> dict[str, float]:
    """p50/p95 of the server's own time per request (arrival to last byte sent, the agent
    loop excluded), in ms; empty when fewer than two requests were answered."""
    if len(overheads_s) < 2:
        return {}
    ms = sorted(o * 1000 for o in overheads_s)
    cuts = statistics.quantiles(ms, n=20)
    return {
        "overhead_ms_p50": round(statistics.median(ms), 3),
        "overhead_ms_p95": round(cuts[-1], 3),
    }
