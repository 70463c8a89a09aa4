"""Curating forked trajectories into training data: trajectory classes, the cost-ordered
verifier cascade's economics, and token-weighted class mixes.

Pure logic, no I/O. app/harness/data/curation.py feeds it from the harness log and
app/harness/data/export_formats.py writes what it chooses.

Trajectory classes (one per branch of a question, docs/curation.md#trajectory-classes):
- PRISTINE: passes, no fault observation, and at most 1.2 x the fewest turns of any passing
  branch of the same question (a short, monotone path);
- RECOVERY: passes after a fault observation (a tool error, a truncated or partial view, a
  provider error), with the fault turn, the diagnostic turns and the remediation turn;
- VERBOSE: passes without a fault but takes more turns than a pristine path may;
- NEGATIVE: fails, with its divergence turn (the first fault, else the first turn whose
  action departs from the reference winner's). Hard negatives only ever go into preference
  data, never into SFT.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

PRISTINE_TURN_FACTOR = 1.2


class TrajectoryClass(StrEnum):
    PRISTINE = "pristine"
    RECOVERY = "recovery"
    VERBOSE = "verbose"
    NEGATIVE = "negative"


SFT_CLASSES = (TrajectoryClass.PRISTINE, TrajectoryClass.RECOVERY)


class Fault(StrEnum):
    """What made an observation a fault: a tool said error, the harness cut the output, the
    tool returned only a partial view (by its own contract), or the provider failed."""

    TOOL_ERROR = "tool_error"
    TRUNCATED = "truncated"
    PROVIDER_ERROR = "provider_error"


@dataclass(frozen=True)
class Turn:
    """One agent turn: the actions it took (tool name + canonical arguments, or the final
    answer) and the faults observed in its results."""

    index: int
    actions: tuple[str, ...]
    faults: tuple[Fault, ...] = ()
    tools: tuple[str, ...] = ()  # tool names called this turn

    @property
    def faulted(self) -> bool:
        return bool(self.faults)


@dataclass(frozen=True)
class BranchTrace:
    branch_index: int
    passed: bool
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Curated:
    """A branch's class and the turns that justify it (None where they do not apply)."""

    branch_index: int
    cls: TrajectoryClass
    turns: int
    fault_turn: int | None = None
    diagnostic_turns: tuple[int, ...] = ()
    remediation_turn: int | None = None
    retried: bool = False  # the remediation re-called the faulted tool (not only answered)
    divergence_turn: int | None = None
    faults: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "class": self.cls.value,
            "turns": self.turns,
            "fault_turn": self.fault_turn,
            "diagnostic_turns": list(self.diagnostic_turns),
            "remediation_turn": self.remediation_turn,
            "retried": self.retried,
            "divergence_turn": self.divergence_turn,
            "faults": list(self.faults),
        }


def classify_question(
    branches: Sequence[BranchTrace], reference: int | None = None
) -> dict[int, Curated]:
    """Every branch of one question, classed. `reference` is the winning branch whose actions
    a negative is compared with (default: the passing branch with the fewest turns, lowest
    index first)."""
    passing = [b for b in branches if b.passed]
    fewest = min((len(b.turns) for b in passing), default=0)
    by_index = {b.branch_index: b for b in branches}
    ref = by_index.get(reference) if reference is not None else None
    if ref is None or not ref.passed:
        ref = min(passing, key=lambda b: (len(b.turns), b.branch_index), default=None)
    return {b.branch_index: classify_branch(b, fewest, ref) for b in branches}


