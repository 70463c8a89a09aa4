"""run_inference: the agent loop over a pool of questions (docs/architecture.md#a-step).

Each question: opening messages, up to `max_steps` model turns with tool calls, a final
`ANSWER:` line checked by the question's checker. Every prediction and its trajectory is
written to the log in batches; unit-level accuracy is returned.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio

from app.errors import RunFailed
from app.harness.rollouts.agent_prompts import AgentPrompts, ToolArgumentError
from app.harness.rollouts.checking import BUILTIN_ONLY, AnswerChecker
from app.harness.rollouts.question_units import build_units, unit_correctness_view
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.tools.runtime import ToolRollout, ToolRuntime
from app.harness.workspace import killpoints
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.predictions import PredictionRecord
from app.progress import NO_BARS, Bars
from app.providers.errors import BudgetExceeded, ProviderError
from app.secrets import scrub
from core.checkers import (
    CheckResult,
    CheckStatus,
    extract_answer,
    fallback_answer,
    passes,
)
from core.concurrency import fan_out
from core.evolution.budget import resolve_skill_file
from core.protocols import LLMProvider
from core.trajectory import summarise_tool_output
from core.types import CHECKERS, InferenceResult, LLMResponse, Prediction, Question, StopReason

BUILTIN_CHECKERS = frozenset(CHECKERS)
WRITE_BATCH = 200
INFRA_ERROR_SHARE = 0.10
AGENT_CRASH = "crash"  # an outside agent's stop reason when it did not start or exited non-zero


class ExternalAgent(Protocol):
    """An agent that lives outside this repository (docs/agents.md), as the rollouts see it;
    app/harness/agents/training_seam.py implements it. Declared here, below the agents room,
    so the rollouts can call it without importing that room."""

    def serving(self, provider: LLMProvider) -> AbstractAsyncContextManager[ExternalAgent]:
        """This agent with its model gateway running around `provider`, for one batch."""
        ...

    async def answer(
        self, prompts: AgentPrompts, question: Question, settings: AgentSettings
    ) -> Prediction:
        """One rollout, as the Prediction the built-in loop would have made."""
        ...


@dataclass(frozen=True)
class AgentSettings:
    max_steps: int = 6
    temperature: float = 0.0
    max_tokens: int = 1024
    concurrency: int = 16
    sample: int = 0
    answer_fallbacks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # who checks answers (app/harness/rollouts/checking.py); built-in checkers only by default
    checker: AnswerChecker = field(default=BUILTIN_ONLY, compare=False, repr=False)
    tools: ToolRuntime | None = None  # the benchmark's declared tools (docs/tools.md)
    # None: the built-in loop (`answer_question`); else the configured outside agent
    external: ExternalAgent | None = field(default=None, compare=False, repr=False)

    def fallbacks_for(self, task_type: str) -> tuple[str, ...]:
        return self.answer_fallbacks.get(task_type, self.answer_fallbacks.get("*", ()))


async def rollout_question(
    provider: LLMProvider, prompts: AgentPrompts, question: Question, settings: AgentSettings
) -> Prediction:
    """One question's rollout by whichever agent `settings` names: every caller that answers
    questions (inference, the gate, fork) comes through here, so they all run the same agent.
    An outside agent must be inside `serving_agent` (its gateway)."""
    if settings.external is None:
        return await answer_question(provider, prompts, question, settings)
    return await settings.external.answer(prompts, question, settings)


@contextlib.asynccontextmanager
async def serving_agent(
    settings: AgentSettings, provider: LLMProvider
) -> AsyncIterator[AgentSettings]:
    """`settings` ready for a batch of rollouts: an outside agent's gateway is started around
    `provider` for the block (one gateway per batch, not per question); the built-in loop
    needs nothing."""
    if settings.external is None:
        yield settings
        return
    async with settings.external.serving(provider) as running:
        yield replace(settings, external=running)


def verdict_step(
    question: Question,
    final: str,
    correct: bool,
    stop: str,
    source: str,
    check: CheckResult,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """A rollout's closing step: the answer, its check and why it stopped. `extra` (a fixture's
    verdict, an outside agent's record) goes right after the answer's source."""
    verdict: dict[str, Any] = {
        "type": "verdict",
        "prediction": final,
        "answer": question.answer,
        "correct": correct,
        "checker": question.checker,
        "stop_reason": stop,
        "answer_source": source,
        **extra,
    }
    if question.checker not in BUILTIN_CHECKERS:  # builtin rows stay exactly as they were
        verdict.update(
            score=check.score,
            check_status=str(check.status),
            check_reason=scrub(check.reason),
            invalid_replies=check.invalid_replies,
        )
        if check.samples:
            verdict["judge_samples"] = list(check.samples)
    return verdict


async def answer_question(
    provider: LLMProvider, prompts: AgentPrompts, question: Question, settings: AgentSettings
) -> Prediction:
    messages = prompts.opening_messages(question)
    tools = prompts.tools_for(question)
    declared = settings.tools.rollout(question, settings.sample) if settings.tools else None
    if settings.tools is not None:  # declared tools, least privilege (docs/tools.md)
        await settings.tools.ready()
        # a prompts version's tool_<name>.md overrides the declared description, so the slow
        # update can evolve it like the built-in tools' (docs/tools.md#what-a-step-records)
        tools = tools + [
            replace(s, description=prompts.tool_docs.get(s.name, s.description))
            for s in settings.tools.specs_for(question)
        ]
    steps: list[dict[str, Any]] = []
    tokens_in = tokens_out = 0
    cost_usd = 0.0
    started = time.perf_counter()
    stop, final, source = StopReason.MAX_STEPS, "", ""
    for turn in range(settings.max_steps):
        try:
            reply = await provider.complete(
                messages,
                tools=tools or None,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=settings.sample,
                role="agent",
            )
        except BudgetExceeded:
            raise
        except ProviderError as e:
            steps.append({"turn": turn, "type": "error", "error": scrub(str(e))[:500]})
            stop = StopReason.ERROR
            break
        tokens_in += reply.usage.tokens_in
        tokens_out += reply.usage.tokens_out
        cost_usd += reply.cost_usd
        steps.append(
            {
                "turn": turn,
                "type": "model",
                "text": reply.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
                ],
            }
        )
        if reply.tool_calls:
            messages = messages + await _tool_round(prompts, question, reply, steps, turn, declared)
            continue
        answer = extract_answer(reply.text)
        source = "answer_line"
        if answer is None:
            answer, source = await _fallback(provider, question, reply.text, settings, steps)
        stop, final = (StopReason.FINAL, answer) if answer is not None else (StopReason.REFUSED, "")
        break
    result = (
        await settings.checker.check(question, final)
        if stop == StopReason.FINAL
        else CheckResult.scored(0.0)  # no answer: a failure, whatever the checker
    )
    judged: dict[str, Any] = {}
    if declared is not None:
        judged = await declared.finish()
        if "fixture_passed" in judged:  # a fixture's oracle decides, not the answer text
            passed = bool(judged["fixture_passed"])
            result = CheckResult.scored(1.0 if passed else 0.0, "fixture oracle")
    correct = passes(question, result)
    source = source if stop == StopReason.FINAL else ""
    verdict = verdict_step(question, final, correct, stop, source, result, judged)
    if prompts.skill_mode in (
        "tool",
        "progressive",
    ):  # activation (app/harness/skills/activation.py)
        verdict.update(skill_activation(prompts, question, steps))
    steps.append(verdict)
    return Prediction(
        run_id="",
        question_id=question.question_id,
        unit_id=question.unit_id,
        task_type=question.task_type,
        prediction=final,
        answer=question.answer,
        correct=correct,
        stop_reason=stop,
        steps=tuple(steps),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=cost_usd,
        latency_s=time.perf_counter() - started,
        skills_version=prompts.skills_version,
        prompts_version=prompts.prompts_version,
        answer_source=source,
        score=result.score,
        check_status=str(result.status),
        check_reason=scrub(result.reason),
    )


def skill_activation(
    prompts: AgentPrompts, question: Question, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    """Which skill files this rollout opened, and which one its task type resolves to."""
    opened = [
        prompts.opened_file(s.get("arguments"))
        for s in steps
        if s.get("type") == "tool"
        and prompts.real_name(str(s.get("name"))) == "read_skill"
        and s.get("status") == "ok"
    ]
    return {
        "skills_opened": sorted({f for f in opened if f}),
        "skill_expected": resolve_skill_file(question.task_type, prompts.skills),
    }


EXTRACT_PROMPT = (
    "Here is a question and a reply to it. Write only the final answer that the "
    "reply gives, on one line, as `ANSWER: <answer>`. If the reply gives no "
    "answer, write `ANSWER: none`.\n\n<question>\n{question}\n</question>\n"
    "<reply>\n{reply}\n</reply>"
)


async def _fallback(
    provider: LLMProvider,
    question: Question,
    text: str,
    settings: AgentSettings,
    steps: list[dict[str, Any]],
) -> tuple[str | None, str]:
    """The benchmark's declared fallbacks, in order, for a reply without an `ANSWER:` line.
    Whatever they find is marked with the fallback's name, never as an `ANSWER:` line."""
    for method in settings.fallbacks_for(question.task_type):
        if method != "extract":
            found = fallback_answer(text, method)
        else:
            found = await _extraction_call(provider, question, text, settings, steps)
        if found:
            return found, method
    return None, ""


