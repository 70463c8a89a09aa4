"""A gate test that goes on in later steps: no promising evidence is thrown away.

When a task type's gate-eligible pool holds more families than one test may use in a step
(`gate.n_max`), an edit's test is one sequential test over the whole pool, spent n_max
families per step:

- its horizon H is the number of families of the whole ladder (the pool minus every family
  shown to the evolver), and its accept level is the exact level for H
  (`GateParams.accept_level(H)`), fixed before the first family is seen;
- a segment that ends without a decision ("insufficient_evidence": the step's n_max families
  are used up) with more wins than losses is not rejected for good: the edit, its test state
  and the units the test used are kept (`TrainState.continuations`), the task type proposes no
  new edit meanwhile, and the next step goes on with the same e-process over families the test
  has never observed, in a fresh seeded shuffle;
- it ends like any test: accept once E_win crosses the level, reject at harm, no signal,
  curtailment, W ≤ L at a segment's end, or when no fresh family is left.

What is guaranteed. The segments are one test that never looks at a family twice, over at most
H families, at the level calibrated for H; whether it goes on (W > L) is decided from outcomes
already seen, which an e-process allows (it is a test supermartingale, so Ville's inequality
bounds the crossing over any stopping rule). So P(a null edit is accepted in any segment) ≤ α,
the gate's bound (core/evolution/gate.py) — under its assumptions, with the null read per
family: for each family, given everything before, the edit applied to the versions current
when that family is evaluated wins it no more often than it loses it (other task types' files
may change between segments). Measured by bench/gate_validity.py `gate.validity.continued_test`.

A re-proposed edit set goes on too (`pools_evidence`). A test that stopped for want of a signal
(no net win after a third of its horizon: most often a one-rule edit whose units were all ties)
with no more losses than wins is not blacklisted: its state and the units it observed are kept
(`TrainState.pooled`, keyed by `core.evolution.edits.edit_set_key`). When the evolver proposes
the same set again, its test goes on at its first level and horizon over units of the new
ladder it never observed; the new ladder leaves out every unit shown to the evolver since, so
it is part of the first ladder and the horizon holds. Whether the evolver proposes it again may
depend on anything; the guarantee is the same as above (one e-process, no unit twice, at most H
units), measured by `gate.validity.pooled_reproposal` (the evolver proposing a null edit again
at every step). Before, such an edit was blacklisted: a one-rule edit had one test, and a test
that happened to meet only ties lost the rule for the rest of the run. A test that showed
harm, was curtailed, lost more than it won or used its whole horizon ends for good.

When the pool holds at most n_max families (the defaults on every bench world), a test sees its
whole ladder in one step and nothing changes: the level is the same, and a rejection is final.
"""

from __future__ import annotations

from dataclasses import replace

from app.harness.training.gate_ladder import Ladder
from core.evolution.acceptance import EProcessRule, RuleSetup
from core.evolution.edits import Edit, EditReport
from core.evolution.evolve import EvolutionRecord, EvolutionStatus, TargetKind
from core.evolution.gate import (
    GateDecision,
    GateEndedBy,
    GateParams,
    GateState,
    GateStopReason,
    SequentialGate,
)

CARRIED = "carried over: its test goes on"


class SegmentRule(EProcessRule):
    """The eprocess rule over one step's segment of a test whose horizon is the whole pool."""

    def __init__(self, setup: RuleSetup, gate: SequentialGate) -> None:
        super().__init__(setup)
        self.gate = gate


def first_segment_gate(params: GateParams, ladder: Ladder, horizon: int) -> SequentialGate:
    """The gate of a test's first segment: level and futility rules for the whole horizon. A
    provisional accept needs the segment's stage 2 (the families its probation finishes on)."""
    whole = replace(params, n_max=max(horizon, 1))
    stage1 = len(ladder.stage1) if ladder.stage2 else horizon
    return SequentialGate(whole, horizon=horizon, stage1=stage1)


def resumed_gate(params: GateParams, test: GateState) -> SequentialGate:
    """The gate going on from `test` (SequentialGate.state()), with no stage boundary left."""
    return SequentialGate.resume(replace(params, n_max=max(test.horizon, 1)), test)


def goes_on(decision: GateDecision, test: GateState | None, observed_before: int) -> bool:
    """Whether a rejected segment's test continues in a later step: it ran out of this step's
    families, not of its horizon, with more wins than losses, and it used at least one family
    (a segment that found none fresh ends the test)."""
    return (
        test is not None
        and decision.stop_reason == GateStopReason.INSUFFICIENT_EVIDENCE
        and decision.W > decision.L
        and observed_before < decision.n_used < test.horizon
    )


def pools_evidence(decision: GateDecision, test: GateState | None) -> bool:
    """Whether a rejected test is kept for a re-proposal of the same edit set instead of
    blacklisting its edits: it stopped short of its horizon for want of a signal (the no-signal
    stop) with no more losses than wins. A test that showed harm, was curtailed (no accept
    reachable within its horizon) or used its whole horizon is final."""
    return (
        test is not None
        and decision.ended_by == GateEndedBy.NO_SIGNAL
        and decision.W >= decision.L
        and decision.n_used < test.horizon
    )


def carried_record(
    task_type: str,
    target_file: str,
    original: str,
    evolved: str,
    edits: tuple[Edit, ...],
    source_version: str,
) -> EvolutionRecord:
    """The record a continued test is settled with: the same edit, applied as before."""
    reports = tuple(
        EditReport(index=i, op=e.op, section=e.section, applied=True, reason=CARRIED)
        for i, e in enumerate(edits)
    )
    return EvolutionRecord(
        status=EvolutionStatus.OK,
        target_kind=TargetKind.SKILL,
        target_file=target_file,
        original=original,
        evolved=evolved,
        task_type=task_type,
        edits=edits,
        apply_report=reports,
        source_version=source_version,
        request_summary=CARRIED,
    )
