"""The mutable state of one `train()` and the read-only context it runs in.

Everything in TrainState is plain JSON data, so the checkpoint is `asdict(state)` and a
resumed run rebuilds exactly the state an uninterrupted one had.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from app.harness.config import RunConfig
from app.harness.gate_ladder import BaselineCache, GatePools
from app.harness.pools import Pools
from app.harness.session import Session
from core.evolution.edits import RejectedEdit
from core.evolution.gate import GateParams
from core.types import Question, QuestionUnit


@dataclass
class Probation:
    """A provisional accept awaiting the epoch-end verdict."""

    task_type: str
    target_file: str
    anchor_text: str  # the file before the accept; restored on rollback
    accepted_version: str
    test: dict[str, Any]  # the gate test's state at the provisional accept (it goes on)
    families: list[list[Any]]  # [family id, [unit ids]]: the reserved stage-2 families
    edits: list[dict[str, Any]]  # applied edits; blacklisted on rollback
    epoch: int
    step: int


@dataclass
class TrainState:
    train_id: str
    correctness: dict[str, bool]
    best: dict[str, Any]
    baseline_val_acc: float
    baseline_versions: dict[str, str]
    rejected: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    system_packs: list[dict[str, Any]] = field(default_factory=list)
    tool_packs: list[dict[str, Any]] = field(default_factory=list)
    global_step: int = 0
    changed_this_epoch: list[str] = field(default_factory=list)
    epoch_start_skills: dict[str, str] = field(default_factory=dict)
    epochs_since_best: int = 0
    probations: dict[str, dict[str, Any]] = field(default_factory=dict)
    cooldown: dict[str, int] = field(default_factory=dict)
    epoch_counts: dict[str, int] = field(default_factory=dict)
    gate_pools: dict[str, Any] = field(default_factory=dict)
    baseline_cache: dict[str, bool] = field(default_factory=dict)
    curve: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainState:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def rejected_edits(self, task_type: str) -> list[RejectedEdit]:
        return [RejectedEdit.from_dict(d) for d in self.rejected.get(task_type, [])]

    def count(self, key: str, n: int = 1) -> None:
        self.epoch_counts[key] = self.epoch_counts.get(key, 0) + n

    def mark_changed(self, task_type: str) -> None:
        if task_type not in self.changed_this_epoch:
            self.changed_this_epoch.append(task_type)
            self.changed_this_epoch.sort()


@dataclass
class TrainContext:
    """What one train() reads: session, pools, units, ladder, params. Not checkpointed."""

    session: Session
    config: RunConfig
    pools: Pools
    task_types: tuple[str, ...]
    units: dict[str, QuestionUnit]
    gate_pools: GatePools
    baseline_cache: BaselineCache
    gate_params: GateParams
    templates: dict[str, str]
    total_steps: int = 0
    baseline_run_id: str = "baseline"

    @property
    def log(self):
        return self.session.log

    @property
    def root(self):
        return self.session.paths.root

    def questions_of(self, pool: tuple[Question, ...], task_type: str) -> list[Question]:
        return [q for q in pool if q.task_type == task_type]


def gate_params_from(config: RunConfig) -> GateParams:
    return GateParams(
        e_confirm=config.gate_e_confirm,
        e_rollback=config.gate_e_rollback,
        e_provisional=config.gate_e_provisional,
        w_net_min=config.gate_w_net_min,
        delta_min=config.gate_delta_min,
        lambda_dir=config.gate_lambda_dir,
        lambda_strategy=config.gate_lambda_strategy,
        lambda_max=config.gate_lambda_max,
        shrink_k=config.gate_shrink_k,
        n_max=config.gate_n_max,
        e_futility=config.gate_e_futility,
        curtail=config.gate_curtail,
        calibrate=config.gate_calibrate,
        futility_share=config.gate_futility_share,
        futility_min=config.gate_futility_min,
    )