async def _extraction_call(
    provider: LLMProvider,
    question: Question,
    text: str,
    settings: AgentSettings,
    steps: list[dict[str, Any]],
) -> str | None:
    prompt = EXTRACT_PROMPT.format(question=question.question, reply=text[:4000])
    try:
        reply = await provider.complete(
            [{"role": "user", "content": prompt}],
            temperature=0.0,
            max_tokens=64,
            seed=settings.sample,
            role="extract",
        )
    except BudgetExceeded:
        raise
    except ProviderError as e:
        steps.append({"type": "error", "error": f"answer extraction failed: {scrub(str(e))[:300]}"})
        return None
    steps.append({"type": "extract", "text": reply.text})
    found = extract_answer(reply.text)
    if found is None or found.strip().lower() in ("none", ""):
        return None
    return found


async def _tool_round(
    prompts: AgentPrompts,
    question: Question,
    reply: LLMResponse,
    steps: list[dict[str, Any]],
    turn: int,
    declared: ToolRollout | None = None,
) -> list[dict[str, Any]]:
    """The assistant turn with its tool calls plus one tool message per call."""
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments
                if isinstance(c.arguments, str)
                else json.dumps(c.arguments),
            },
        }
        for c in reply.tool_calls
    ]
    added: list[dict[str, Any]] = [
        {"role": "assistant", "content": reply.text or None, "tool_calls": calls}
    ]
    for call in reply.tool_calls:
        if declared is not None and declared.runtime.owns(call.name):
            result = await declared.call(turn, call.name, call.arguments)
            output = summarise_tool_output(result.output)
            steps.append(
                {
                    "turn": turn,
                    "type": "tool",
                    "name": call.name,
                    "arguments": call.arguments,
                    **result.record(),
                    "output": output,
                }
            )
            added.append({"role": "tool", "tool_call_id": call.id, "content": output})
            continue
        try:
            output = prompts.dispatch(call.name, call.arguments, question)
            if prompts.real_name(call.name) != "read_skill":  # instructions, not data to skim
                output = summarise_tool_output(output)
            status = "ok"
        except ToolArgumentError as e:
            output, status = summarise_tool_output(f"error: {e}"), "error"
        steps.append(
            {
                "turn": turn,
                "type": "tool",
                "name": call.name,
                "arguments": call.arguments,
                "status": status,
                "output": output,
            }
        )
        added.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return added


