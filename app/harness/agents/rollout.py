"""One agent on one task through the gateway: open a rollout key, run the agent against it,
close the key, and complete the agent's result with what the gateway recorded (its usage,
and its trajectory when the agent reported none).

The rollouts call it per question through app/harness/agents/training_seam.py
(docs/agents.md#in-training).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.harness.agents.calls import RecordedCall, trace_from_calls, usage_from_calls
from app.harness.agents.gateway import DEFAULT_CALL_CAP, DEFAULT_TIME_LIMIT_S, Gateway
from app.harness.agents.protocol import (
    MAX_DETAIL_CHARS,
    Agent,
    AgentResult,
    AgentTask,
    Failure,
    FailureKind,
    SkillsVersion,
)


@dataclass(frozen=True)
class Rollout:
    rollout_id: str
    result: AgentResult
    calls: tuple[RecordedCall, ...]


async def run_rollout(
    agent: Agent,
    gateway: Gateway,
    task: AgentTask,
    skills: SkillsVersion,
    *,
    rollout_id: str,
    call_cap: int = DEFAULT_CALL_CAP,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    log_as: str = "",
) -> Rollout:
    """`log_as`: the run id whose `llm_calls` rows the agent's model calls become."""
    key = gateway.open_rollout(
        rollout_id, call_cap=call_cap, time_limit_s=time_limit_s, log_as=log_as
    )
    try:
        result = await agent.run(task, skills, gateway.endpoint(key))
    finally:
        calls = gateway.close_rollout(key)
    return Rollout(rollout_id, with_calls(result, calls, rollout_id), calls)


def with_calls(result: AgentResult, calls: tuple[RecordedCall, ...], native_id: str) -> AgentResult:
    """`result` with the gateway's usage, its trace when the agent gave none (with the tool
    spans of the agent's own trace file, calls.py `trace_from_calls`), and the
    CALL_CAP failure when the gateway refused calls (the root cause of whatever the agent
    did next: a crash on the refusal, or an answer made without the model)."""
    usage = usage_from_calls(calls)
    spans = result.agent_trace.tool_spans if result.agent_trace is not None else ()
    trace = result.trace if result.trace.steps else trace_from_calls(calls, native_id, spans)
    failure = result.failure
    if usage.refused:
        after = f"; then {failure.kind.value}: {failure.detail}" if failure else ""
        detail = f"{usage.refused} model call(s) refused past the rollout's cap or time{after}"
        failure = Failure(FailureKind.CALL_CAP, detail[:MAX_DETAIL_CHARS])
    return replace(result, usage=usage, trace=trace, failure=failure)
