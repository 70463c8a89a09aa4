"""How far a training run has got, in words and as a bar, from its checkpoint's `progress`.

`total_steps` is planned before the run (epochs × batches per epoch); a run that ends early
(early stop) or whose epochs had fewer batches ends below it, so a finished run reads as
finished with a full bar instead of "11/16".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProgressView:
    text: str
    done: int
    total: int  # done == total once the run has finished

    @property
    def finished(self) -> bool:
        return self.done >= self.total > 0


def progress_view(progress: Mapping[str, Any]) -> ProgressView:
    done = int(progress.get("global_step") or 0)
    epoch = progress.get("epoch", "?")
    if progress.get("phase") == "finished":
        steps = f"{done} step" + ("" if done == 1 else "s")
        return ProgressView(f"finished after epoch {epoch} ({steps})", done, max(done, 1))
    total = int(progress.get("total_steps") or 0)
    step = progress.get("step_completed")
    where = "no step yet" if step is None or step < 0 else f"step {step} done"
    text = f"epoch {epoch} ({progress.get('phase', '?')}, {where})  {done}/{total or '?'} steps"
    return ProgressView(text, min(done, max(total, 1)), max(total, 1))
