"""`max_calls`: the paid model calls a training may spend on learning.

Counted: every paid call (a response-cache miss) the train run makes to learn: rollouts on the
diagnosis and validation pools, the judge, the evolver, the gate, the slow update. Not
counted: the measurements of the test pool, which learning never reads: the baseline (the
seed versions on the whole benchmark, once per workspace), the per-epoch holdout tests and the
final test. So a budget is what learning costs, the figure an optimiser that never looks at
the test pool is given (bench/gepa_compare.py's budget sweep gives every arm the same).

When the count reaches `max_calls` no counted call starts (calls in flight finish and are
counted). The Runner goes back to its last checkpoint, as `--resume` would, and finishes from
there: the best version so far is restored and tested, and the run ends `max_calls`
(app/harness/training/vocabulary.py `EndReason`). A killed run resumes with its count read
from the spend ledger (app/providers/cache.py), so the bound holds across kills.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from app.harness.rollouts.telemetry import current_run_id
from app.harness.training.vocabulary import BASELINE_RUN, final_test_run_id, step_prefix
from app.providers.cache import ResponseCache
from app.providers.litellm_provider import CostBudget


def is_measurement(run_id: str, train_id: str) -> bool:
    """A run of `train_id` that measures the test pool: the baseline, a per-epoch holdout
    (slow_update.py `_test_accuracy`) or the final test (runner.py `final_test_eval`)."""
    if run_id in (BASELINE_RUN, final_test_run_id(train_id)):
        return True
    return re.fullmatch(rf"{re.escape(train_id)}-e\d+-slow-holdout-.+", run_id) is not None


def training_calls(paid_by_run: Mapping[str, int], train_id: str) -> int:
    """The counted calls in a spend ledger's paid calls of `train_id`, by calling run."""
    return sum(n for run_id, n in paid_by_run.items() if not is_measurement(run_id, train_id))


def ledger_paid_calls(cache_db: Path, train_id: str) -> dict[str, int]:
    """The paid calls charged to `train_id`, by calling run, read from a workspace's spend
    ledger (its response cache, `WorkspacePaths.cache_db`)."""
    cache = ResponseCache(cache_db)
    try:
        return cache.paid_calls_by_run(train_id)
    finally:
        cache.close()


def first_step_calls(paid_by_run: Mapping[str, int], train_id: str) -> int:
    """The counted calls of `train_id`'s first step (epoch 1, step 0): what a budget must cover
    before the run can keep anything, since a step cut short goes back to its checkpoint."""
    prefix = step_prefix(train_id, 1, 0)
    return sum(n for run_id, n in paid_by_run.items() if run_id.startswith(prefix))


def arm(budget: CostBudget, max_calls: int | None, train_id: str, already: int) -> None:
    """Count `train_id`'s training calls against `max_calls` (None: count nothing)."""
    if max_calls is None:
        budget.arm_calls(None)
        return
    budget.arm_calls(
        max_calls, already, counts=lambda: not is_measurement(current_run_id.get(), train_id)
    )