def classify_branch(branch: BranchTrace, fewest: int, reference: BranchTrace | None) -> Curated:
    turns = branch.turns
    faults = tuple(sorted({f.value for t in turns for f in t.faults}))
    first_fault = next((t for t in turns if t.faulted), None)
    if not branch.passed:
        return Curated(
            branch.branch_index,
            TrajectoryClass.NEGATIVE,
            len(turns),
            fault_turn=first_fault.index if first_fault else None,
            divergence_turn=divergence_turn(turns, reference.turns if reference else None),
            faults=faults,
        )
    if first_fault is not None:
        remediation, retried = _remediation(turns, first_fault)
        diagnostic = tuple(
            t.index for t in turns if first_fault.index < t.index < remediation and not t.faulted
        )
        return Curated(
            branch.branch_index,
            TrajectoryClass.RECOVERY,
            len(turns),
            fault_turn=first_fault.index,
            diagnostic_turns=diagnostic,
            remediation_turn=remediation,
            retried=retried,
            faults=faults,
        )
    pristine = len(turns) <= PRISTINE_TURN_FACTOR * fewest + 1e-9
    cls = TrajectoryClass.PRISTINE if pristine else TrajectoryClass.VERBOSE
    return Curated(branch.branch_index, cls, len(turns))


def _remediation(turns: Sequence[Turn], fault: Turn) -> tuple[int, bool]:
    """The first later turn that calls a faulted tool again and gets a clean result (a retry
    with a fix); else the final turn, where the branch went on to its passing answer."""
    faulted_tools = set(fault.tools)
    for t in turns:
        if t.index > fault.index and not t.faulted and faulted_tools & set(t.tools):
            return t.index, True
    return turns[-1].index, False


def divergence_turn(turns: Sequence[Turn], reference: Sequence[Turn] | None) -> int | None:
    """The first fault; else the first turn whose actions differ from the reference's at the
    same position; else (same actions throughout) the negative's last turn, where its answer
    went wrong. None for a branch without turns."""
    if not turns:
        return None
    fault = next((t.index for t in turns if t.faulted), None)
    if fault is not None:
        return fault
    if reference:
        for mine, theirs in zip(turns, reference, strict=False):
            if mine.actions != theirs.actions:
                return mine.index
    return turns[-1].index


def step_labels(n_steps: int, divergence: int | None) -> list[bool]:
    """Stepwise supervision labels: true before the divergence turn, false from it on (all
    true without a divergence)."""
    cut = n_steps if divergence is None else max(0, min(divergence, n_steps))
    return [i < cut for i in range(n_steps)]


# -- the verifier cascade ------------------------------------------------------------------------
@dataclass(frozen=True)
class Stage:
    """One verifier stage: its mean cost per trajectory entering it and its pass rate."""

    name: str
    cost: float
    pass_rate: float


@dataclass(frozen=True)
class CascadeEconomics:
    yield_: float  # Y = prod p_i
    cost_per_attempt: float  # c1 + p1 c2 + p1 p2 c3 + ...
    cost_every_stage: float  # sum c_i: every verifier on every trajectory
    cost_per_accepted: float | None  # C_attempt / Y; None when nothing passes

    @property
    def ratio(self) -> float | None:
        """Cascade over run-every-stage cost (None when running everything costs nothing)."""
        return self.cost_per_attempt / self.cost_every_stage if self.cost_every_stage else None


def cascade_economics(stages: Sequence[Stage]) -> CascadeEconomics:
    """Y, C_attempt and C_attempt / Y of stages in the order given (the cascade's order)."""
    reach = 1.0
    parts = []
    for s in stages:
        parts.append(reach * s.cost)
        reach *= s.pass_rate
    attempt = math.fsum(parts)
    return CascadeEconomics(
        yield_=reach,
        cost_per_attempt=attempt,
        cost_every_stage=math.fsum(s.cost for s in stages),
        cost_per_accepted=attempt / reach if reach > 0 else None,
    )


def cascade_order(costs: Mapping[str, float], declared: Sequence[str]) -> list[str]:
    """Verifiers by mean cost, cheapest first; ties keep the declared order."""
    position = {name: i for i, name in enumerate(declared)}
    return sorted(declared, key=lambda n: (costs.get(n, 0.0), position[n]))


# -- token-weighted mixes ------------------------------------------------------------------------
def token_shares(counts: Mapping[str, float], mean_tokens: Mapping[str, float]) -> dict[str, float]:
    """Each class's share of all tokens, for `counts` trajectories of `mean_tokens` each."""
    tokens = {c: counts[c] * mean_tokens[c] for c in counts}
    total = math.fsum(tokens.values())
    return {c: (t / total if total else 0.0) for c, t in tokens.items()}