def prediction_row(p: Prediction, run_id: str) -> PredictionRecord:
    return PredictionRecord.build(
        run_id=run_id,
        question_id=p.question_id,
        unit_id=p.unit_id,
        task_type=p.task_type,
        prediction=p.prediction,
        answer=p.answer,
        correct=p.correct,
        stop_reason=p.stop_reason,
        steps=p.steps,
        tokens=(p.tokens_in, p.tokens_out),
        cost_usd=p.cost_usd,
        latency_s=round(p.latency_s, 4),
        versions=(p.skills_version, p.prompts_version),
        created_at=now_iso(),
        answer_source=p.answer_source,
        check=(p.score, p.check_status, p.check_reason),
    )


async def run_inference(
    questions: Sequence[Question],
    *,
    provider: LLMProvider,
    prompts: AgentPrompts,
    log: HarnessLog,
    run_id: str,
    settings: AgentSettings,
    bars: Bars = NO_BARS,
    label: str = "questions",
    guard: bool = True,
) -> InferenceResult:
    """Answer every question concurrently; write predictions in batches; unit accuracy."""
    results: dict[str, Prediction] = {}  # in the order the answers arrive, as written
    pending: list[PredictionRecord] = []
    bar = bars.task(label, len(questions))

    async def answer(q: Question) -> None:
        p = await rollout_question(provider, prompts, q, running)
        results[q.question_id] = p
        pending.append(prediction_row(p, run_id))
        if len(pending) >= WRITE_BATCH:
            batch = pending[:]
            pending.clear()
            log.upsert_predictions(batch)
        killpoints.reached("rollout")
        bar.advance()

    running = settings
    try:
        with calls_logged_as(run_id):
            async with serving_agent(settings, provider) as running:
                limiter = anyio.CapacityLimiter(settings.concurrency)
                await fan_out(answer, questions, limiter=limiter)
    finally:
        log.upsert_predictions(pending)
        bar.done()
    result = summarise(run_id, questions, results)
    if guard:
        guard_infra(result, run_id)
    return result


