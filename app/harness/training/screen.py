"""Several proposals per candidate, screened on the questions the evolver was shown.

With `evolve_proposals = k` above 1, the evolver is asked k times for each task type's skill
file at each step, and for each prompt file at the slow update. Every request after the first
ends with one more line (`ALTERNATIVE`), so a model that does not sample still answers
differently. Each proposal that changes its file then answers the questions of the pack the
evolver was shown (its failures, carried failures and contrasting successes), and the one that
answers the most of them right goes on to the gate; a tie goes to the earliest, so with one
changed proposal nothing is asked and k = 1 is the run it always was.

Why the gate's bound still holds: the proposals answer shown questions only. No skill test ever
looks at a question its evolver was shown (gate_ladder.py leaves them out of every ladder), and a
prompt file's pack holds diagnosis questions while its test reads the validation pool. So which
candidate is tested depends on no answer the test reads, and it is fixed before the test starts,
as one proposal is. Choosing on the batch the evolver reflected on is GEPA's minibatch check,
used here to choose, never to accept.

Each proposal's answers are a run of their own in the harness log, named after its step:
`…-s<S>-screen-<task type>-<i>` for a skill file, `…-slow-screen-<prompt file>-<i>` for a
prompt file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.training.train_state import TrainContext
from app.harness.training.validate import Validator
from app.harness.workspace import killpoints
from app.harness.workspace.harness_log import RunStatus
from core.evolution.evolve import EvolutionRecord

ALTERNATIVE = "Proposal {index} of {total}: propose your own best set of edits."


def proposal_prompts(prompt: str, total: int) -> list[str]:
    """The k requests: the prompt itself, then the prompt with a line naming the proposal."""
    return [prompt] + [
        f"{prompt}\n\n{ALTERNATIVE.format(index=i, total=total)}" for i in range(2, total + 1)
    ]


def training_validator(
    ctx: TrainContext, prompts: AgentPrompts, draw_samples: dict[str, int] | None = None
) -> Validator:
    """A validator whose baseline is `prompts`, on the run's units and baseline cache."""
    return Validator(
        provider=ctx.session.providers["agent"],
        base_prompts=prompts,
        units=ctx.units,
        log=ctx.log,
        settings=ctx.session.agent_settings,
        params=ctx.gate_params,
        baseline_cache=ctx.baseline_cache,
        guard_err=ctx.config.gate.guard_err,
        draw_samples=draw_samples,
    )


@dataclass(frozen=True)
class Screened:
    """What a screen found: each changed proposal's shown questions answered right."""

    proposals: int
    scores: tuple[int, ...] = ()
    asked: int = 0

    def note(self) -> str:
        """For the evolution's request summary; empty when nothing was screened."""
        if len(self.scores) < 2:
            return ""
        right = " / ".join(str(s) for s in self.scores)
        return (
            f"; of {self.proposals} proposals, {len(self.scores)} changed the file and answered "
            f"{right} of the {self.asked} shown questions right: the first with the most went on"
        )


async def screen(
    ctx: TrainContext,
    records: Sequence[EvolutionRecord],
    unit_ids: Sequence[str],
    prompts_of: Callable[[EvolutionRecord], AgentPrompts],
    run_id: Callable[[int], str],
    parent_run_id: str,
) -> EvolutionRecord:
    """The changed proposal that answers the most of `unit_ids` (shown questions) right under
    `prompts_of(record)`, its request summary saying so; the first one when fewer than two
    changed their file."""
    changed = [r for r in records if r.changed]
    units = [u for u in dict.fromkeys(unit_ids) if u in ctx.units]
    if len(changed) < 2 or not units:
        return changed[0] if changed else records[0]
    validator = training_validator(ctx, ctx.session.agent_prompts())
    scores = []
    for index, record in enumerate(changed):
        prompts, name = prompts_of(record), run_id(index)
        ctx.session.register(name, "screen", prompts, parent_run_id=parent_run_id)
        right = sum((await validator.units_right(units, prompts, name)).values())
        ctx.log.finish_run(name, RunStatus.DONE, {"shown_right": right, "of": len(units)})
        scores.append(right)
        killpoints.reached("screen")  # a proposal screened, the next not yet
    chosen = changed[scores.index(max(scores))]
    note = Screened(len(records), tuple(scores), len(units)).note()
    return replace(chosen, request_summary=chosen.request_summary + note)
