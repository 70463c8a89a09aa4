"""The sequential gate on skill edits, pair counting and the probation verdict (DESIGN §6.6).

Pure logic: callers feed (unit_id, baseline correct, candidate correct) in ladder order and get
a decision. Only discordant units move the evidence:
W = baseline wrong and candidate right (g = +1), L = baseline right and candidate wrong
(g = −1); ties (g = 0) move nothing.

Decisions, checked after every unit, in this order:
- E_win ≥ e_confirm                      -> "accept",  stop_reason "confirmed"
- E_harm ≥ e_rollback                    -> "reject",  stop_reason "harm"
- E_harm ≥ e_futility (when set)         -> "reject",  stop_reason "futility"
  (the evidence leans against an improvement, though not enough to call it harm)
- no accept is reachable any more, even if every remaining unit up to n_max were a W
  (when `curtail`)                       -> "reject",  stop_reason "futility"
At the end (ladder exhausted or n_max units used) without such a stop:
- E_win ≥ e_provisional, W − L ≥ w_net_min and (W − L)/(n + shrink_k) ≥ delta_min
                                         -> "accept_provisional", stop_reason "provisional"
- otherwise                              -> "reject",  stop_reason "insufficient_evidence"
`GateDecision.ended_by` says why the run stopped: "threshold", "curtailed", "n_max" or
"exhausted".

Error control: under "no difference" E_win is a test martingale, so P(ever "accept") ≤
1/e_confirm however often the gate looks. "accept_provisional" has no such guarantee; its
threshold is set (see `bench/gate_efficiency.py`) so that the share of all accepts under "no
difference" stays below the nominal α = 1/e_confirm in simulation, and provisional accepts
still go on probation. The two futility stops only ever reject, so they cannot raise any
false-accept rate. Curtailment changes no decision at all, only how many units are spent: it
fires only when the best case (every remaining unit a W, which maximises E_win, W − L and the
shrunk effect at every later point, for both bets) reaches no accept.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.stats import STRATEGIES, EProcessPair

ACTIONS = ("accept", "accept_provisional", "reject")
STOP_REASONS = ("confirmed", "harm", "futility", "provisional", "insufficient_evidence")
ENDED_BY = ("threshold", "curtailed", "n_max", "exhausted")
_OUTCOME_NAMES = {1: "W", -1: "L", 0: "tie"}


@dataclass(frozen=True)
class GateParams:
    """Thresholds and bet of the gate; validated so a typo in a config fails at load time.

    The defaults (λ = 0.35, e_provisional = 5, e_futility = 1.3, n_max = 60) are tuned with
    `bench/gate_efficiency.py` against a fixed-n one-sided exact McNemar test at α =
    1/e_confirm: about half the units at discordance 0.3 and ~43% fewer at 0.15, with fewer
    false accepts, for 3–7 points less mean power (more at higher discordance). At λ = 0.35,
    e_futility = 1.3 means: give up at an L before any W (E_harm = 1.35), or at three L after
    one W.
    """

    e_confirm: float = 20.0
    e_rollback: float = 10.0
    e_provisional: float = 5.0
    w_net_min: int = 2
    delta_min: float = 0.02
    lambda_dir: float = 0.35
    lambda_strategy: str = "fixed"
    lambda_max: float = 0.5
    shrink_k: int = 10
    n_max: int = 60
    # Early "give up": reject once E_harm reaches this (None: off). e_rollback is checked
    # first, so a crossing of it is always reported as "harm"; but with a low e_futility the
    # run usually stops before E_harm can grow that far, so "futility" means "leans against,
    # not shown to help", never "harm shown".
    e_futility: float | None = 1.3
    # Stop (reject, "futility") as soon as no accept is reachable within n_max; never changes
    # the decision, only saves units.
    curtail: bool = True

    def __post_init__(self) -> None:
        for name in ("lambda_dir", "lambda_max"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        # A threshold below 1 would be crossed before any evidence is seen (wealth starts at 1).
        for name in ("e_confirm", "e_rollback", "e_provisional"):
            value = getattr(self, name)
            if not value >= 1.0:
                raise ValueError(f"{name} must be >= 1, got {value}")
        # E_harm is 1 after a tie, so a futility level of 1 would stop on the first tie.
        if self.e_futility is not None and not self.e_futility > 1.0:
            raise ValueError(f"e_futility must be > 1 or None, got {self.e_futility}")
        if self.n_max < 1:
            raise ValueError(f"n_max must be >= 1, got {self.n_max}")
        if self.shrink_k < 0:
            raise ValueError(f"shrink_k must be >= 0, got {self.shrink_k}")
        if self.lambda_strategy not in STRATEGIES:
            raise ValueError(
                f"lambda_strategy must be one of {STRATEGIES}, got {self.lambda_strategy!r}"
            )

    def new_eprocess(self) -> EProcessPair:
        return EProcessPair(self.lambda_strategy, self.lambda_dir, self.lambda_max)


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided and the evidence behind it (written to the step report)."""

    action: str
    W: int
    L: int
    n_used: int
    e_value: float  # E_win at stop
    e_harm: float
    stop_reason: str
    delta_hat: float  # (W − L)/n, 0 when n = 0
    delta_shrunk: float  # (W − L)/(n + shrink_k): small-n effects pulled toward 0
    evidence: tuple[dict[str, Any], ...] = ()
    ended_by: str = "threshold"

    @property
    def accepted(self) -> bool:
        return self.action != "reject"


