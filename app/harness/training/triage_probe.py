"""The counterfactual probe (`triage_probe = true`): is a judged skill gap really one?

Each failure the judge called a skill gap and whose question comes with context is answered
once more with the same versions and sampling, the question's full context inlined in the user
message (AgentPrompts.inline_context). If that answer is right, the skill text was enough and
what the agent lacked was the context: the failure becomes `missing_context`, decided by
`probe:context_inlined`, and leaves the skill pack. Only a confirmed skill gap then drives a
skill edit. Off by default: it costs one more rollout per such failure. The probe's answers are
logged as run `<prefix>probe` (kind "probe"), which a retried step clears with its other rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.session import Session
from core.evolution.diagnose import Diagnosis, Failure

PROBE = "probe:context_inlined"
PROBE_RATIONALE = "answered right when re-run with its full context inlined, so not a skill gap"


class ProbeContext(Protocol):
    session: Session


def probe_targets(failures: Sequence[Failure], diagnoses: Sequence[Diagnosis]) -> list[Failure]:
    """The failures worth probing: judged (not degraded) skill gaps with context to inline."""
    gaps = {
        d.question_id
        for d in diagnoses
        if d.category == "skill_gap" and not d.degraded and d.decided_by == "judge"
    }
    return [f for f in failures if f.question.question_id in gaps and f.question.context]


async def probe_skill_gaps(
    ctx: ProbeContext,
    prompts: AgentPrompts,
    failures: Sequence[Failure],
    diagnoses: Sequence[Diagnosis],
    run_id: str,
) -> list[Diagnosis]:
    """`diagnoses` with each probed skill gap that passed re-labelled `missing_context`."""
    targets = probe_targets(failures, diagnoses)
    if not targets:
        return list(diagnoses)
    result = await ctx.session.infer(
        [f.question for f in targets],
        run_id,
        "probe",
        prompts=replace(prompts, inline_context=True),
        label="triage probe",
        guard=False,  # a provider error fails only the probe of that question
    )
    passed = {qid for qid, ok in result.correctness.items() if ok}
    return [
        replace(d, category="missing_context", rationale=PROBE_RATIONALE, decided_by=PROBE)
        if d.question_id in passed and d.category == "skill_gap" and d.decided_by == "judge"
        else d
        for d in diagnoses
    ]
