"""Acceptance rules: whether a candidate edit is kept, decided from paired family outcomes.

One small interface, `AcceptanceRule`, driven ask/tell so that a rule is pure data in, decision
out and never waits on I/O:

    rule = make_rule(strategy, RuleSetup(stage1, stage2, params, seed=...))
    while families := rule.request():        # the next families to evaluate
        used = rule.observe(evaluate(families))  # (family, pairs) back, in request order
    verdict = rule.verdict()                 # the GateDecision the gate records

`evaluate` is the caller's: model calls in app/harness/training/validate.py (`Validator.gate_one`), a table
of simulated outcomes in a bench (`run_rule`). A pair is (unit_id, baseline correct, candidate
correct), one per unit of the family, in the family's unit order. `observe` returns the families
the rule actually used: a sequential rule that stops mid-request leaves the rest of that request
evaluated but unused (not evidence, and not counted as the candidate's results).

Requests are chunks of consecutive ladder families holding at least `RuleSetup.chunk` units, so
which units get evaluated never depends on how many model calls run at once.

The rules (config `[gate] strategy`, `AcceptanceStrategy`):
- "eprocess" (default): the sequential gate of core/evolution/gate.py over stage 1, then stage 2
  only if stage 1 did not settle it; a provisional accept reserves stage 2 for its probation;
- "mcnemar": a fixed one-sided exact McNemar test at α = 1/e_confirm on the family outcomes of
  the whole ladder;
- "minibatch": GEPA's rule: k units (one seeded pick from each of the ladder's first k families),
  accept if the candidate gets strictly more right than the baseline;
- "accept_all": accept without evaluating anything;
- "strict_improvement": SkillOpt's and Reef's rule: the candidate's mean over every unit of the
  ladder (stage 1 and 2, the whole validation pool) strictly above the baseline's;
- "se_gate": cap-evolve's rule: the mean paired unit difference Δ over the whole ladder above
  `SE_GATE_K` (2) standard errors of it.
The last five exist to be compared with the first (bench/acceptance.py); they drop units without
a verdict on a side, as their own implementations do.

A new rule is one class with `request`, `observe` and `verdict`, and an entry in `RULES`. The
interface leaves room for what a rule may need next: it receives unit-level pairs and computes
its own per-family outcome (so a bounded per-family outcome is a change inside one rule), the
ladder order is the caller's (`RuleSetup.stage1`/`stage2`, so a relevance-ordered ladder changes
nothing here), and a test that goes on after the gate travels in `RuleVerdict.reserved` and
`GateDecision.continuation` (core/evolution/gate.py `ProbationTest`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from core.evolution.gate import (
    OUTCOME_NAMES,
    AcceptanceStrategy,
    EvidenceRow,
    GateAction,
    GateDecision,
    GateEndedBy,
    GateParams,
    Pair,
    SequentialGate,
    family_outcome,
)
from core.stats import mcnemar_exact

SE_GATE_K = 2.0  # cap-evolve's k in Δ > k·SE

LadderFamily = tuple[str, tuple[str, ...]]  # (family id, unit ids), as a gate ladder holds them
FamilyPairs = tuple[str, Sequence[Pair]]  # a family and its units' paired outcomes

GATE_CHUNK = 8  # units per request, fixed, so the evaluated set never depends on concurrency


def chunks(families: Sequence[LadderFamily], size: int = GATE_CHUNK) -> list[list[LadderFamily]]:
    """Consecutive families, each chunk holding at least `size` units (the last may hold
    fewer)."""
    out: list[list[LadderFamily]] = []
    current: list[LadderFamily] = []
    units = 0
    for fam in families:
        current.append(fam)
        units += len(fam[1])
        if units >= size:
            out.append(current)
            current, units = [], 0
    if current:
        out.append(current)
    return out


@dataclass(frozen=True)
class RuleSetup:
    """What a rule is given before any outcome: the ladder (families in the order to look at
    them, never chosen from outcomes), the gate's parameters and the seed of any random pick."""

    stage1: tuple[LadderFamily, ...]
    stage2: tuple[LadderFamily, ...] = ()
    params: GateParams = field(default_factory=GateParams)
    seed: str = ""  # the harness passes the gate run id
    minibatch_k: int = 3
    chunk: int = GATE_CHUNK
    # the task type's checker gives scores, not only pass/fail (core/checkers.py): known from
    # the benchmark before any outcome, it keeps the test at Ville's level (gate.family_mean)
    scored: bool = False

    @property
    def families(self) -> tuple[LadderFamily, ...]:
        return (*self.stage1, *self.stage2)

    @property
    def singletons(self) -> bool:
        """Every family one unit and every outcome pass/fail: the exact level applies."""
        return not self.scored and all(len(ids) == 1 for _, ids in self.families)


