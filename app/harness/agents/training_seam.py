"""The outside agent in the rollouts: `[agent] kind = "command" | "python"` (RunConfig
`agent_kind`) makes every rollout of `train`, `eval` and `infer` (inference, the gate's
ladders, probation, the held-out test, fork) one `run_rollout` of that agent instead of the
built-in loop, and turns its `AgentResult` into the `Prediction` the rest of the harness reads.

It implements `ExternalAgent` of app/harness/rollouts/inference.py: `serving` starts one
recording gateway around the role's provider per batch of rollouts, `answer` runs one rollout
through it. The answer is checked by the question's checker exactly as the built-in loop's
(`AgentSettings.checker`); the trajectory is rendered into the built-in loop's step dicts, which
diagnosis reads (core/evolution/diagnose.py `render_trajectory`); tokens and cost come from the
gateway's record; a failure's kind is the stop reason.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from app.harness.agents.calls import CallStatus
from app.harness.agents.command_agent import CommandAgent, CommandSettings
from app.harness.agents.gateway import Gateway, running_gateway
from app.harness.agents.protocol import Agent, AgentTask, SkillsVersion
from app.harness.agents.python_agent import PythonAgent
from app.harness.agents.rollout import Rollout, run_rollout
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings, verdict_step
from app.harness.rollouts.telemetry import current_run_id
from app.harness.workspace.config import RunConfig
from app.providers.errors import BudgetExceeded
from app.secrets import scrub
from core.checkers import CheckResult, passes
from core.protocols import LLMProvider
from core.traces import Role, StepKind, Trace
from core.trajectory import summarise_tool_output
from core.types import Prediction, Question, StopReason

MODEL_TEXT_CHARS = 4_000  # a model turn as stored in a prediction's steps (the judge sees it)
# Gateway call outcomes that are the model endpoint's fault, not the agent's: a rollout with
# one stops with "error", so the infra guards (inference.guard_infra, gate.guard_err) count it
INFRA_STATUSES = frozenset({CallStatus.ERROR, CallStatus.TIMEOUT})


@dataclass(frozen=True)
class AgentLimits:
    call_cap: int
    timeout_s: float


class ExternalRollouts:
    """An outside agent for the rollouts (`ExternalAgent`): unbound until `serving` gives it a
    running gateway."""

    def __init__(
        self, agent: Agent, limits: AgentLimits, *, model_name: str, gateway: Gateway | None = None
    ) -> None:
        self.agent = agent
        self.limits = limits
        self.model_name = model_name
        self.gateway = gateway

    @contextlib.asynccontextmanager
    async def serving(self, provider: LLMProvider) -> AsyncIterator[ExternalRollouts]:
        if self.gateway is not None:  # already inside a batch's gateway
            yield self
            return
        async with running_gateway(provider, model_name=self.model_name) as gateway:
            yield ExternalRollouts(
                self.agent, self.limits, model_name=self.model_name, gateway=gateway
            )

    async def answer(
        self, prompts: AgentPrompts, question: Question, settings: AgentSettings
    ) -> Prediction:
        if self.gateway is None:
            raise RuntimeError("an outside agent's rollout needs its gateway (serving_agent)")
        run_id = current_run_id.get()  # every caller names its run with calls_logged_as
        started = time.perf_counter()
        rollout = await run_rollout(
            self.agent,
            self.gateway,
            agent_task(question),
            skills_version(prompts),
            rollout_id=f"{run_id}:{question.question_id}:s{settings.sample}",
            call_cap=self.limits.call_cap,
            time_limit_s=self.limits.timeout_s,
            log_as=run_id,
        )
        if any(c.status == CallStatus.BUDGET for c in rollout.calls):
            # the built-in loop stops the run at the spend cap; so does an outside agent's
            raise BudgetExceeded("the run's spend cap was reached during an agent's rollout")
        return await prediction_from(
            rollout, question, prompts, settings, time.perf_counter() - started
        )

    def close(self) -> None:
        """Kill any agent process still running (a command agent's sandbox pool)."""
        if isinstance(self.agent, CommandAgent):
            self.agent.pool.stop()


def external_agent(config: RunConfig) -> ExternalRollouts | None:
    """The configured outside agent, or None for the built-in loop. A `module:function` that
    does not load is a UserError here, before any rollout."""
    limits = AgentLimits(config.agent_call_cap, config.agent_timeout_s)
    agent: Agent
    if config.agent_kind == "command":
        agent = CommandAgent(
            CommandSettings(
                argv=config.agent_command,
                skills_dirs=config.agent_skills_dirs,
                timeout_s=config.agent_timeout_s,
                concurrency=config.concurrency,
            )
        )
    elif config.agent_kind == "python":
        agent = PythonAgent(config.agent_function, timeout_s=config.agent_timeout_s)
    else:
        return None
    return ExternalRollouts(agent, limits, model_name=config.agent_model)


def agent_task(question: Question) -> AgentTask:
    """The question as the agent sees it: its text, its task type and its context (data)."""
    return AgentTask(
        task_id=question.question_id,
        question=question.question,
        task_type=question.task_type,
        context=question.context,
    )


def skills_version(prompts: AgentPrompts) -> SkillsVersion:
    """The text being trained, whole: every skill file, the system prompt (memories included
    when memory_k puts them there), the tool descriptions."""
    return SkillsVersion(
        version=prompts.skills_version,
        skills=dict(prompts.skills),
        system_prompt=prompts.system,
        tool_descriptions=dict(prompts.tool_docs),
        prompts_version=prompts.prompts_version,
    )


async def prediction_from(
    rollout: Rollout,
    question: Question,
    prompts: AgentPrompts,
    settings: AgentSettings,
    latency_s: float,
) -> Prediction:
    """The rollout as the built-in loop's Prediction: the answer checked by the question's
    checker (no answer: a failure, whatever the checker), the trajectory as step dicts ending
    in the same verdict step, the gateway's tokens and cost."""
    result = rollout.result
    stop = stop_reason(rollout)
    check = (
        await settings.checker.check(question, result.answer)
        if stop == StopReason.FINAL
        else CheckResult.scored(0.0)
    )
    correct = passes(question, check)
    final = result.answer if stop == StopReason.FINAL else ""
    source = "answer_line" if stop == StopReason.FINAL else ""
    steps = trace_steps(result.trace)
    if result.failure is not None:
        steps.append({"type": "error", "error": f"{result.failure.kind}: {result.failure.detail}"})
    agent = {
        # the context came with the task, not through read_context: triage's context_unread
        # rule (core/evolution/triage.py) has no call to look for
        "context_in_task": bool(question.context),
        "agent": {
            "calls": result.usage.calls,
            "refused": result.usage.refused,
            "exit_code": result.exit_code,
            "failure": result.failure.as_json() if result.failure else None,
            # the agent's own trace file: spans read, lines skipped, why not read
            **(result.agent_trace.as_json() if result.agent_trace is not None else {}),
        },
    }
    steps.append(verdict_step(question, final, correct, stop, source, check, agent))
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
        tokens_in=result.usage.tokens_in,
        tokens_out=result.usage.tokens_out,
        cost_usd=result.usage.cost_usd,
        latency_s=latency_s,
        skills_version=prompts.skills_version,
        prompts_version=prompts.prompts_version,
        answer_source=source,
        score=check.score,
        check_status=str(check.status),
        check_reason=scrub(check.reason),
    )


