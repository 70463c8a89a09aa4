"""Why a task type did not learn, from counts the log holds (app/learning_report.py reads them).

Four reasons, each a measurable test on one task type's evidence of a training run:

- `evolver_nothing_usable`: the evolver was asked and no reply held a usable edit (every
  reply unparseable, empty or changing nothing);
- `agent_ignored_rule`: candidates with the evolver's edit in the skill the agent was sent
  were gated, the agent still answered at least half of those gate units wrong, and at least
  half of those wrong answers are the very answers it gave the same questions without the edit
  (the base skill's, where the log holds them): the rule did not move the answer;
- `evolver_wrong_rule`: the same failures, but most wrong answers differ from the base skill's:
  the agent followed the rule and the rule was wrong (as "team-name-username" for a
  `team-` + surname + initial convention). Without base answers to compare, the failures count
  as `agent_ignored_rule` and its detail says the two cannot be told apart;
- `gate_lacked_evidence`: the gate's pools hold fewer families than the gate needs to accept
  anything (`gate_min_families`, core/benchmark_checks.py), or a gate test could see fewer
  (its horizon: the pools less the families shown to the evolver), or it ran out of families
  before deciding (stop reason `insufficient_evidence`);
- `judge_mis_triaged`: at least half the judge's verdicts that stand name a cause the log
  contradicts: a `runtime_fault` on a rollout that ended with an answer (no error, turns left;
  with a non-empty answer core/evolution/triage.py overrules it, so only an empty one stands),
  or `missing_context` on a question that has no context. Those failures never reach the
  evolver.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    EVOLVER_NOTHING_USABLE = "evolver_nothing_usable"
    AGENT_IGNORED_RULE = "agent_ignored_rule"
    EVOLVER_WRONG_RULE = "evolver_wrong_rule"
    GATE_LACKED_EVIDENCE = "gate_lacked_evidence"
    JUDGE_MIS_TRIAGED = "judge_mis_triaged"


@dataclass(frozen=True)
class TypeEvidence:
    """One task type's counts over a training run."""

    task_type: str
    accepted: int  # candidates accepted (accept, accept_provisional)
    evolver_replies: int
    usable_replies: int  # replies that parsed and changed the skill (status ok, >= 1 edit)
    gated: int  # candidates that went to the gate
    candidate_units: int  # gate units answered with a candidate's edit in the skill
    candidate_failures: int  # of those, answered wrong
    insufficient: int  # gate tests that ended for want of evidence
    blind_tests: int  # gate tests that could see fewer families than families_needed
    fewest_seen: int | None  # the smallest number of families a gate test could see
    gate_families: int  # families in the gate's pools (diagnosis and validation)
    families_needed: int | None  # the fewest won families at which the gate accepts
    judge_verdicts: int  # diagnoses decided by the judge model
    contradicted: int  # of those, naming a cause the log contradicts
    # failed gate units whose question the base skill also answered (the log holds its answer),
    # and of those, the ones whose wrong answer is that same answer
    compared_failures: int = 0
    unchanged_failures: int = 0


@dataclass(frozen=True)
class Explanation:
    reason: Reason
    detail: str


def explain(e: TypeEvidence) -> tuple[Explanation, ...]:
    """Every reason whose test fires on `e`, in the order of the module docstring."""
    found = [
        _evolver(e),
        _agent(e),
        _gate(e),
        _judge(e),
    ]
    return tuple(x for x in found if x is not None)


def _evolver(e: TypeEvidence) -> Explanation | None:
    if e.evolver_replies == 0 or e.usable_replies > 0:
        return None
    return Explanation(
        Reason.EVOLVER_NOTHING_USABLE,
        f"{e.evolver_replies} evolver repl{'y' if e.evolver_replies == 1 else 'ies'}, "
        "none with a usable edit",
    )


def _agent(e: TypeEvidence) -> Explanation | None:
    if e.candidate_units == 0 or 2 * e.candidate_failures < e.candidate_units:
        return None
    failed = (
        f"with the edited skill the agent still failed {e.candidate_failures} of "
        f"{e.candidate_units} gate units over {e.gated} candidate(s)"
    )
    if e.compared_failures == 0:
        return Explanation(
            Reason.AGENT_IGNORED_RULE,
            f"{failed} (no base answers to compare: an ignored or a wrong rule, the gate runs' "
            "replies show which)",
        )
    moved = e.compared_failures - e.unchanged_failures
    compared = f"{moved} of {e.compared_failures} wrong answers differ from the base skill's"
    if 2 * e.unchanged_failures >= e.compared_failures:
        return Explanation(Reason.AGENT_IGNORED_RULE, f"{failed}; only {compared}")
    return Explanation(
        Reason.EVOLVER_WRONG_RULE,
        f"{failed}; {compared}: the agent followed the rule, and the rule was wrong",
    )


def _gate(e: TypeEvidence) -> Explanation | None:
    needed = e.families_needed
    if needed is None or e.gate_families < needed:
        shown = "no number of families" if needed is None else f"{needed} won in a row"
        return Explanation(
            Reason.GATE_LACKED_EVIDENCE,
            f"the gate's pools hold {e.gate_families} families and the gate needs {shown} "
            "to accept: no edit could be accepted",
        )
    if e.blind_tests:
        return Explanation(
            Reason.GATE_LACKED_EVIDENCE,
            f"{e.blind_tests} of {e.gated} gate test(s) could see at most {e.fewest_seen} "
            f"families (the pools' {e.gate_families} less those shown to the evolver) and the "
            f"gate needs {needed} won in a row: they could never accept",
        )
    if e.insufficient == 0:
        return None
    return Explanation(
        Reason.GATE_LACKED_EVIDENCE,
        f"{e.insufficient} of {e.gated} gate test(s) ran out of families before deciding "
        f"(pools: {e.gate_families} families; the gate needs {needed} won in a row)",
    )


def _judge(e: TypeEvidence) -> Explanation | None:
    if e.judge_verdicts == 0 or 2 * e.contradicted < e.judge_verdicts:
        return None
    return Explanation(
        Reason.JUDGE_MIS_TRIAGED,
        f"{e.contradicted} of {e.judge_verdicts} judge verdicts name a cause the log "
        "contradicts (runtime_fault on an answered rollout, missing_context without "
        "context)",
    )