def summarise(
    run_id: str, questions: Sequence[Question], results: dict[str, Prediction]
) -> InferenceResult:
    # an answer without a verdict (every judge reply invalid) counts neither way
    judged = {qid: p for qid, p in results.items() if p.check_status != CheckStatus.INVALID}
    correctness = {qid: p.correct for qid, p in judged.items()}
    units = build_units(questions)
    view = unit_correctness_view(units, correctness)
    per_type: dict[str, dict[str, float]] = {}
    for unit in units:
        if unit.unit_id in view:
            entry = per_type.setdefault(unit.task_type, {"total": 0, "correct": 0})
            entry["total"] += 1
            entry["correct"] += int(view[unit.unit_id])
    for entry in per_type.values():
        entry["accuracy"] = entry["correct"] / entry["total"] if entry["total"] else 0.0
    n_correct = sum(view.values())
    return InferenceResult(
        run_id=run_id,
        total=len(view),
        correct=n_correct,
        accuracy=n_correct / len(view) if view else 0.0,
        per_task_type=dict(sorted(per_type.items())),
        stop_reason_counts=dict(Counter(p.stop_reason for p in results.values())),
        correctness=correctness,
        scores={qid: p.score for qid, p in judged.items() if p.score is not None},
        check_counts=dict(Counter(p.check_status for p in results.values())),
        check_reasons=dict(
            Counter(
                p.check_reason[:80] for p in results.values() if p.check_status != CheckStatus.OK
            ).most_common(20)
        ),
    )


def guard_infra(result: InferenceResult, context: str) -> None:
    total = sum(result.stop_reason_counts.values())
    errors = result.stop_reason_counts.get(StopReason.ERROR, 0)
    if total and errors / total > INFRA_ERROR_SHARE:
        raise RunFailed(
            f"{context}: {errors}/{total} answers failed with provider errors "
            f"(> {INFRA_ERROR_SHARE:.0%}); the model endpoint looks unhealthy"
        )
    # an outside agent that crashes on every question is misconfigured (a wrong path, a
    # missing package), not learning: stop before a whole run trains on nothing. The built-in
    # loop never stops with "crash" (app/harness/agents/protocol.py FailureKind)
    crashes = result.stop_reason_counts.get(AGENT_CRASH, 0)
    if total and crashes == total:
        raise RunFailed(
            f"{context}: the outside agent crashed on all {total} questions; see a "
            "prediction's error step (report, or the tui), and check agent_command or "
            "agent_function"
        )
