"""How far a training run has got, in words and as a bar, from its checkpoint's `progress`.

`total_steps` is planned before the run (epochs × batches per epoch); a run that ends early
(early stop) or whose epochs had fewer batches ends below it, so a finished run reads as
finished with a full bar instead of "11/16". A finished run names the last epoch it ran and
why it stopped (early stop or all epochs run), never the configured epoch count.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.harness.training.vocabulary import EndReason, TrainPhase
from app.harness.workspace.harness_log import HarnessLog
from app.progress import CallsEta

# app/estimate.py ESTIMATE_FILE, in the workspace's analyses/ (`estimate` writes it and
# `train` ties it to the run it starts: app/estimate.py `pin_estimate`)
ESTIMATE_JSON = "estimate.json"


@dataclass(frozen=True)
class ProgressView:
    text: str
    done: int  # steps done
    total: int | None  # steps planned; None when the checkpoint does not say
    finished: bool  # a finished run's total is the steps it took, so its bar is full

    def bar(self) -> tuple[int, int]:
        """(progress, total) for a progress bar: never indeterminate, never past its end."""
        total = max(self.total or self.done, 1)
        return min(self.done, total), total


def progress_view(progress: Mapping[str, Any]) -> ProgressView:
    done = int(progress.get("global_step") or 0)
    epoch = progress.get("epoch", "?")
    if progress.get("phase") == TrainPhase.FINISHED:
        steps = f"{done} step" + ("" if done == 1 else "s")
        return ProgressView(f"{ending_text(progress)} ({steps})", done, done, True)
    total = int(progress.get("total_steps") or 0) or None
    step = progress.get("step_completed")
    where = "no step yet" if step is None or step < 0 else f"step {step} done"
    text = f"epoch {epoch} ({progress.get('phase', '?')}, {where})  {done}/{total or '?'} steps"
    return ProgressView(text, done, total, False)


def ending_text(progress: Mapping[str, Any]) -> str:
    """How a finished run ended: the last epoch it ran and why it stopped there. A checkpoint
    written before progress recorded `end` says only the epoch it recorded."""
    epoch, planned = progress.get("epoch", "?"), progress.get("epochs_planned")
    end = progress.get("end")
    if end == EndReason.EARLY_STOP:
        n = progress.get("epochs_since_best", "?")
        return (
            f"finished after epoch {epoch} of {planned}: early stop, no new best validation "
            f"accuracy for {n} epoch{'' if n == 1 else 's'}"
        )
    if end == EndReason.MAX_CALLS and not progress.get("global_step"):
        # a step cut short goes back to its checkpoint: with none closed, no edit was kept
        return (
            f"finished in epoch {epoch} of {planned}: max_calls spent before the first step "
            "closed, so nothing was learned"
        )
    if end == EndReason.MAX_CALLS:
        return (
            f"finished in epoch {epoch} of {planned}: max_calls spent, the best version "
            "so far tested"
        )
    if end == EndReason.ALL_EPOCHS:
        return f"finished after epoch {epoch} of {planned}: all epochs run"
    return f"finished after epoch {epoch}"


def calls_eta(analyses: Path, log: HarnessLog) -> CallsEta | None:
    """The ETA of the run a stored estimate was made for and tied to (same config), counting
    the new calls that run made before this process; None without such an estimate."""
    try:
        est = json.loads((analyses / ESTIMATE_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or unreadable: the bars go without a run ETA
        return None
    if not isinstance(est, dict) or not est.get("same_config"):
        return None
    train_id, expected, first = est.get("train_id"), est.get("calls"), est.get("first_call_id")
    if not (isinstance(train_id, str) and isinstance(expected, int) and isinstance(first, int)):
        return None
    # the calls app/estimate.py `_actual_calls` compares with the estimate
    paid = log.paid_call_count_of_train(first, train_id)
    return CallsEta(train_id, expected, paid, time.monotonic())
