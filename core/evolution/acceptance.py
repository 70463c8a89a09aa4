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
which units get evaluated never depends on how many model calls run at once. A ladder with gate
draws (`RuleSetup.redraws`) is chunked per draw round, and a rule asks for a draw only once an
earlier round of its question had its two answers differ (`Redraws`): the eprocess rule counts
a draw it did not ask for as a tie in its place, the others leave it out.

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

import hashlib
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
    family_mean,
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


def draw_coin(*keys: object) -> float:
    """A test's coin (`RuleSetup.coin`): a uniform number in [0, 1) from `keys` by SHA-256. The
    harness keys it on the run's seed and the test's id, both fixed before any outcome, so the
    coin is independent of the answers and a resumed run draws the same one."""
    digest = hashlib.sha256("\x1f".join(map(str, keys)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


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
    # a gate draw's family -> (the family whose question it draws again, its round r >= 1).
    # Such a draw is evaluated only if an earlier round of that question had its two answers
    # differ (d != 0); otherwise "eprocess" counts it as a tie, unevaluated (`EProcessRule`),
    # and the one-shot rules leave it out.
    redraws: Mapping[str, tuple[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    # the eprocess rule's coin for its final look (`GateParams.final_look_coin`): a uniform
    # number in [0, 1) drawn before any outcome (the harness: `draw_coin`); None, no coin
    coin: float | None = None

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

    def narrow(self, families: tuple[LadderFamily, ...]) -> None:
        """Ask for only these of the pending request's families (the rest were settled
        without an answer)."""
        self._pending = families

    def answer(self, observed: Sequence[FamilyPairs]) -> Sequence[FamilyPairs]:
        """`observed` if it answers the pending request unit for unit; else a ValueError (an
        outcome fed to the wrong family would be evidence about another question)."""
        asked = [(f, ids) for f, ids in self._pending]
        got = [(f, tuple(u for u, _, _ in pairs)) for f, pairs in observed]
        if not asked or got != asked:
            raise ValueError(f"outcomes {got!r} do not answer the request {asked!r}")
        self._pending = ()
        return observed


class Redraws:
    """Which of a ladder's gate draws a rule asks for (`RuleSetup.redraws`): a draw only once
    an earlier round of its question had its two answers differ. Chunks never mix rounds, so
    every earlier round of a question is in before its next draw is asked for."""

    def __init__(self, setup: RuleSetup) -> None:
        self.setup = setup
        self.changed: set[str] = set()  # questions (round-0 families) with a discordant pair

    def chunks(self, families: Sequence[LadderFamily]) -> list[list[LadderFamily]]:
        """`chunks` of each run of consecutive families of one round."""
        out: list[list[LadderFamily]] = []
        run: list[LadderFamily] = []
        for fam in families:
            if run and self._round(run[-1][0]) != self._round(fam[0]):
                out += chunks(run, self.setup.chunk)
                run = []
            run.append(fam)
        return out + chunks(run, self.setup.chunk)

    def _round(self, family: str) -> int:
        return self.setup.redraws[family][1] if family in self.setup.redraws else 0

    def _question(self, family: str) -> str:
        return self.setup.redraws[family][0] if family in self.setup.redraws else family

    def wanted(self, family: str) -> bool:
        return family not in self.setup.redraws or self._question(family) in self.changed

    def note(self, family: str, pairs: Sequence[Pair]) -> None:
        if family_mean(pairs) != 0:  # discordant: who won it does not matter
            self.changed.add(self._question(family))


class EProcessRule:
    """The sequential gate: stage 1, then stage 2 unless stage 1 settled it.

    With `RuleSetup.redraws`, a draw whose question never had its two answers differ in an
    earlier round is counted as a tie without being evaluated (`skipped`). Whether a draw is
    evaluated depends on which earlier pairs were discordant, never on who won them, so under
    the gate's null the signs of the discordant pairs are still independent coins each a win
    with probability at most ½ given the whole pattern of discordance: the exact level and the
    final look hold as for a fixed ladder (bench/gate_validity.py case 8b measures it)."""

    def __init__(self, setup: RuleSetup) -> None:
        self.setup = setup
        self.gate = SequentialGate(
            setup.params,
            horizon=len(setup.families),
            stage1=len(setup.stage1),
            singletons=setup.singletons,
            coin=setup.coin,
        )
        # Chunked per stage (a provisional accept at the end of stage 1 leaves stage 2
        # unevaluated for its probation) and per draw round.
        self._redraws = Redraws(setup)
        self._requests = _Requests(
            [*self._redraws.chunks(setup.stage1), *self._redraws.chunks(setup.stage2)]
        )
        self.skipped: list[str] = []  # draws counted as ties, unevaluated
        self._chunk: tuple[LadderFamily, ...] = ()  # the request being answered, whole

    def request(self) -> tuple[LadderFamily, ...]:
        while not self.gate.done and (pending := self._requests.next()):
            self._chunk = pending
            asked = tuple(f for f in pending if self._redraws.wanted(f[0]))
            self._requests.narrow(asked)
            if asked:
                return asked
            self._fold({})  # nothing to ask: every family of the chunk is a tie
        return ()

    def observe(self, observed: Sequence[FamilyPairs]) -> tuple[FamilyPairs, ...]:
        return self._fold(dict(self._requests.answer(observed)))

    def _fold(self, answered: Mapping[str, Sequence[Pair]]) -> tuple[FamilyPairs, ...]:
        """The current chunk in ladder order: each family asked for is observed, each draw
        not asked for counted as a tie in its place; up to the gate's stop."""
        used: list[FamilyPairs] = []
        for family, _ in self._chunk:
            if self.gate.done:
                break
            if family not in answered:
                self.gate.skip(family)
                self.skipped.append(family)
                continue
            self.gate.observe_family(family, answered[family])
            used.append((family, answered[family]))
            self._redraws.note(family, answered[family])
        self._chunk = ()
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

    def __init__(self, requests: Sequence[Sequence[LadderFamily]], redraws: Redraws) -> None:
        self._requests = _Requests(requests)
        self._redraws = redraws
        self.observed: list[FamilyPairs] = []

    def request(self) -> tuple[LadderFamily, ...]:
        """The next families, draws of questions that never changed left out (not observed,
        so they count for nothing)."""
        while pending := self._requests.next():
            asked = tuple(f for f in pending if self._redraws.wanted(f[0]))
            self._requests.narrow(asked)
            if asked:
                return asked
        return ()

    def observe(self, observed: Sequence[FamilyPairs]) -> tuple[FamilyPairs, ...]:
        used = tuple(self._requests.answer(observed))
        for family, pairs in used:
            self._redraws.note(family, pairs)
        self.observed += used
        return used

    def _check_done(self) -> None:
        if self._requests.remaining:
            raise RuntimeError("verdict() before the rule's requests were answered")


class McNemarRule(_OneShot):
    """A fixed exact one-sided McNemar test on the whole ladder's family outcomes."""

    def __init__(self, setup: RuleSetup) -> None:
        redraws = Redraws(setup)
        super().__init__(redraws.chunks(setup.families), redraws)
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
        super().__init__([units], Redraws(setup))

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
        redraws = Redraws(setup)
        super().__init__(redraws.chunks(setup.families), redraws)

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
        redraws = Redraws(setup)
        super().__init__(redraws.chunks(setup.families), redraws)

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
        super().__init__([], Redraws(setup))

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