def outcome_of(base: bool, cand: bool) -> int:
    """+1 for W (only the candidate right), −1 for L (only the baseline right), 0 for a tie."""
    return int(cand) - int(base)


class SequentialGate:
    """Anytime-valid gate: feed units in ladder order with `observe`, then `finish`."""

    def __init__(self, params: GateParams | None = None) -> None:
        self.params = params or GateParams()
        self._eproc = self.params.new_eprocess()
        self.n = 0
        self.decision: str | None = None
        self.stop_reason: str | None = None
        self.ended_by: str | None = None
        self.evidence: list[dict[str, Any]] = []
        self._seen: set[str] = set()

    @property
    def W(self) -> int:  # the design's name for the count
        return self._eproc.wins

    @property
    def L(self) -> int:
        return self._eproc.losses

    @property
    def e_win(self) -> float:
        return self._eproc.e_win

    @property
    def e_harm(self) -> float:
        return self._eproc.e_harm

    @property
    def done(self) -> bool:
        """True once a threshold was crossed or n_max units were used: stop evaluating."""
        return self.decision is not None or self.n >= self.params.n_max

    def observe(self, unit_id: str, base: bool, cand: bool) -> str | None:
        """Fold in one unit; return "accept"/"reject" when a threshold is crossed, else None."""
        if self.done:
            raise RuntimeError("gate already stopped: call finish()")
        if unit_id in self._seen:
            # Counting a unit twice would double its evidence and break the error guarantee.
            raise ValueError(f"unit {unit_id!r} observed twice")
        self._seen.add(unit_id)
        g = outcome_of(base, cand)
        e_win, e_harm = self._eproc.update(g)
        self.n += 1
        self.evidence.append(self._evidence_row(unit_id, base, cand, g))
        p = self.params
        if e_win >= p.e_confirm:
            self._stop("accept", "confirmed", "threshold")
        elif e_harm >= p.e_rollback:
            self._stop("reject", "harm", "threshold")
        elif p.e_futility is not None and e_harm >= p.e_futility:
            self._stop("reject", "futility", "threshold")
        elif p.curtail and self.n < p.n_max and not self.accept_reachable():
            self._stop("reject", "futility", "curtailed")
        return self.decision

    def _stop(self, action: str, stop_reason: str, ended_by: str) -> None:
        self.decision, self.stop_reason, self.ended_by = action, stop_reason, ended_by

    def best_case(self) -> tuple[float, int, float]:
        """(E_win, W − L, shrunk effect) if every remaining unit up to n_max were a W.

        Each is an upper bound on its value at any later stop under any continuation, for
        both bets: L and tie factors are ≤ 1, W − L grows by at most one per unit, and the
        k-th further W is bet at most at the all-W path's k-th bet (the bet is non-decreasing
        in the KT estimate p̂, which is largest when nothing but W has come in since).
        (W − L + j)/(n + j + shrink_k) is non-decreasing in j because W − L ≤ n.
        """
        p = self.params
        remaining = max(p.n_max - self.n, 0)
        growth = _all_w_growth(
            p.lambda_strategy, p.lambda_dir, p.lambda_max, self.W, self.L, remaining
        )
        e_best = self.e_win * growth
        net = self.W - self.L + remaining
        denom = p.n_max + p.shrink_k
        return e_best, net, (net / denom if denom else 0.0)

    def accept_reachable(self) -> bool:
        """Whether some continuation within n_max could still end in "accept" or
        "accept_provisional" (checked on the best case, see `best_case`)."""
        p = self.params
        e_best, net, shrunk = self.best_case()
        # The slack keeps float rounding (a product taken in another order) from curtailing a
        # run whose best case lands exactly on a threshold; it can only curtail less.
        e_best *= 1.0 + _REL_SLACK
        if e_best >= p.e_confirm:
            return True
        return e_best >= p.e_provisional and net >= p.w_net_min and shrunk >= p.delta_min

    def _evidence_row(self, unit_id: str, base: bool, cand: bool, g: int) -> dict[str, Any]:
        return {
            "unit_id": unit_id,
            "base": bool(base),
            "cand": bool(cand),
            "outcome": _OUTCOME_NAMES[g],
            "e_win": self.e_win,
            "e_harm": self.e_harm,
            "W": self.W,
            "L": self.L,
            "n": self.n,
        }

    def finish(self, exhausted: bool) -> GateDecision:
        """Settle the gate. `exhausted`: the ladder ran out before n_max.

        Calling it before a decision, n_max or exhaustion is a caller bug (the gate would
        settle on less evidence than it was configured for), so it raises.
        """
        if self.decision is not None:
            return self._decision(
                self.decision, self.stop_reason or "", self.ended_by or "threshold"
            )
        if self.n >= self.params.n_max:
            ended_by = "n_max"
        elif exhausted:
            ended_by = "exhausted"
        else:
            raise RuntimeError("finish() before a decision, n_max or an exhausted ladder")
        if self._provisional_ok():
            return self._decision("accept_provisional", "provisional", ended_by)
        return self._decision("reject", "insufficient_evidence", ended_by)

    def _provisional_ok(self) -> bool:
        p = self.params
        net = self.W - self.L
        return (
            self.e_win >= p.e_provisional
            and net >= p.w_net_min
            and self._delta_shrunk() >= p.delta_min
        )

    def _delta_shrunk(self) -> float:
        denom = self.n + self.params.shrink_k
        return (self.W - self.L) / denom if denom else 0.0

    def _decision(self, action: str, stop_reason: str, ended_by: str) -> GateDecision:
        return GateDecision(
            action=action,
            W=self.W,
            L=self.L,
            n_used=self.n,
            e_value=self.e_win,
            e_harm=self.e_harm,
            stop_reason=stop_reason,
            delta_hat=(self.W - self.L) / self.n if self.n else 0.0,
            delta_shrunk=self._delta_shrunk(),
            evidence=tuple(self.evidence),
            ended_by=ended_by,
        )


