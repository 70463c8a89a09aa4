"""Starter skills from a benchmark alone: what `init` without `--seed` begins with.

One skill file per task type of the benchmark (`<task type>.md`, the file training edits for
it: core/evolution/budget.py `resolve_skill_file`), each the same neutral text with no task
rule, plus the shared `default-strategy.md`; the system and tool prompts come from another seed
(`--prompts-from`, sim-starter by default). Training then writes the rules. A task type whose
name cannot be a file name (a path separator, a leading dot) gets no file of its own and reads
the default, as everywhere else.

The starter is rebuilt, never stored: the manifest records `seed_starter` (the prompts seed it
took) so `train --fresh` builds the same one again (app/api/training.py `_restart_from_seed`).
"""

from __future__ import annotations

from typing import Any

from app.harness.workspace.store import Benchmark, Seed
from core.evolution.budget import DEFAULT_SKILL_FILE, resolve_skill_file

STARTER_KEY = "seed_starter"  # in Seed.meta and in manifest.json: {"prompts_from": SEED}

_SKILL = """# {title}

## Approach
- Read the whole question, and any context it gives, before answering.
- Apply the rules below; they override the default approach.

## Rules
- Answer in the form the question asks for.

<!-- momentum:start -->
<!-- momentum:end -->
"""

_DEFAULT = """# Default strategy

Used for any task type that has no skill file of its own.

## Approach
- Read the whole question, and any context it gives, before answering.

## Rules
- Answer in the form the question asks for.

<!-- momentum:start -->
<!-- momentum:end -->
"""


def starter_name(benchmark: Benchmark) -> str:
    return f"{benchmark.name}-starter"


def starter_skills(task_types: tuple[str, ...]) -> dict[str, str]:
    """`<task type>.md` for each task type that can name a file, and `default-strategy.md`."""
    skills = {DEFAULT_SKILL_FILE: _DEFAULT}
    for task_type in task_types:
        name = f"{task_type}.md"
        if resolve_skill_file(task_type, [name]) == name:
            skills[name] = _SKILL.format(title=f"{task_type} cases")
    return skills


def starter_seed(benchmark: Benchmark, prompts: Seed) -> Seed:
    """A seed for `benchmark`: starter skills per task type, `prompts`' prompts and licence."""
    meta: dict[str, Any] = {STARTER_KEY: {"prompts_from": prompts.name}}
    if prompts.licence is not None:
        meta["license"] = prompts.licence
    return Seed(
        name=starter_name(benchmark),
        description=f"starter skills for the task types of {benchmark.name}",
        skills=starter_skills(benchmark.task_types),
        prompts=dict(prompts.prompts),
        meta=meta,
    )


def starter_summary(seed: Seed) -> str:
    """What init created, for its output."""
    own = sorted(f for f in seed.skills if f != DEFAULT_SKILL_FILE)
    prompts_from = seed.meta.get(STARTER_KEY, {}).get("prompts_from", "?")
    return (
        f"no --seed: starter skills {', '.join(own)} (one per task type, no rules yet) and "
        f"{DEFAULT_SKILL_FILE}; prompts from seed {prompts_from}"
    )
