"""Names a training run writes into its step reports, epoch reports and checkpoint.

Each is a StrEnum whose values are the strings stored on disk, so a member compares equal to
the stored string, serialises as it, and old workspaces read the same. The gate's own names
(accept, reject, ...) are `core.evolution.gate.GateAction`; a run's status in harness.db is
`app.harness.workspace.harness_log.RunStatus`.
"""

from __future__ import annotations

from enum import StrEnum

from core.evolution.gate import GateAction


class SkipAction(StrEnum):
    """A step report's action when no gate ran for the task type."""

    SKIP_COOLDOWN = "skip_cooldown"  # rolled back lately; waits `cooldown_steps` steps
    SKIP_NO_CHANGE = "skip_no_change"  # the evolver proposed nothing applicable
    # No failure of the task type in the batch. Before skip_no_skill_gaps existed it also
    # stood for "failures, none a skill gap"; such stored reports read as they were written.
    SKIP_NO_FAILURES = "skip_no_failures"
    # Failures, but the judge classed none as a skill gap; the step report's "diagnosis"
    # holds the counts per category (core/evolution/diagnose.py FailureTally).
    SKIP_NO_SKILL_GAPS = "skip_no_skill_gaps"
    EVOLVE_FAILED = "evolve_failed"  # the evolver's reply could not be used
    # The task type is on probation: no edit until the epoch-end verdict on the provisional one.
    SKIP_PROBATION = "skip_probation"
    # the edit's added text holds a held-out question's words or answer
    # (core/evolution/contamination.py); refused before any gate ran
    CONTAMINATION = "contamination"
    # the candidate is one whose test already ended (the same base file, the same edits once
    # normalised: core/evolution/repeats.py); not gated again (app/harness/training/step.py)
    SKIP_REPEAT = "skip_repeat"


StepAction = GateAction | SkipAction
STEP_ACTIONS: tuple[StepAction, ...] = (*GateAction, *SkipAction)


class Count(StrEnum):
    """Keys of `TrainState.epoch_counts` and of an epoch report's "counts"."""

    ACCEPTED = "accepted"
    PROVISIONAL = "provisional"
    REJECTED = "rejected"  # edits the gate rejected
    # Counted alongside REJECTED for every gate rejection; nothing reads it, it stays so that
    # checkpoints keep their contents.
    GATE_REJECTED = "gate_rejected"
    # Gate segments that ended W > L short of their horizon: the test goes on in a later step
    # (app/harness/training/continuation.py); also counted as rejected.
    CONTINUED = "continued"
    # Rejected edit sets whose test is kept, not blacklisted: when the evolver proposes the
    # same set again its test goes on (app/harness/training/continuation.py); also rejected.
    POOLED = "pooled"
    ROLLED_BACK = "rolled_back"  # provisional accepts that failed their probation
    KEPT = "kept"  # provisional accepts that passed it
    SKIPPED = "skipped"
    COOLDOWN = "cooldown"
    EVOLVE_FAILED = "evolve_failed"  # counted from step reports by the TUI only
    PROMPTS_KEPT = "prompts_kept"
    PROMPTS_REVERTED = "prompts_reverted"
    DESCRIPTIONS_ACCEPTED = "descriptions_accepted"
    DESCRIPTIONS_REJECTED = "descriptions_rejected"
    # skill edits, descriptions and prompt changes refused by core/evolution/contamination.py
    CONTAMINATION = "contamination"
    # skill candidates not gated because an equal one's test had ended (SkipAction.SKIP_REPEAT)
    REPEATS = "repeats"


class TrainPhase(StrEnum):
    """Where a checkpoint was taken (checkpoint.json's progress.phase)."""

    SETUP = "setup"  # before the baseline; a resume starts over under the same train id
    IN_EPOCH = "in_epoch"  # after a step
    EPOCH_DONE = "epoch_done"  # after the slow update
    FINISHED = "finished"  # after the final test evaluation


class EndReason(StrEnum):
    """Why a finished run stopped training (checkpoint.json's progress.end)."""

    ALL_EPOCHS = "all_epochs"  # every configured epoch ran
    EARLY_STOP = "early_stop"  # `early_stop_patience` epochs without a new best
    MAX_CALLS = "max_calls"  # `max_calls` paid training calls spent


# The run ids of a training's test-pool measurements (app/harness/training/call_budget.py
# leaves them out of `max_calls`): the seed versions on the whole benchmark, once per
# workspace, and the final test of the best version.
BASELINE_RUN = "baseline"


def final_test_run_id(train_id: str) -> str:
    return f"{train_id}-final-test"


def step_prefix(train_id: str, epoch: int, step: int) -> str:
    """The prefix of every run of one step (app/harness/training/step.py)."""
    return f"{train_id}-e{epoch}-s{step}-"