@dataclass(frozen=True)
class RuleVerdict:
    decision: GateDecision
    reserved: tuple[LadderFamily, ...] = ()  # families a provisional accept leaves to probation


class AcceptanceRule(Protocol):
    """One acceptance rule, driven ask/tell (see the module docstring)."""

    def request(self) -> tuple[LadderFamily, ...]:
        """The families to evaluate next; the same until `observe` answers it; () once the
        rule needs nothing more."""
        ...

    def observe(self, observed: Sequence[FamilyPairs]) -> tuple[FamilyPairs, ...]:
        """Fold in the outcomes of the current request (its families, in its order); return
        those the rule used."""
        ...

    def verdict(self) -> RuleVerdict:
        """The decision, once `request()` is empty."""
        ...


class _Requests:
    """The requests a rule will make, in order, and the check that each answer matches."""

    def __init__(self, requests: Sequence[Sequence[LadderFamily]]) -> None:
        self._queue = deque(tuple(r) for r in requests if r)
        self._pending: tuple[LadderFamily, ...] = ()

    def next(self) -> tuple[LadderFamily, ...]:
        if not self._pending and self._queue:
            self._pending = self._queue.popleft()
        return self._pending

    @property
    def remaining(self) -> bool:
        return bool(self._pending or self._queue)

    def answer(self, observed: Sequence[FamilyPairs]) -> Sequence[FamilyPairs]:
        """`observed` if it answers the pending request unit for unit; else a ValueError (an
        outcome fed to the wrong family would be evidence about another question)."""
        asked = [(f, ids) for f, ids in self._pending]
        got = [(f, tuple(u for u, _, _ in pairs)) for f, pairs in observed]
        if not asked or got != asked:
            raise ValueError(f"outcomes {got!r} do not answer the request {asked!r}")
        self._pending = ()
        return observed


class EProcessRule:
    """The sequential gate: stage 1, then stage 2 unless stage 1 settled it."""

    def __init__(self, setup: RuleSetup) -> None:
        self.setup = setup
        self.gate = SequentialGate(
            setup.params,
            horizon=len(setup.families),
            stage1=len(setup.stage1),
            singletons=setup.singletons,
        )
        # Chunked per stage: a provisional accept at the end of stage 1 leaves stage 2
        # unevaluated for its probation.
        self._requests = _Requests(
            [*chunks(setup.stage1, setup.chunk), *chunks(setup.stage2, setup.chunk)]
        )

    def request(self) -> tuple[LadderFamily, ...]:
        return () if self.gate.done else self._requests.next()

    def observe(self, observed: Sequence[FamilyPairs]) -> tuple[FamilyPairs, ...]:
        used: list[FamilyPairs] = []
        for family, pairs in self._requests.answer(observed):
            self.gate.observe_family(family, pairs)
            used.append((family, pairs))
            if self.gate.done:
                break
        return tuple(used)

    def verdict(self) -> RuleVerdict:
        if not self.gate.done and self._requests.remaining:
            raise RuntimeError("verdict() before the rule's requests were answered")
        decision = self.gate.finish(exhausted=not self.gate.done)
        decision = replace(decision, strategy=AcceptanceStrategy.EPROCESS)
        provisional = decision.action == GateAction.ACCEPT_PROVISIONAL
        return RuleVerdict(decision, self.setup.stage2 if provisional else ())


