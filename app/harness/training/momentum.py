"""Momentum (slow-update phase 6): a short guidance block per skill changed this epoch.

The previous (epoch-start) and current skill are rolled out on the same sample of diagnosis
questions; the evolver turns the comparison into guidance written between the momentum
markers, as a new immutable skills version.
"""

from __future__ import annotations

import random
from string import Template

from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.training.train_state import TrainContext, TrainState
from app.harness.training.validate import with_skill
from app.providers.errors import BudgetExceeded
from core.evolution.budget import resolve_skill_file
from core.evolution.edits import replace_momentum
from core.evolution.evolve import momentum_guidance
from core.types import Question


def sample_questions(ctx: TrainContext, task_type: str, epoch: int) -> list[Question]:
    candidates = ctx.questions_of(ctx.evolver_diagnosis, task_type)  # never a gate-only one
    n = min(ctx.config.momentum_samples, len(candidates))
    return random.Random(f"momentum:{epoch}:{task_type}").sample(candidates, n) if n else []


async def run_slow_momentum(
    ctx: TrainContext, state: TrainState, epoch: int, prefix: str
) -> list[str]:
    """Returns the task types whose skill file got new guidance."""
    session = ctx.session
    files = session.version_files("skills", session.paths.skills_version)
    updated: list[str] = []
    for task_type in state.changed_this_epoch:
        target = resolve_skill_file(task_type, files)
        previous = state.epoch_start_skills.get(target, "")
        if previous == files.get(target, "") or task_type not in ctx.task_types:
            continue
        guidance = await _guidance(ctx, task_type, target, previous, files[target], epoch, prefix)
        if guidance is None:
            continue
        new_text = replace_momentum(files[target], guidance)
        if new_text != files[target]:
            files[target] = new_text
            updated.append(task_type)
    if updated:
        session.publish_version(
            "skills",
            files,
            source="momentum",
            run_id=state.train_id,
            description=f"e{epoch} momentum for {', '.join(updated)}",
        )
    return updated


async def _guidance(
    ctx: TrainContext,
    task_type: str,
    target: str,
    previous: str,
    current: str,
    epoch: int,
    prefix: str,
) -> str | None:
    questions = sample_questions(ctx, task_type, epoch)
    if not questions:
        return None
    session = ctx.session
    now = session.agent_prompts()
    before = with_skill(now, target, previous)
    r_prev = await session.infer(
        questions,
        f"{prefix}momentum-{task_type}-prev",
        "momentum",
        prompts=before,
        label=f"momentum {task_type} (prev)",
        guard=False,
    )
    r_cur = await session.infer(
        questions,
        f"{prefix}momentum-{task_type}-cur",
        "momentum",
        prompts=now,
        label=f"momentum {task_type} (cur)",
        guard=False,
    )
    samples = "\n".join(
        f"- {q.question} | previous: {'right' if r_prev.correctness.get(q.question_id) else 'wrong'}"
        f", current: {'right' if r_cur.correctness.get(q.question_id) else 'wrong'}"
        for q in questions
    )
    prompt = Template(ctx.templates["momentum"]).safe_substitute(
        task_type=task_type, previous=previous, current=current, samples=samples
    )
    try:
        with calls_logged_as(f"{prefix}momentum-{task_type}"):
            reply = await session.providers["evolver"].complete(
                [{"role": "user", "content": prompt}], role="evolver"
            )
    except BudgetExceeded:
        raise
    except Exception:  # momentum notes are optional: a failed call leaves the skill as it is
        return None
    return momentum_guidance(reply.text)