def stop_reason(rollout: Rollout) -> str:
    """ "final" for an answer; "error" when the model endpoint failed under the agent (the
    infra guards count it, as the built-in loop's provider errors); else the failure's kind
    (crash, timeout, flood, garbage, call_cap)."""
    failure = rollout.result.failure
    if failure is None:
        return StopReason.FINAL
    if any(c.status in INFRA_STATUSES for c in rollout.calls):
        return StopReason.ERROR
    return failure.kind.value


def trace_steps(trace: Trace) -> list[dict[str, Any]]:
    """The agent's own turns in the built-in loop's step shapes: a model step per assistant
    message (its tool calls attached), a tool step per observation (with its `duration_s` when
    the agent's trace file timed it). The opening system and user messages are left out, as
    the built-in loop leaves them out: diagnosis is given the system prompt and the skill
    separately (app/harness/training/step.py failures_from_rows)."""
    steps: list[dict[str, Any]] = []
    turn = -1
    for s in trace.steps:
        if s.kind == StepKind.MESSAGE and s.role == Role.ASSISTANT:
            turn += 1
            text = s.text[:MODEL_TEXT_CHARS]
            steps.append({"turn": turn, "type": "model", "text": text, "tool_calls": []})
        elif s.kind == StepKind.TOOL_CALL:
            if not steps or steps[-1]["type"] != "model":
                turn += 1
                steps.append({"turn": turn, "type": "model", "text": "", "tool_calls": []})
            call = {"id": s.tool_call_id, "name": s.tool_name, "arguments": s.arguments}
            steps[-1]["tool_calls"].append(call)
        elif s.kind == StepKind.OBSERVATION:
            step = {
                "turn": max(turn, 0),
                "type": "tool",
                "name": s.tool_name,
                "arguments": "",
                "status": "error" if s.is_error else "ok",
                "output": summarise_tool_output(s.text),
            }
            if s.duration_s:  # from a tool span of the agent's own trace file
                step["duration_s"] = s.duration_s
            steps.append(step)
    return steps