class _OneShot:
    """A rule that asks for a fixed set of families, then decides once on all of them."""

    def __init__(self, requests: Sequence[Sequence[LadderFamily]]) -> None:
        self._requests = _Requests(requests)
        self.observed: list[FamilyPairs] = []

    def request(self) -> tuple[LadderFamily, ...]:
        return self._requests.next()

    def observe(self, observed: Sequence[FamilyPairs]) -> tuple[FamilyPairs, ...]:
        used = tuple(self._requests.answer(observed))
        self.observed += used
        return used

    def _check_done(self) -> None:
        if self._requests.remaining:
            raise RuntimeError("verdict() before the rule's requests were answered")


class McNemarRule(_OneShot):
    """A fixed exact one-sided McNemar test on the whole ladder's family outcomes."""

    def __init__(self, setup: RuleSetup) -> None:
        super().__init__(chunks(setup.families, setup.chunk))
        self.alpha = setup.params.alpha

    def verdict(self) -> RuleVerdict:
        self._check_done()
        outcomes = [family_outcome(pairs) for _, pairs in self.observed]
        p_value = mcnemar_exact(outcomes.count(1), outcomes.count(-1), "greater")
        return RuleVerdict(
            fixed_decision(
                AcceptanceStrategy.MCNEMAR,
                p_value <= self.alpha,
                self.observed,
                e_value=1.0 / max(p_value, 1e-300),
                reason=f"p={p_value:.4g}",
            )
        )


class MinibatchRule(_OneShot):
    """GEPA's rule: k units from k different families, strictly more right than the baseline.

    GEPA samples k examples at random; here the ladder's family order is already a seeded
    shuffle, and the member of each family is a pick seeded by `RuleSetup.seed`."""

    def __init__(self, setup: RuleSetup) -> None:
        pick = random.Random(setup.seed)
        units = [(f, (pick.choice(ids),)) for f, ids in setup.families][: setup.minibatch_k]
        super().__init__([units])

    def verdict(self) -> RuleVerdict:
        self._check_done()
        # units without a verdict on either side count for neither (core/evolution/gate.py)
        kept = [(b, c) for _, pairs in self.observed for _, b, c in pairs if None not in (b, c)]
        base = sum(float(b or 0) for b, _ in kept)
        cand = sum(float(c or 0) for _, c in kept)
        if all(isinstance(x, bool) for pair in kept for x in pair):  # counts, as always
            base, cand = int(base), int(cand)
        return RuleVerdict(
            fixed_decision(
                AcceptanceStrategy.MINIBATCH,
                cand > base,
                self.observed,
                e_value=float(cand - base),
                reason=f"{cand} vs {base} right",
            )
        )


def _scored_pairs(observed: Sequence[FamilyPairs]) -> list[tuple[float, float]]:
    """(baseline, candidate) per unit with a verdict on both sides, as floats in [0, 1]."""
    return [
        (float(b), float(c))
        for _, pairs in observed
        for _, b, c in pairs
        if b is not None and c is not None
    ]


class StrictImprovementRule(_OneShot):
    """SkillOpt's and Reef's rule: every unit of the ladder, accept on a strictly higher mean."""

    def __init__(self, setup: RuleSetup) -> None:
        super().__init__(chunks(setup.families, setup.chunk))

    def verdict(self) -> RuleVerdict:
        self._check_done()
        pairs = _scored_pairs(self.observed)
        base = sum(b for b, _ in pairs) / len(pairs) if pairs else 0.0
        cand = sum(c for _, c in pairs) / len(pairs) if pairs else 0.0
        return RuleVerdict(
            fixed_decision(
                AcceptanceStrategy.STRICT_IMPROVEMENT,
                cand > base,
                self.observed,
                e_value=cand - base,
                reason=f"mean {cand:.4f} vs {base:.4f} over {len(pairs)} units",
            )
        )


