"""The contamination check on the slow update's changes: system/tool prompt changes
(app/harness/training/slow_update.py) and skill descriptions
(app/harness/training/descriptions.py). Skill edits are checked in
app/harness/training/step.py `refuse_contaminated`, which writes a step report instead."""

from __future__ import annotations

from loguru import logger

from app.harness.training.train_state import TrainContext, TrainState
from app.harness.training.vocabulary import Count


def refused_as_contamination(ctx: TrainContext, state: TrainState, what: str, added: str) -> bool:
    """A prompt or description change whose added text holds a held-out question's words or
    answer (core/evolution/contamination.py) is not applied, and is counted."""
    sign = ctx.held_out.check(added)
    if sign is None:
        return False
    logger.warning("{}: change refused, {}", what, sign.describe())
    state.count(Count.CONTAMINATION)
    return True