_REL_SLACK = 1e-9


@functools.lru_cache(maxsize=65_536)
def _all_w_growth(
    strategy: str, lambda_dir: float, lambda_max: float, wins: int, losses: int, steps: int
) -> float:
    """Factor by which E_win grows over `steps` further W after `wins` W and `losses` L.

    The bets depend only on the counts, so this is a pure function (cached: the gate asks it
    after every unit). The KT bet rises along an all-W path and stays at lambda_max once
    clipped there, so the loop stops early.
    """
    if strategy == "fixed":
        return (1.0 + lambda_dir) ** steps
    eproc = EProcessPair(strategy, lambda_dir, lambda_max)
    eproc.wins, eproc.losses = wins, losses
    for used in range(steps):
        lam, _ = eproc.bets()
        if lam >= lambda_max:
            return eproc.e_win * (1.0 + lambda_max) ** (steps - used)
        eproc.update(1)
    return eproc.e_win


def run_gate(
    pairs: Iterable[tuple[str, bool, bool]], params: GateParams | None = None
) -> GateDecision:
    """Run the gate over (unit_id, base, cand) in order; stops pulling at the first decision
    or n_max, so a lazy iterable is evaluated no further than needed."""
    gate = SequentialGate(params)
    for unit_id, base, cand in pairs:
        gate.observe(unit_id, base, cand)
        if gate.done:
            break
    return gate.finish(exhausted=not gate.done)


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class PairResult:
    """Paired counts over units: W/L discordant, both_right/both_wrong concordant."""

    W: int
    L: int
    both_right: int
    both_wrong: int
    n: int

    def outcomes(self) -> tuple[int, int]:
        return (self.W, self.L)