@dataclass(frozen=True)
class MixItem:
    key: str  # a record's id, unique
    cls: str
    tokens: int


@dataclass(frozen=True)
class MixResult:
    chosen: tuple[MixItem, ...]
    requested: dict[str, float]  # normalised over the mixed classes
    realised: dict[str, float]
    available: dict[str, int]  # units (tokens or records) per class before down-sampling
    used: dict[str, int]
    binding: str  # the class kept whole: it limits the size of the mix

    @property
    def max_error_pp(self) -> float:
        return max(
            (abs(self.realised[c] - self.requested[c]) * 100 for c in self.requested), default=0.0
        )


class MixShortfall(ValueError):
    """A mix a class cannot fill; the message names the class and by how much it is short."""


def mix(
    items: Sequence[MixItem],
    shares: Mapping[str, float],
    *,
    by_tokens: bool = True,
    seed: int = 0,
    total: int | None = None,
) -> MixResult:
    """Down-sample classes so that their shares (of tokens, or of records) match `shares`
    (normalised over the classes named). Without `total` the mix is as large as the scarcest
    class allows (that class is kept whole); with it, every class must hold its share of
    `total` or the mix is refused with MixShortfall naming the shortfall. Which records go is
    a seeded shuffle, so the same seed gives the same files."""
    wanted = {c: s for c, s in shares.items() if s > 0}
    norm = math.fsum(wanted.values())
    if not wanted or norm <= 0:
        raise MixShortfall("the mix names no class with a share above 0")
    requested = {c: s / norm for c, s in wanted.items()}

    def units(it: MixItem) -> int:
        return it.tokens if by_tokens else 1

    pools = {c: [it for it in items if it.cls == c] for c in requested}
    available = {c: sum(units(it) for it in pool) for c, pool in pools.items()}
    empty = [c for c, a in available.items() if a <= 0]
    if empty:
        raise MixShortfall(
            f"class {empty[0]!r} has no trajectories for its share {shares[empty[0]]}"
        )
    binding = min(requested, key=lambda c: (available[c] / requested[c], c))
    size = available[binding] / requested[binding] if total is None else float(total)
    if total is not None:
        for c in sorted(requested):
            need = requested[c] * size
            if available[c] + 1e-9 < need:
                unit = "tokens" if by_tokens else "records"
                raise MixShortfall(
                    f"class {c!r} cannot fill its share {requested[c]:.4f} of {total} {unit}: "
                    f"needs {math.ceil(need)}, has {available[c]} (short {math.ceil(need - available[c])})"
                )
    rng = random.Random(seed)
    chosen: list[MixItem] = []
    used: dict[str, int] = {}
    for c in sorted(requested):
        pool = sorted(pools[c], key=lambda it: it.key)
        rng.shuffle(pool)
        target = requested[c] * size
        got = 0
        for it in pool:
            # take a record while it brings the class closer to its target
            if abs(got + units(it) - target) <= abs(got - target):
                chosen.append(it)
                got += units(it)
        used[c] = got
    grand = sum(used.values())
    realised = {c: (used[c] / grand if grand else 0.0) for c in requested}
    return MixResult(tuple(chosen), requested, realised, available, used, binding)


def parse_mix(text: str) -> dict[str, float]:
    """`pristine=0.65,recovery=0.25` as shares; ValueError naming the bad item."""
    out: dict[str, float] = {}
    known = {c.value for c in TrajectoryClass}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or name not in known or not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(
                f"{item!r}: expected CLASS=SHARE with CLASS one of {', '.join(sorted(known))} "
                "and SHARE within [0, 1]"
            )
        out[name] = value
    if not out:
        raise ValueError("names no class")
    if math.fsum(out.values()) > 1 + 1e-9:
        raise ValueError(f"shares add up to {math.fsum(out.values()):.4f}, more than 1")
    return out
