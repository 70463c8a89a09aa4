"""Why a task type did not learn, from counts the log holds (app/learning_report.py reads them).

Four reasons, each a measurable test on one task type's evidence of a training run:

- `evolver_nothing_usable`: the evolver was asked and no reply held a usable edit (every
  reply unparseable, empty or changing nothing);
- `agent_ignored_rule`: candidates with the evolver's edit in the skill the agent was sent
  were gated, and of the gate units the edit addresses that the base skill got wrong (units
  whose question names a word of the added rule that singles out few of the task type's
  questions, `rule_terms`; every failure for a rule that names none), the agent still answered
  at least half wrong, no fewer than it fixed of the failures the edit does not address (when
  there are such: a rule that moved its own units more than the rest was followed), and at
  least half of those wrong answers are the very answers it gave the same questions without
  the edit (the base skill's, where the log holds them): the rule did not move the answer.
  Units the base skill already got right, and failures a targeted rule does not speak to, are
  no evidence about the agent following it;
- `evolver_wrong_rule`: the same failures, but most wrong answers differ from the base skill's:
  the agent followed the rule and the rule was wrong (as "team-name-username" for a
  `team-` + surname + initial convention). Without base answers to compare, the failures count
  as `agent_ignored_rule` and its detail says the two cannot be told apart;
- `gate_lacked_evidence`: the gate's pools hold fewer families than the gate needs to accept
  at the effect its tests observed (`gate_families_at_effect`, core/benchmark_checks.py, from
  the tests' summed W and L; all won, `gate_min_families`, when no positive effect was seen),
  or a gate test could see fewer
  (its horizon: the pools less the families shown to the evolver), or it ran out of families
  before deciding (stop reason `insufficient_evidence`);
- `judge_mis_triaged`: at least half the judge's verdicts that stand name a cause the log
  contradicts: a `runtime_fault` on a rollout that ended with an answer (no error, turns left;
  with a non-empty answer core/evolution/triage.py overrules it, so only an empty one stands),
  or `missing_context` on a question that has no context. Those failures never reach the
  evolver.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache


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
    candidate_units: int  # gate units the edit addresses that the base skill got wrong
    candidate_failures: int  # of those, still wrong with the edit
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
    # gate units the base skill got wrong that a targeted edit does not address (none for a
    # rule that names nothing particular), and of those, the ones right with the edit
    control_units: int = 0
    control_fixed: int = 0
    # the gate tests' families with d > 0 / d < 0 and all families seen (the observed effect
    # behind families_needed; 0 when no test saw a family)
    effect_wins: int = 0
    effect_losses: int = 0
    effect_families: int = 0
    # the sum over those families of d, their mean unit difference (core/evolution/gate.py
    # `family_mean`): over effect_families, the mean effect a family of several units showed
    effect_sum: float = 0.0


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


_WORD = re.compile(r"[a-z][a-z0-9]*(?:[-'][a-z0-9]+)*")


@lru_cache(maxsize=1 << 14)  # a report reads each question's words once per gate test
def words(text: str) -> frozenset[str]:
    """Lower-case words of `text` (inner hyphens and apostrophes kept; bare numbers dropped)."""
    return frozenset(_WORD.findall(text.lower()))


def rule_terms(added: str, questions: Sequence[str]) -> frozenset[str]:
    """The words of an edit's added text that single out some of a task type's `questions`:
    found in at least one and in fewer than half of them. "In tagging cases marked leap-day,
    round up" singles out the questions marked leap-day; a word every question shares (the
    task type's name, "case") names no particular failure, and "double-check the arithmetic"
    names none at all (an empty set: the rule speaks to every question)."""
    counts: dict[str, int] = {}
    for q in questions:
        for w in words(q):
            counts[w] = counts.get(w, 0) + 1
    return frozenset(w for w in words(added) if 0 < 2 * counts.get(w, 0) < len(questions))


def addresses(terms: frozenset[str], question: str) -> bool:
    """Whether a rule with `terms` (`rule_terms`) speaks to `question`: it names a word of it,
    or names nothing particular."""
    return not terms or not terms.isdisjoint(words(question))


def _agent(e: TypeEvidence) -> Explanation | None:
    if e.candidate_units == 0 or 2 * e.candidate_failures < e.candidate_units:
        return None
    fixed = e.candidate_units - e.candidate_failures
    if e.control_units and fixed * e.control_units > e.control_fixed * e.candidate_units:
        return None  # the rule moved its own units more than the others: it was followed
    failed = (
        f"with the edited skill the agent still failed {e.candidate_failures} of the "
        f"{e.candidate_units} gate units it failed before and the edit addresses, over "
        f"{e.gated} candidate(s)"
    )
    if e.control_units:
        failed += (
            f" (it fixed {fixed} of them and {e.control_fixed} of {e.control_units} failures "
            "the edit does not address)"
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


def _needs(e: TypeEvidence) -> str:
    """What the gate needs to accept, and on what basis (families_needed)."""
    if e.families_needed is None:
        return "no number of families"
    if e.effect_families and e.effect_wins > e.effect_losses:
        mean = e.effect_sum / e.effect_families
        return (
            f"{e.families_needed} at the effect its tests saw (W={e.effect_wins} "
            f"L={e.effect_losses} over {e.effect_families} families, mean d {mean:+.3f})"
        )
    return f"{e.families_needed} won in a row"


def _gate(e: TypeEvidence) -> Explanation | None:
    needed = e.families_needed
    if needed is None or e.gate_families < needed:
        shown = _needs(e)
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
            f"gate needs {_needs(e)}: they could never accept",
        )
    if e.insufficient == 0:
        return None
    return Explanation(
        Reason.GATE_LACKED_EVIDENCE,
        f"{e.insufficient} of {e.gated} gate test(s) ran out of families before deciding "
        f"(pools: {e.gate_families} families; the gate needs {_needs(e)})",
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