def pair_block(
    units: Sequence[str], base: Mapping[str, bool], cand: Mapping[str, bool]
) -> PairResult:
    """Count paired outcomes over `units`; units missing from either map are skipped (not
    evaluated on both sides means no paired evidence), and a repeated unit counts once."""
    counts = {(False, True): 0, (True, False): 0, (True, True): 0, (False, False): 0}
    seen: set[str] = set()
    for unit in units:
        if unit in seen or unit not in base or unit not in cand:
            continue
        seen.add(unit)
        counts[(bool(base[unit]), bool(cand[unit]))] += 1
    return PairResult(
        W=counts[(False, True)],
        L=counts[(True, False)],
        both_right=counts[(True, True)],
        both_wrong=counts[(False, False)],
        n=len(seen),
    )


# --------------------------------------------------------------------------- probation


def probation_verdict(
    W: int,  # the design's names
    L: int,
    outcomes_in_order: Sequence[int] | None,
    params: GateParams | None = None,
) -> str:
    """"rollback" when the flips since the accept show harm, else "keep".

    Harm: E_harm ≥ e_rollback over the flips (W: wrong→right, L: right→wrong between the
    anchor snapshot and the epoch's re-run), or simply more losses than wins.
    E_harm is computed over `outcomes_in_order` with the params' strategy. Without an order
    it uses the fixed bet lambda_dir, whose wealth (1 − λ)^W·(1 + λ)^L does not depend on
    order; the KT bet does, so no order is invented for it.

    With W ≥ L the harm wealth stays ≤ 1 for both bets (tested), so for e_rollback > 1 the
    verdict is in effect "rollback iff W < L"; the e-value clause is kept as the design states
    it and for bets that might behave otherwise.
    """
    p = params or GateParams()
    if W < 0 or L < 0:
        raise ValueError(f"counts must be >= 0, got W={W}, L={L}")
    if outcomes_in_order is None:
        eproc = EProcessPair("fixed", p.lambda_dir, p.lambda_max)
        outcomes: Sequence[int] = [1] * W + [-1] * L
    else:
        outcomes = outcomes_in_order
        if sum(g == 1 for g in outcomes) != W or sum(g == -1 for g in outcomes) != L:
            raise ValueError("outcomes_in_order does not match W and L")
        eproc = p.new_eprocess()
    _, e_harm = eproc.update_many(outcomes)
    return "rollback" if e_harm >= p.e_rollback or W - L < 0 else "keep"
