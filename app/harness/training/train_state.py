"""The mutable state of one `train()` and the read-only context it runs in.

TrainState is typed values all the way down (dataclasses, enums), so a training step reads
and writes attributes and never translates to or from dicts. checkpoint.json's "state" is
written and read in app/harness/training/checkpoint.py alone, which checks a checkpoint's
state against these same types (every key, nested ones included) and rebuilds exactly the
state an uninterrupted run had.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from app.harness.rollouts.pools import Pools
from app.harness.training.gate_ladder import BaselineCache, Family, GatePools
from app.harness.training.vocabulary import TrainPhase
from app.harness.workspace.config import GateConfig, RunConfig
from core.evolution.contamination import HeldOutIndex
from core.evolution.diagnose import CaseItem, CasePack
from core.evolution.edits import Edit, RejectedEdit
from core.evolution.gate import GateParams, GateState
from core.evolution.run_level import lond_level
from core.types import Question, QuestionUnit

if TYPE_CHECKING:
    from pathlib import Path

    from app.harness.workspace.harness_log import HarnessLog

if TYPE_CHECKING:  # the checkpoint reads TrainState without loading the model stack
    from app.harness.rollouts.session import Session


@dataclass
class Best:
    """The best versions so far by validation accuracy (the baseline's until one beats it)."""

    skills: str  # "skills/<version>"
    prompts: str  # "prompts/<version>"
    val_acc: float
    run_id: str
    epoch: int

    @property
    def versions(self) -> tuple[str, str]:
        """(skills version, prompts version), without the folder."""
        return self.skills.split("/")[-1], self.prompts.split("/")[-1]


@dataclass
class Probation:
    """A provisional accept awaiting the epoch-end verdict."""

    task_type: str
    target_file: str
    anchor_text: str  # the file before the accept; restored on rollback
    accepted_version: str
    test: GateState  # the gate test's state at the provisional accept (it goes on)
    families: tuple[Family, ...]  # the reserved stage-2 families
    edits: tuple[Edit, ...]  # applied edits; blacklisted on rollback
    epoch: int
    step: int


@dataclass
class Continuation:
    """A rejected edit whose gate test goes on over fresh families in a later step
    (app/harness/training/continuation.py)."""

    task_type: str
    target_file: str
    original: str  # the file the edit was applied to
    evolved: str  # the candidate file
    edits: tuple[Edit, ...]
    test: GateState  # SequentialGate.state() at the end of the last segment
    used_units: tuple[str, ...]  # every unit the test observed, sorted: never observed again
    epoch: int  # where the edit was proposed (its evolutions row)
    step: int
    segments: int = 1


@dataclass
class PooledTest:
    """The test of a rejected edit set that showed no harm: it goes on, over units it never
    observed, when the evolver proposes the same set again (app/harness/training/continuation.py
    `pools_evidence`)."""

    test: GateState  # SequentialGate.state() when the last segment ended
    used_units: tuple[str, ...]  # every unit the test observed, sorted: never observed again
    segments: int = 1


@dataclass
class GatedCandidate:
    """A candidate whose gate test ended for good (accepted, or rejected and blacklisted),
    kept under its `core.evolution.repeats.candidate_key`: the same candidate proposed again
    is not gated again (app/harness/training/step.py `refuse_repeats`)."""

    epoch: int  # the step that settled it
    step: int
    outcome: str  # what the step report says: "accept", or "reject (gate futility (W=0, L=3))"


@dataclass(frozen=True)
class CurvePoint:
    """One epoch of the learning curve: its accuracies and its epoch report's counts."""

    epoch: int
    val_acc: float
    test_acc: float | None  # None: no test evaluation that epoch
    counts: dict[str, int]  # the epoch report's "counts" (vocabulary.py `Count`)

    def flat(self) -> dict[str, float | None]:
        """The point as reports show it (final_test_eval.json, a run's summary) and the
        checkpoint keeps it: the counts beside the accuracies."""
        return {
            "epoch": self.epoch,
            "val_acc": self.val_acc,
            "test_acc": self.test_acc,
            **self.counts,
        }


@dataclass
class TrainState:
    train_id: str
    correctness: dict[str, bool]
    best: Best
    baseline_val_acc: float
    baseline_versions: dict[str, str]
    rejected: dict[str, list[RejectedEdit]] = field(default_factory=dict)  # by task type
    # the epoch's case packs for the system prompt and the tool descriptions, in step order:
    # the slow update merges them (app/harness/training/slow_update.py `evolve_prompts`)
    system_packs: list[CasePack] = field(default_factory=list)
    tool_packs: list[CasePack] = field(default_factory=list)
    global_step: int = 0
    changed_this_epoch: list[str] = field(default_factory=list)
    epoch_start_skills: dict[str, str] = field(default_factory=dict)
    epochs_since_best: int = 0
    probations: dict[str, Probation] = field(default_factory=dict)  # by task type
    cooldown: dict[str, int] = field(default_factory=dict)
    epoch_counts: dict[str, int] = field(default_factory=dict)
    gate_pools: GatePools = field(default_factory=GatePools)
    baseline_cache: dict[str, bool] = field(default_factory=dict)
    # the gate outcome of each scored unit (its score; None: no verdict), keyed as
    # baseline_cache (app/harness/training/gate_ladder.py `BaselineCache.scores`)
    baseline_scores: dict[str, float | None] = field(default_factory=dict)
    curve: list[CurvePoint] = field(default_factory=list)
    # Every unit the evolver was shown with its answer in this run (case packs), sorted: the
    # gate ladder leaves their families out for good (app/harness/training/gate_ladder.py).
    # A checkpoint written before this field existed loads it empty.
    shown_units: list[str] = field(default_factory=list)
    # task type -> the skill-gap failures its evolver was shown in this run, oldest first, one
    # per question: a later pack carries those still failing (app/harness/training/step.py
    # `with_earlier_failures`); a checkpoint written before this field existed loads it empty
    shown_failures: dict[str, list[CaseItem]] = field(default_factory=dict)
    continuations: dict[str, Continuation] = field(default_factory=dict)  # by task type
    # task type -> edit-set key (core/evolution/edits.py `edit_set_key`) -> its kept test
    pooled: dict[str, dict[str, PooledTest]] = field(default_factory=dict)
    # task type -> candidate key (core/evolution/repeats.py `candidate_key`) -> the candidate
    # whose test ended for good; a checkpoint written before this field existed loads it empty
    gated: dict[str, dict[str, GatedCandidate]] = field(default_factory=dict)
    # gate tests started and edits finally accepted in this run: the run-level levels of
    # `[gate] run_control = "fdr"` (core/evolution/run_level.py) are functions of these
    tests_started: int = 0
    final_accepts: int = 0

    def rejected_edits(self, task_type: str) -> list[RejectedEdit]:
        return list(self.rejected.get(task_type, []))

    def reject(self, task_type: str, edits: list[RejectedEdit]) -> None:
        """Blacklist edits for the task type's next evolve prompts."""
        self.rejected.setdefault(task_type, []).extend(edits)

    def show(self, unit_ids: Iterable[str]) -> None:
        """Record units shown to the evolver (kept sorted, so a resumed run's state is equal)."""
        self.shown_units = sorted(set(self.shown_units).union(unit_ids))

    def remember_failures(self, pack: CasePack) -> None:
        """Keep a skill pack's failures for later packs of its task type (the newest copy of
        a question replaces an older one)."""
        ids = {c.question_id for c in pack.failures}
        kept = [c for c in self.shown_failures.get(pack.target, []) if c.question_id not in ids]
        self.shown_failures[pack.target] = [*kept, *pack.failures]

    def count(self, key: str, n: int = 1) -> None:
        self.epoch_counts[key] = self.epoch_counts.get(key, 0) + n

    def mark_changed(self, task_type: str) -> None:
        if task_type not in self.changed_this_epoch:
            self.changed_this_epoch.append(task_type)
            self.changed_this_epoch.sort()


@dataclass(frozen=True)
class ResumePlan:
    """Where train() starts: at `first_epoch`; an epoch interrupted mid-way (`resume_epoch`)
    goes on with the batches it recorded, from the first step not yet done."""

    first_epoch: int = 1
    resume_epoch: int | None = None
    batches: list[list[str]] | None = None
    step_from: int = 0

    @classmethod
    def after(cls, progress: dict[str, Any], epoch_batches: list[list[str]] | None) -> ResumePlan:
        """The plan after a checkpoint of a run not yet finished."""
        if progress["phase"] == TrainPhase.EPOCH_DONE:
            return cls(first_epoch=progress["epoch"] + 1)
        return cls(
            first_epoch=progress["epoch"],
            resume_epoch=progress["epoch"],
            batches=epoch_batches,
            step_from=progress["step_completed"] + 1,
        )

    def batches_of(self, epoch: int) -> list[list[str]] | None:
        """The recorded batches when `epoch` is the one resumed, else None (build them)."""
        return self.batches if epoch == self.resume_epoch else None

    def first_step_of(self, epoch: int) -> int:
        return self.step_from if epoch == self.resume_epoch else 0


def new_test_params(gate: GateConfig, state: TrainState) -> GateParams:
    """The parameters of a gate test that starts now, numbering it in `state`: the run's own,
    or with `[gate] run_control = "fdr"` its accept level lowered to the test's LOND level
    (core/evolution/run_level.py). Continued, pooled and probation tests keep the level they
    started with (GateState.threshold)."""
    state.tests_started += 1
    if gate.run_control != "fdr":
        return gate
    level = lond_level(gate.alpha, state.tests_started, state.final_accepts, gate.run_tests)
    return replace(gate, e_confirm=1.0 / level)


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
    templates: dict[str, str]
    total_steps: int = 0
    baseline_run_id: str = "baseline"
    # question id of a gate draw -> its sample index (GatePools.draw_samples)
    draw_samples: dict[str, int] = field(default_factory=dict)

    @property
    def gate_params(self) -> GateParams:
        return self.config.gate

    @property
    def log(self) -> HarnessLog:
        return self.session.log

    @property
    def root(self) -> Path:
        return self.session.paths.root

    @cached_property
    def held_out(self) -> HeldOutIndex:
        """Validation and test questions, tokenised once per run for the contamination check
        (core/evolution/contamination.py); built from the pools, so a resume rebuilds it."""
        return HeldOutIndex.build(self.pools.validation + self.pools.test, self.pools.diagnosis)

    @property
    def evolver_diagnosis(self) -> tuple[Question, ...]:
        """The diagnosis pool batches and momentum draw from: without the gate-only families
        (GatePools.gate_only_units), which only gate ladders ever use."""
        return self.gate_pools.without_gate_only(
            self.pools.diagnosis, self.config.gate.gate_only_share
        )

    def questions_of(self, pool: tuple[Question, ...], task_type: str) -> list[Question]:
        return [q for q in pool if q.task_type == task_type]