class SEGateRule(_OneShot):
    """cap-evolve's rule: every unit of the ladder, accept when Δ > k·SE (k = `SE_GATE_K`)."""

    def __init__(self, setup: RuleSetup) -> None:
        super().__init__(chunks(setup.families, setup.chunk))

    def verdict(self) -> RuleVerdict:
        self._check_done()
        diffs = [c - b for b, c in _scored_pairs(self.observed)]
        n = len(diffs)
        delta = sum(diffs) / n if n else 0.0
        var = sum((x - delta) ** 2 for x in diffs) / (n - 1) if n > 1 else 0.0
        se = (var / n) ** 0.5 if n else 0.0
        return RuleVerdict(
            fixed_decision(
                AcceptanceStrategy.SE_GATE,
                n > 1 and delta > 0 and delta > SE_GATE_K * se,
                self.observed,
                e_value=delta / se if se > 0 else 0.0,
                reason=f"delta {delta:.4f}, SE {se:.4f}, n {n}",
            )
        )


class AcceptAllRule(_OneShot):
    """Accept without evaluating anything (the baseline every other rule is compared with)."""

    def __init__(self, setup: RuleSetup) -> None:
        super().__init__([])

    def verdict(self) -> RuleVerdict:
        return RuleVerdict(
            fixed_decision(AcceptanceStrategy.ACCEPT_ALL, True, [], 1.0, "accept_all")
        )


RULES: Mapping[AcceptanceStrategy, Callable[[RuleSetup], AcceptanceRule]] = MappingProxyType(
    {
        AcceptanceStrategy.EPROCESS: EProcessRule,
        AcceptanceStrategy.MCNEMAR: McNemarRule,
        AcceptanceStrategy.MINIBATCH: MinibatchRule,
        AcceptanceStrategy.ACCEPT_ALL: AcceptAllRule,
        AcceptanceStrategy.STRICT_IMPROVEMENT: StrictImprovementRule,
        AcceptanceStrategy.SE_GATE: SEGateRule,
    }
)


def make_rule(strategy: AcceptanceStrategy | str, setup: RuleSetup) -> AcceptanceRule:
    """The rule `strategy` names (a ValueError names the unknown strategy)."""
    return RULES[AcceptanceStrategy(strategy)](setup)


def run_rule(
    rule: AcceptanceRule, outcomes: Callable[[LadderFamily], Sequence[Pair]]
) -> RuleVerdict:
    """Drive `rule` to its verdict with `outcomes(family)` giving each requested family's pairs
    (a bench or a test: no model calls)."""
    while families := rule.request():
        rule.observe([(family[0], outcomes(family)) for family in families])
    return rule.verdict()


def fixed_decision(
    strategy: AcceptanceStrategy,
    accepted: bool,
    observed: Sequence[FamilyPairs],
    e_value: float,
    reason: str,
) -> GateDecision:
    """A one-shot rule's decision, with the same per-unit evidence rows as the e-process."""
    wins = losses = 0
    evidence: list[EvidenceRow] = []
    for n, (family, pairs) in enumerate(observed, start=1):
        g = family_outcome(pairs)
        wins, losses = wins + (g == 1), losses + (g == -1)
        for unit_id, base, cand in pairs:
            evidence.append(
                EvidenceRow(
                    unit_id=unit_id,
                    family=family,
                    base=base,
                    cand=cand,
                    outcome=OUTCOME_NAMES[g],
                    e_win=e_value,
                    e_harm=1.0,
                    W=wins,
                    L=losses,
                    n=n,
                )
            )
    n = len(observed)
    return GateDecision(
        action=GateAction.ACCEPT if accepted else GateAction.REJECT,
        W=wins,
        L=losses,
        n_used=n,
        e_value=e_value,
        e_harm=1.0,
        stop_reason=f"{strategy}: {reason}",
        delta_hat=(wins - losses) / n if n else 0.0,
        delta_shrunk=0.0,
        evidence=tuple(evidence),
        ended_by=GateEndedBy.EXHAUSTED,
        threshold=0.0,
        horizon=n,
        units_used=len(evidence),
        strategy=strategy,
    )
