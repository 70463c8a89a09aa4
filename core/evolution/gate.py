"""The sequential gate on skill edits, pair counting and family outcomes.

Pure logic: callers feed families of (unit_id, baseline correct, candidate correct) in ladder
order and get a decision. One observation per *family* (near-duplicate questions share one):
its evidence is d = the mean of (candidate − baseline) over its units, in [−1, 1]
(`family_mean`). With `family_evidence` "mean" (default) the bet is on d itself,
E_win = Σ_k w_k Π(1 + λ_k d), and the decisions count g = sign(d); with "rounded" they count a
±1/0 outcome g = sign(d) drawn with probability |d| (else 0), the coin being a hash of the
family's unit ids (`rounded_outcome`), so E[g | d] = d, and bet on g. W and L in
reports are the families with d > 0 and d < 0; for single-unit families (a benchmark without
families) g = d and this is the usual unit-level paired comparison.

Scores. A benchmark whose checker gives a score in [0, 1] (core/checkers.py: a user
`module:function` or `rubric`) feeds scores instead of pass/fail; a unit's difference is the
paired score difference, so d stays in [−1, 1] and everything below holds with "accuracy" read
as "expected score" (`family_mean` says why). Such a test is never `singletons` (d leaves the
±1/0 lattice), so "mean" is held to Ville's level. With 0/1 outcomes nothing changes.

Why not the sign of Σ(candidate − baseline), as before: a candidate with exactly the baseline's
per-unit accuracy that only makes a family's units right or wrong together wins more signs than
it loses (bench/gate_validity.py case 5: accepted 31% of the time with families of 3, 63% with
5, horizon 60, accuracy 0.7). d's mean is ≤ 0 for such a candidate, and so is g's.

Decisions, checked after every family, in this order (W', L' = the +1 / −1 outcomes g counted,
`bet_W` / `bet_L`; on the ±1/0 lattice a decision depends on the g's only, so the bench's DP
over (W', L', n) is exact there):
- E_win ≥ threshold                      -> "accept",  stop_reason "confirmed"
- the final look (`final_look`, on by default, for a test on the ±1/0 lattice): once the
  test has seen its whole ladder, W' ≥ c(W' + L'), the exact joint level of
  `core.stats.final_look_levels`; or one win short of it, W' = c(D) − 1 ≥ coin_min_wins,
  when the test's coin u < γ(D) (`final_look_coin`, `core.stats.final_look_chances`)
                                         -> "accept",  stop_reason "confirmed",
                                             ended_by "final_look" (`chance` < 1 on the coin)
- E_harm ≥ e_rollback                    -> "reject",  stop_reason "harm"
- E_harm ≥ e_futility (off by default)   -> "reject",  stop_reason "futility"
- no net win (W' ≤ L') once max(futility_min, futility_share·horizon) families of this
  segment are in (a test resumed later, `resume`, gets a fresh look; never in a test that
  takes the final look, which needs its whole ladder)
                                         -> "reject",  stop_reason "futility"
  (saves the units a no-effect edit would spend until curtailment; the power it costs is
  measured in bench/gate_validity.py)
- no accept is reachable within the horizon even if every remaining family were a W, by the
  threshold or by the final look (when `curtail`) -> "reject",  stop_reason "futility"
- at the end of stage 1 when a stage 2 exists and the test takes no final look: E_win ≥ e_provisional, W' − L' ≥ w_net_min
  and (W' − L')/(n + shrink_k) ≥ delta_min -> "accept_provisional", stop_reason "provisional":
  the same test goes on over stage 2 at probation (`ProbationTest`), and the edit is kept only
  if it crosses the threshold there.
At the end of the ladder without such a stop -> "reject", "insufficient_evidence".

What is guaranteed, and under which assumptions. The null hypothesis: for each family the gate
looks at, given everything seen before, the candidate's expected per-unit accuracy on it is no
higher than the baseline's (E[d | past] ≤ 0), however the family's units move together.
Assumptions the harness makes true (app/harness/training/gate_ladder.py): (1) which families
are looked at, in which order, is a seeded shuffle that never uses any outcome; (2) the
baseline outcomes compared come from runs of the baseline, whatever they were, and are not used
to choose or order the families; (3) families are independent of each other (dependence inside
a family costs nothing: d is one bounded observation); (4) the families the candidate was
written from (its case pack) are left out; and, for "rounded", (5) a family's rounding coin
(a hash of its unit ids, which nothing that produces outcomes sees) is independent of its
outcomes: the guarantee is a probability over those coins too. Then, with "rounded",
P(g = +1 | past) = E[d⁺ | past] ≤ E[d⁻ | past] = P(g = −1 | past): exactly the ±1/0 null for
which `core.stats.calibrated_threshold` computed its level, so P(accept or kept provisional)
≤ α = 1/e_confirm exactly: E_win is a mixture of test supermartingales (`core.stats.mixture_e`),
and the threshold is the exact level at which a fair walk over the whole horizon (stage 1 +
stage 2) crosses with probability ≤ α (never above Ville's 1/α). With "mean", every factor
1 + λd has conditional mean ≤ 1 without assumption (5), so E_win is a test supermartingale and
Ville's level e_confirm bounds the rate; when every family of the test is a single unit
(`singletons`, known from the ladder before any outcome) d is on the ±1/0 lattice, E_win is
`mixture_e(W, L)` exactly, and the exact calibrated level holds for it too. The harm, futility and curtailment stops only ever reject, so they
cannot raise that rate; curtailment changes no decision at all.

The final look. A test on the ±1/0 lattice that sees its whole ladder in one go (not a
probation or a test resumed in a later step, `resume`) also accepts at the ladder's end when
its W' reaches c(D), D = W' + L' (`core.stats.final_look_levels`): c(D) is the fewest wins
with P(a fair walk of D steps crosses the threshold, or ends with W ≥ c(D)) ≤ α, computed
exactly. Its null reads on independent families: the families' outcomes are independent of
each other, and on each one the edit is no likelier to turn a wrong answer right than a right
one wrong. Then, given which families are discordant, their signs are independent coins
each a W with probability ≤ ½, the ladder is fixed before any outcome, and "crosses or ends
with W ≥ c(D)" grows with W, so P(accept | D) ≤ α for every D: McNemar's exact conditioning,
which lets a ladder of rare discordant families confirm an edit: on a ladder of 48 singletons
it accepts 5 wins of 5, 9 of 10 or 15 of 20 (within one win of a fixed one-sided exact
McNemar test at α), where the threshold alone needs 6 of 6, 9 of 10 or 11 of 13. A test that goes on later is an e-process only: its
end is not a ladder fixed in advance, so it takes no final look.

The coin. Outcomes are counts, so c(D) alone leaves part of α unspent on every D (4 wins of 4
discordant have probability 1/16 under the null: above α, so c(4) asks for a fifth). With
`final_look_coin` (on by default) a test that ends one win short, W' = c(D) − 1, is accepted
when its coin u < γ(D), where γ(D) is exactly what makes P(cross, or W' ≥ c(D), or W' = c(D)
− 1 and the coin) = α for D fair coins (on a ladder of 48: 0.4 for 3 of 3, 0.8 for 4 of 4,
0.37 for 5 of 6, 0.73 for 6 of 7).
This is the randomized form of McNemar's exact test, the most powerful test of its null given
D (Neyman-Pearson). The guarantee is then a probability over the coin too: the caller draws u
uniform on [0, 1) before any outcome and independently of them (the harness hashes the run's
seed and the test's id, core/evolution/acceptance.py `draw_coin`), and P(accept | D) ≤ α for
every D as before, since the acceptance probability (0, γ, 1) still grows with W'. A coin
never accepts on fewer than `coin_min_wins` (3) wins: that keeps a null edit that changed one
or two answers out at every coin (measured: bench/acceptance.py). A provisional accept carries
no guarantee by itself; it is an edit on probation. What is not guaranteed: that an accepted
edit helps on questions unlike the benchmark's.

Measured by bench/gate_validity.py with the defaults (exact DP where the decision depends on
counts only, seeded Monte Carlo otherwise): false accepts at most 0.0500 (accepted or kept;
exact, the coin averaged over: a worst-case test spends α exactly; 0.0495 without the coin)
over discordance 0.02-1 x n_max 20/60/200, 0.045-0.054 through the real ladders built from
noisy baselines (Monte Carlo, s.e. 0.0045), at most 0.044 with families of 3 and 10 sharing
outcomes (Ville's level, no final look), at most 0.029 for a consistency-only candidate
(families of 3 and 5, accuracy 0.7 and 0.5; the old sign rule: 0.66); kept provisional accepts
at most 0.006; a slightly harmful edit (P(W | discordant) 0.45) at most 0.030. "rounded" against "mean" (power, d 0.3 and
P(W | discordant) 0.7 per unit): with independent units in a family "mean" is stronger on long
ladders (families of 3: 0.66 vs 0.51 at horizon 60, 0.99 vs 0.96 at 200) and weaker on short
ones (0.05 vs 0.15 at 20); with units sharing their outcome "rounded" is stronger, and with
singletons both take the same exact level, hence "mean" by default.

The bet (core.stats.MIXTURE_BETS) is an equal mixture of λ = 0.35, 0.65 and 0.95. The λ = 0.95
part is what confirms a small edit on a short ladder: 6 straight single-unit wins, or 6
families of 3 each won by all its units (14 each won by one unit, d = 1/3, where any valid test
of the family null needs at least 11: P(d ≥ 1/3) can be 3/4 per family under it, and
0.75^10 > 0.05). The price is power on long ladders whose wins and losses mix, which the
final look buys back: at n_max 200, discordance 0.3, P(W | discordant) 0.7, 0.88 with it and
its coin, 0.86 without the coin and 0.77 without the final look (a fixed McNemar test on all
200 units: 0.92), and at least 0.94x a fixed McNemar test's power at the gate's expected
number of units (0.92x without the coin, 0.84x without the final look).

Families or units. A benchmark that declares a family's units independent
(`family_units = "independent"`, docs/benchmarks.md) has every unit counted as its own family
by the harness (app/harness/training/gate_ladder.py `evidence_group`), so the tests are
`singletons` at the exact level and the null reads per unit. Declared falsely for
near-duplicates that share an outcome, a family counts several times and the bound fails
(bench/gate_validity.py case 8 measures by how much).

Draws of changed questions. A ladder may hold draws of its questions (`[gate] draws`,
app/harness/training/gate_ladder.py), each one more observation. The rule may leave a draw
unevaluated when no earlier draw of its question had its two answers differ (`skip`, driven by
core/evolution/acceptance.py `RuleSetup.redraws`): the draw counts as a tie in its place. That
choice reads which earlier pairs were discordant, never who won them, so given the whole pattern
of discordance the signs are still independent coins each a win with probability at most ½
under the null: the exact level and the final look hold unchanged (exact enumeration in
tests/core/test_acceptance.py; bench/gate_validity.py case 8b).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.stats import (
    CALIBRATION_MAX_HORIZON,
    MIXTURE_BETS,
    STRATEGIES,
    EProcessPair,
    calibrated_threshold,
    final_look_chances,
    final_look_levels,
    mixture_e,
)


class GateAction(StrEnum):
    """What the gate decided; the value is what step reports and harness.db store."""

    ACCEPT = "accept"
    ACCEPT_PROVISIONAL = "accept_provisional"
    REJECT = "reject"


class AcceptanceStrategy(StrEnum):
    """Which acceptance rule a gate runs (config `[gate] strategy`; the rules are in
    core/evolution/acceptance.py); the value is what step reports and harness.db store."""

    EPROCESS = "eprocess"
    MCNEMAR = "mcnemar"
    MINIBATCH = "minibatch"
    ACCEPT_ALL = "accept_all"
    STRICT_IMPROVEMENT = "strict_improvement"
    SE_GATE = "se_gate"


class GateStopReason(StrEnum):
    """Why the e-process stopped (see the module docstring for the order of the checks)."""

    CONFIRMED = "confirmed"
    HARM = "harm"
    FUTILITY = "futility"
    PROVISIONAL = "provisional"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"


class GateEndedBy(StrEnum):
    """Which rule ended the test: a threshold, a futility rule, the stage boundary, or the
    end of the families."""

    THRESHOLD = "threshold"
    FINAL_LOOK = "final_look"
    NO_SIGNAL = "no_signal"
    CURTAILED = "curtailed"
    STAGE = "stage"
    N_MAX = "n_max"
    EXHAUSTED = "exhausted"


class FamilyOutcome(StrEnum):
    """A family's outcome as an evidence row names it."""

    W = "W"
    L = "L"
    TIE = "tie"


class ProbationVerdict(StrEnum):
    """How a provisional accept's test ended at the epoch end."""

    KEEP = "keep"
    ROLLBACK = "rollback"


BET_STRATEGIES = ("mixture", *STRATEGIES)
# What the bet moves on per family (see `family_mean`): "mean" (default) bets on d itself, at
# the exact calibrated level when every family of the test is one unit and at Ville's level
# e_confirm otherwise; "rounded" bets on a ±1/0 outcome drawn with mean d, always at the exact
# level. Measured against each other in bench/gate_validity.py and bench/acceptance_large.py.
FAMILY_EVIDENCE = ("rounded", "mean")
OUTCOME_NAMES = {1: FamilyOutcome.W, -1: FamilyOutcome.L, 0: FamilyOutcome.TIE}

# A unit's outcome on one side: correct (bool), or a checker's score in [0, 1]
# (core/checkers.py), or None when its checker gave no verdict (every judge reply invalid).
Outcome = bool | float | None
Pair = tuple[str, Outcome, Outcome]  # (unit_id, baseline outcome, candidate outcome)


class GateParamError(ValueError):
    """One gate parameter out of its range: `name` is the field, `requirement` what it must be."""

    def __init__(self, name: str, value: object, requirement: str) -> None:
        super().__init__(f"{name} must be {requirement}, got {value!r}")
        self.name, self.value, self.requirement = name, value, requirement


def _require(name: str, value: object, ok: bool, requirement: str) -> None:
    if not ok:
        raise GateParamError(name, value, requirement)


@dataclass(frozen=True)
class GateParams:
    """Thresholds and bet of the gate; validated so a typo in a config fails at load time.

    `e_confirm` is 1/α. With the "mixture" bet (default) and `calibrate`, the accept level is
    the exact finite-horizon level (≤ e_confirm) for the test's horizon; "fixed" and "kt" use
    e_confirm itself (Ville). `n_max` caps the families one test may use (stage 1 + stage 2);
    the ladder (the task type's pool) usually ends first.
    """

    e_confirm: float = 20.0
    e_rollback: float = 10.0
    e_provisional: float = 5.0
    w_net_min: int = 2
    delta_min: float = 0.02
    lambda_dir: float = 0.35
    lambda_strategy: str = "mixture"
    lambda_max: float = 0.5
    shrink_k: int = 10
    n_max: int = 200
    # Reject once E_harm reaches this (None: off). It caps power (at its default of 1.3 the
    # old gate gave up at the first loss before any win), so it is off by default.
    e_futility: float | None = None
    # Stop (reject, "futility") once no accept is reachable within the horizon; never
    # changes the decision, only saves units.
    curtail: bool = True
    calibrate: bool = True
    # Give up when, after this share of the horizon (and at least futility_min families), the
    # candidate has won no more families than it lost. 0 switches it off.
    futility_share: float = 1 / 3
    futility_min: int = 10
    # How a family of several units becomes evidence (FAMILY_EVIDENCE; module docstring).
    family_evidence: str = "mean"
    # At the end of a test that used its whole ladder in one go, on the ±1/0 lattice, also
    # accept when W ≥ the exact joint level for the D discordant families seen
    # (`core.stats.final_look_levels`). Such a test runs to its ladder's end (no provisional
    # accept, no "no net win" stop; curtailment still ends it once no accept is reachable).
    final_look: bool = True
    # At the final look, a test that ends one win short of c(D) (W = c(D) − 1, the threshold
    # not crossed) is accepted with the probability γ(D) that spends the rest of α exactly
    # (`core.stats.final_look_chances`), on the test's coin: a uniform number the caller draws
    # before any outcome (`SequentialGate(coin=...)`). Never on fewer than `coin_min_wins`
    # wins. Off, or with no coin, the final look accepts at W ≥ c(D) only.
    final_look_coin: bool = True
    coin_min_wins: int = 3

    def __post_init__(self) -> None:
        """The one range check of every gate parameter (the app's `[gate]` config relies on it)."""
        for name in ("lambda_dir", "lambda_max"):
            _require(name, getattr(self, name), 0.0 < getattr(self, name) < 1.0, "in (0, 1)")
        # A threshold below 1 would be crossed before any evidence is seen (wealth starts at 1).
        for name in ("e_confirm", "e_rollback", "e_provisional"):
            _require(name, getattr(self, name), getattr(self, name) >= 1.0, ">= 1")
        e_futility = self.e_futility
        _require("e_futility", e_futility, e_futility is None or e_futility > 1.0, "> 1 or unset")
        _require("n_max", self.n_max, self.n_max >= 1, ">= 1")
        _require("w_net_min", self.w_net_min, self.w_net_min >= 0, ">= 0")
        _require("delta_min", self.delta_min, 0.0 <= self.delta_min <= 1.0, "in [0, 1]")
        _require("shrink_k", self.shrink_k, self.shrink_k >= 0, ">= 0")
        share = self.futility_share
        _require("futility_share", share, 0.0 <= share <= 1.0, "in [0, 1]")
        _require("futility_min", self.futility_min, self.futility_min >= 1, ">= 1")
        _require("coin_min_wins", self.coin_min_wins, self.coin_min_wins >= 1, ">= 1")
        strategies = ", ".join(BET_STRATEGIES)
        ok = self.lambda_strategy in BET_STRATEGIES
        _require("lambda_strategy", self.lambda_strategy, ok, f"one of {strategies}")
        kinds = ", ".join(FAMILY_EVIDENCE)
        ok = self.family_evidence in FAMILY_EVIDENCE
        _require("family_evidence", self.family_evidence, ok, f"one of {kinds}")

    @property
    def alpha(self) -> float:
        return 1.0 / self.e_confirm

    def no_signal_after(self, horizon: int) -> int | None:
        """Families after which "no net win" stops the test (None: never)."""
        if self.futility_share <= 0:
            return None
        return max(self.futility_min, math.ceil(self.futility_share * horizon))

    def accept_level(self, horizon: int, singletons: bool = False) -> float:
        """The E_win level that accepts, for a test that can see `horizon` families.

        The calibration is exact for ±1/0 outcomes only: the rounded outcomes, or d itself
        when every family of the test is a single unit (`singletons`, known from the ladder
        before any outcome; then betting on d is the ±1/0 mixture exactly). Betting on a
        fractional d uses Ville's level e_confirm."""
        on_lattice = self.family_evidence == "rounded" or singletons
        if self.lambda_strategy == "mixture" and self.calibrate and on_lattice:
            return calibrated_threshold(horizon, self.alpha, MIXTURE_BETS)
        return self.e_confirm


@dataclass(frozen=True)
class BetState:
    """The bet's wealth and counts at one point of a test (`_Evidence`), to go on from. Each
    bet keeps what it needs: the fixed / KT bet its wealth (`e_win`, `e_harm`), the mixture bet
    on d each of its bets' log wealth; the fields a bet does not keep are None."""

    wins: int
    losses: int
    # None: a state written before d was counted, when every family was a single unit, so
    # d's sign was g's (`wins`, `losses`)
    d_wins: int | None = None
    d_losses: int | None = None
    e_win: float | None = None
    e_harm: float | None = None
    log_win: tuple[float, ...] | None = None
    log_harm: tuple[float, ...] | None = None
    on_lattice: bool | None = None


@dataclass(frozen=True)
class GateState:
    """What a test needs to go on later (`SequentialGate.state`, `SequentialGate.resume`): a
    provisional accept's probation, a continued or a pooled test."""

    evidence: BetState
    n: int  # families observed
    units: int  # units observed
    horizon: int
    threshold: float  # the accept level, fixed before the first family


@dataclass(frozen=True)
class EvidenceRow:
    """One observed unit of a gate test and the test's state after its family."""

    unit_id: str
    family: str
    base: Outcome
    cand: Outcome
    outcome: FamilyOutcome  # the family's: d > 0, d < 0 or a tie
    e_win: float
    e_harm: float
    W: int  # families with d > 0 so far (`SequentialGate.W`)
    L: int
    n: int  # families observed so far
    # the family's mean difference (`family_mean`) and the ±1/0 outcome the decisions counted;
    # None for a one-shot rule (core/evolution/acceptance.py), which counts the sign of the sum
    d: float | None = None
    g: int | None = None


class _Evidence:
    """E_win / E_harm for the chosen bet, and the counts the decisions and reports use.

    `wins`/`losses` count the ±1/0 outcomes the bet moved on (the rounded outcomes with
    family_evidence "rounded", the signs of d with "mean"); every decision reads these.
    `d_wins`/`d_losses` count families with d > 0 / d < 0 (what reports call W and L); for
    single-unit families both pairs are equal.
    """

    def __init__(self, params: GateParams) -> None:
        self.params = params
        self._eproc = (
            None
            if params.lambda_strategy == "mixture"
            else EProcessPair(params.lambda_strategy, params.lambda_dir, params.lambda_max)
        )
        self._on_mean = params.family_evidence == "mean"
        # betting on d with the mixture: the log wealth of each of its bets
        self._mean_mixture = self._on_mean and self._eproc is None
        self._log_win = [0.0] * len(MIXTURE_BETS)
        self._log_harm = [0.0] * len(MIXTURE_BETS)
        self.wins = self.losses = self.d_wins = self.d_losses = 0
        # every d so far was -1, 0 or 1: the mean bet's wealth is mixture_e(W, L) exactly, and
        # is computed that way so decisions on the lattice match the exact level bit for bit
        self._on_lattice = True

    def update(self, d: float, g: int) -> None:
        """Fold in one family: its mean difference d and the ±1/0 outcome g drawn for it."""
        if self._eproc is not None:
            self._bet_eproc(d, g)
        if self._mean_mixture:
            self._on_lattice = self._on_lattice and d in (-1, 0, 1)
            for k, (lam, _) in enumerate(MIXTURE_BETS):
                self._log_win[k] += math.log1p(lam * d)
                self._log_harm[k] += math.log1p(-lam * d)
        self.wins += g == 1
        self.losses += g == -1
        self.d_wins += d > 0
        self.d_losses += d < 0

    def _bet_eproc(self, d: float, g: int) -> None:
        """The fixed / KT bet: on g, or on d itself with the same predictable bets (they
        depend on the counts before this family only, so Π(1 + λd) stays a supermartingale)."""
        eproc = self._eproc
        assert eproc is not None
        if not self._on_mean:
            eproc.update(g)
            return
        lam, mu = eproc.bets()
        eproc.e_win *= 1.0 + lam * d
        eproc.e_harm *= 1.0 - mu * d
        eproc.wins += g == 1
        eproc.losses += g == -1

    @property
    def e_win(self) -> float:
        if self._mean_mixture and not self._on_lattice:
            return _mixture_of_logs(self._log_win)
        if self._eproc is None:
            return mixture_e(self.wins, self.losses)
        return self._eproc.e_win

    @property
    def e_harm(self) -> float:
        if self._mean_mixture and not self._on_lattice:
            return _mixture_of_logs(self._log_harm)
        if self._eproc is None:
            return mixture_e(self.losses, self.wins)
        return self._eproc.e_harm

    def best_case(self, steps: int) -> float:
        """E_win if every one of `steps` further outcomes were a W (d = 1): an upper bound on
        E_win at any later point, for every bet (L and tie factors are ≤ 1, and the k-th
        further W is bet at most at the all-W path's k-th bet)."""
        if self._mean_mixture and not self._on_lattice:
            return _mixture_of_logs(
                [
                    w + steps * math.log1p(lam)
                    for w, (lam, _) in zip(self._log_win, MIXTURE_BETS, strict=True)
                ]
            )
        if self._eproc is None:
            return mixture_e(self.wins + steps, self.losses)
        p = self.params
        return self.e_win * _all_w_growth(
            p.lambda_strategy, p.lambda_dir, p.lambda_max, self.wins, self.losses, steps
        )

    def snapshot(self) -> BetState:
        """What `restore` needs to go on: the counts, and the wealth of the bet in use."""
        eproc, mean_mixture = self._eproc, self._mean_mixture
        return BetState(
            wins=self.wins,
            losses=self.losses,
            d_wins=self.d_wins,
            d_losses=self.d_losses,
            e_win=eproc.e_win if eproc is not None else None,
            e_harm=eproc.e_harm if eproc is not None else None,
            log_win=tuple(self._log_win) if mean_mixture else None,
            log_harm=tuple(self._log_harm) if mean_mixture else None,
            on_lattice=self._on_lattice if mean_mixture else None,
        )

    def restore(self, bet: BetState) -> None:
        self.wins, self.losses = bet.wins, bet.losses
        self.d_wins = self.wins if bet.d_wins is None else bet.d_wins
        self.d_losses = self.losses if bet.d_losses is None else bet.d_losses
        if self._eproc is not None:
            if bet.e_win is None or bet.e_harm is None:
                raise ValueError("the state of a fixed or KT bet holds no e_win and e_harm")
            self._eproc.wins, self._eproc.losses = self.wins, self.losses
            self._eproc.e_win, self._eproc.e_harm = bet.e_win, bet.e_harm
        if self._mean_mixture and bet.log_win is not None and bet.log_harm is not None:
            self._log_win, self._log_harm = list(bet.log_win), list(bet.log_harm)
            self._on_lattice = bool(bet.on_lattice)
        elif self._mean_mixture:  # a state from a ±1/0 bet: its wealth from the counts
            for k, (lam, _) in enumerate(MIXTURE_BETS):
                up, down = math.log1p(lam), math.log1p(-lam)
                self._log_win[k] = self.wins * up + self.losses * down
                self._log_harm[k] = self.losses * up + self.wins * down


def _mixture_of_logs(log_wealth: Sequence[float]) -> float:
    """Σ_k w_k exp(log_wealth_k) / Σ_k w_k over MIXTURE_BETS (the weights of `mixture_e`)."""
    total = math.fsum(w for _, w in MIXTURE_BETS)
    terms = (w * math.exp(x) for x, (_, w) in zip(log_wealth, MIXTURE_BETS, strict=True))
    return math.fsum(terms) / total


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided and the evidence behind it (written to the step report)."""

    action: GateAction
    W: int  # families with d > 0 / d < 0 (`family_mean`; one unit per family: won / lost)
    L: int
    n_used: int  # families observed
    e_value: float  # E_win at stop
    e_harm: float
    stop_reason: str  # a GateStopReason; one-shot rules (core/evolution/acceptance.py) say why
    # (W' − L')/n and (W' − L')/(n + shrink_k), 0 when n = 0, over the ±1/0 outcomes the bet
    # moved on (= W, L for single-unit families); the shrunk one pulls small-n effects to 0
    delta_hat: float
    delta_shrunk: float
    evidence: tuple[EvidenceRow, ...] = ()
    ended_by: GateEndedBy = GateEndedBy.THRESHOLD
    threshold: float = 20.0  # the accept level this test used
    horizon: int = 0  # families the test could see (stage 1 + stage 2)
    units_used: int = 0  # units evaluated (all members of the observed families)
    strategy: AcceptanceStrategy = AcceptanceStrategy.EPROCESS
    continuation: GateState | None = None  # a provisional accept's test state
    # an accept on the final look's coin (`GateParams.final_look_coin`): the probability it
    # had given its evidence; 1.0 for every other decision
    chance: float = 1.0

    @property
    def accepted(self) -> bool:
        return self.action != GateAction.REJECT


def outcome_of(base: bool, cand: bool) -> int:
    """+1 for W (only the candidate right), −1 for L (only the baseline right), 0 for a tie."""
    return int(cand) - int(base)


def unit_difference(base: Outcome, cand: Outcome) -> float:
    """candidate − baseline for one unit, in [−1, 1]: `outcome_of` for pass/fail, the paired
    score difference for scores.

    A side without a verdict (every judge reply unreadable, a custom checker's `check_error`)
    counts as the worst it could have been for the candidate: a baseline with none as right
    (1), a candidate with none as wrong (0). The difference can then only be lower than the
    true one, so E[d | past] ≤ 0 under the null whatever decides which verdicts go missing:
    a judge that fails more often on the candidate's bad answers cannot lift the candidate
    (leaving such units out did: bench/gate_validity.py `judge_missingness`). Pass/fail
    outcomes stay on the ±1/0 lattice."""
    if base is None:
        base = 1.0 if cand is None or not isinstance(cand, bool) else True
    if cand is None:
        cand = 0.0 if not isinstance(base, bool) else False
    if isinstance(base, bool) and isinstance(cand, bool):
        return outcome_of(base, cand)
    return min(1.0, max(0.0, float(cand))) - min(1.0, max(0.0, float(base)))


def family_outcome(pairs: Sequence[Pair]) -> int:
    """The sign of Σ(candidate − baseline) over the family's units (the one-shot rules'
    outcome, core/evolution/acceptance.py). The gate does not bet on it: a candidate that only
    makes a family's units right or wrong together wins more signs than it loses."""
    net = sum(unit_difference(base, cand) for _, base, cand in pairs)
    return (net > 0) - (net < 0)


def family_mean(pairs: Sequence[Pair]) -> float:
    """d = the mean of (candidate − baseline) over the family's units, in [−1, 1]. Its mean is
    ≤ 0 whenever the candidate's per-unit accuracy on the family is no higher than the
    baseline's, however its units move together.

    With scores (core/checkers.py: custom and rubric checkers) a unit's difference is the
    paired score difference, still in [−1, 1], so d is too, and the null becomes "the
    candidate's expected per-unit score on the family is no higher than the baseline's": every
    factor 1 + λd of the "mean" bet keeps conditional mean ≤ 1 and E_win stays a test
    supermartingale (Ville's level), and "rounded" still draws g with E[g | d] = d. For 0/1
    outcomes the difference is exactly `outcome_of`, so every figure is unchanged. A side
    without a verdict counts as the candidate's worst case (`unit_difference`), so d is never
    above its true value and no assumption about why verdicts go missing is needed."""
    diffs = [unit_difference(base, cand) for _, base, cand in pairs]
    return sum(diffs) / len(diffs) if diffs else 0.0


def rounded_outcome(unit_ids: Iterable[str], d: float) -> int:
    """A ±1/0 outcome with conditional mean d: sign(d) with probability |d|, else 0.

    d ∈ {−1, 0, 1} (every single-unit family) is returned as is. Otherwise the coin is a
    uniform drawn from a hash of the family's sorted unit ids: deterministic, so a resumed or
    replayed test rounds exactly as the first run did, and fixed before any outcome is seen.
    """
    if d in (-1.0, 0.0, 1.0):
        return int(d)
    return (1 if d > 0 else -1) if _unit_uniform(unit_ids) < abs(d) else 0


def _stored(outcome: Outcome) -> bool | float | None:
    """An outcome as the evidence row keeps it: a bool for pass/fail (as always), a score."""
    return outcome if outcome is None or isinstance(outcome, bool) else float(outcome)


def _unit_uniform(unit_ids: Iterable[str]) -> float:
    key = "\x1f".join(sorted(unit_ids)).encode()
    digest = hashlib.sha256(b"skill-trainer/gate-rounding\x00" + key).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SequentialGate:
    """Anytime-valid gate: feed families with `observe_family` (or single units with
    `observe`), then `finish`.

    `stage1` is how many families stage 1 has; `horizon` how many the whole test (stage 1 +
    stage 2) may see. Without a stage 2 (horizon == stage1) there is no provisional accept.
    """

    def __init__(
        self,
        params: GateParams | None = None,
        *,
        horizon: int | None = None,
        stage1: int | None = None,
        singletons: bool = False,
        coin: float | None = None,
    ) -> None:
        self.params = params or GateParams()
        if coin is not None and not 0.0 <= coin < 1.0:
            raise ValueError(f"coin must be in [0, 1), got {coin!r}")
        # the test's coin (`GateParams.final_look_coin`), drawn before any outcome
        self.coin = coin
        # the probability the accept had given its evidence: < 1 for one on the coin
        self.chance = 1.0
        self.horizon = min(horizon if horizon is not None else self.params.n_max, self.params.n_max)
        self.stage1 = min(stage1 if stage1 is not None else self.horizon, self.horizon)
        # every family this test will see is a single unit: the exact level holds for d itself
        self.singletons = singletons
        self.threshold = self.params.accept_level(self.horizon, singletons)
        # the final look needs the exact level, which needs the ±1/0 lattice
        self.final_look = (
            self.params.final_look
            and self.params.lambda_strategy == "mixture"
            and self.params.calibrate
            and (self.params.family_evidence == "rounded" or singletons)
            and self.horizon <= CALIBRATION_MAX_HORIZON
        )
        self._no_signal_after = self.params.no_signal_after(self.horizon)
        self._ev = _Evidence(self.params)
        self.n = 0  # families observed
        # where this segment of the test began (`resume`): the no-signal stop looks at a
        # segment's own families, so a test that goes on later gets a fresh look
        self.segment_start = 0
        self.units = 0
        self.skipped = 0  # families counted as ties unevaluated (`skip`)
        self.decision: GateAction | None = None
        self.stop_reason: GateStopReason | None = None
        self.ended_by: GateEndedBy | None = None
        self.evidence: list[EvidenceRow] = []
        self._seen: set[str] = set()

    @property
    def W(self) -> int:  # the design's name: families with d > 0 (won, for single units)
        return self._ev.d_wins

    @property
    def L(self) -> int:  # families with d < 0
        return self._ev.d_losses

    @property
    def bet_W(self) -> int:
        """+1 outcomes the bet moved on (`rounded_outcome`); every decision counts these."""
        return self._ev.wins

    @property
    def bet_L(self) -> int:
        return self._ev.losses

    @property
    def e_win(self) -> float:
        return self._ev.e_win

    @property
    def e_harm(self) -> float:
        return self._ev.e_harm

    @property
    def done(self) -> bool:
        """True once a decision was taken or the horizon is used up: stop evaluating."""
        return self.decision is not None or self.n >= self.horizon

    def observe(self, unit_id: str, base: Outcome, cand: Outcome) -> GateAction | None:
        """One unit that is its own family."""
        return self.observe_family(unit_id, [(unit_id, base, cand)])

    def observe_family(self, family_id: str, pairs: Sequence[Pair]) -> GateAction | None:
        """Fold in one family; return the action once one is taken, else None."""
        if self.done:
            raise RuntimeError("gate already stopped: call finish()")
        if self.singletons and len(pairs) > 1:
            # the level was calibrated for single units; a larger family would void it
            raise ValueError(f"family {family_id!r} has {len(pairs)} units in a singletons test")
        if not pairs:
            raise ValueError(f"family {family_id!r} has no units")
        for unit_id, _, _ in pairs:
            if unit_id in self._seen:
                # Counting a unit twice would double its evidence and break the guarantee.
                raise ValueError(f"unit {unit_id!r} observed twice")
            self._seen.add(unit_id)
        d = family_mean(pairs)
        if self.singletons and d not in (-1, 0, 1):
            # the exact level holds on the ±1/0 lattice only; a scored test must say so before
            # its first outcome (singletons=False), so it is held to Ville's level
            raise ValueError(f"family {family_id!r} has d = {d} off the ±1/0 lattice")
        g = self._outcome(pairs, d)
        self._ev.update(d, g)
        self.n += 1
        self.units += len(pairs)
        for unit_id, base, cand in pairs:
            self.evidence.append(self._evidence_row(family_id, unit_id, base, cand, d, g))
        self._check()
        return self.decision

    def skip(self, family_id: str) -> GateAction | None:
        """Count one family of the ladder as a tie without evaluating it: a gate draw whose
        question never had its two answers differ (`core.evolution.acceptance.RuleSetup`
        `redraws`). Exactly what observing a tie does (the wealth does not move, n does), so
        the horizon, the final look and the stage boundary stay where the ladder put them."""
        if self.done:
            raise RuntimeError("gate already stopped: call finish()")
        if family_id in self._seen:
            raise ValueError(f"family {family_id!r} observed twice")
        self._seen.add(family_id)
        self._ev.update(0.0, 0)
        self.n += 1
        self.skipped += 1
        self._check()
        return self.decision

    def _outcome(self, pairs: Sequence[Pair], d: float) -> int:
        """The ±1/0 outcome the decisions count: rounded (mean d) or, betting on d, its sign."""
        if self.params.family_evidence == "mean":
            return (d > 0) - (d < 0)
        return rounded_outcome((unit_id for unit_id, _, _ in pairs), d)

    def _check(self) -> None:
        p = self.params
        if self.e_win >= self.threshold:
            self._stop(GateAction.ACCEPT, GateStopReason.CONFIRMED, GateEndedBy.THRESHOLD)
        elif self.final_look and self.n == self.horizon and self._final_look_passes():
            self._stop(GateAction.ACCEPT, GateStopReason.CONFIRMED, GateEndedBy.FINAL_LOOK)
        elif self.e_harm >= p.e_rollback:
            self._stop(GateAction.REJECT, GateStopReason.HARM, GateEndedBy.THRESHOLD)
        elif p.e_futility is not None and self.e_harm >= p.e_futility:
            self._stop(GateAction.REJECT, GateStopReason.FUTILITY, GateEndedBy.THRESHOLD)
        elif (
            self._no_signal_after is not None
            and not self.final_look
            and self.n - self.segment_start >= self._no_signal_after
            and self.bet_W <= self.bet_L
            and self.n < self.horizon
        ):
            self._stop(GateAction.REJECT, GateStopReason.FUTILITY, GateEndedBy.NO_SIGNAL)
        elif p.curtail and self.n < self.horizon and not self.accept_reachable():
            self._stop(GateAction.REJECT, GateStopReason.FUTILITY, GateEndedBy.CURTAILED)
        elif (
            self.n == self.stage1 < self.horizon and not self.final_look and self._provisional_ok()
        ):
            self._stop(GateAction.ACCEPT_PROVISIONAL, GateStopReason.PROVISIONAL, GateEndedBy.STAGE)

    def _stop(self, action: GateAction, stop_reason: GateStopReason, ended_by: GateEndedBy) -> None:
        self.decision, self.stop_reason, self.ended_by = action, stop_reason, ended_by

    def accept_reachable(self) -> bool:
        """Whether some continuation within the horizon could still cross the threshold, or
        pass the final look."""
        remaining = self.horizon - self.n
        best = self._ev.best_case(remaining)
        # The slack keeps float rounding from curtailing a run whose best case lands exactly
        # on the threshold; it can only curtail less.
        if best * (1.0 + _REL_SLACK) >= self.threshold:
            return True
        if not self.final_look:
            return False
        # k more wins and the rest ties: the final look's best ends (a loss never helps)
        wins, losses = self.bet_W, self.bet_L
        return any(self._looks_accept(wins + k, losses) for k in range(remaining + 1))

    def _final_levels(self) -> tuple[int, ...]:
        return final_look_levels(self.threshold, self.params.alpha, self.horizon)

    def final_look_chance(self, wins: int, losses: int) -> float:
        """The probability that the final look accepts a test whose whole ladder ended on
        `wins` and `losses` (the bet's ±1 counts) without crossing the threshold: 1 at or above
        c(D), D = wins + losses (`core.stats.final_look_levels`); γ(D) one win short, with
        `final_look_coin` and at least `coin_min_wins` wins (`core.stats.final_look_chances`);
        else 0. An exact computation of P(accept) weights each such end by it."""
        if not self.final_look:
            return 0.0
        critical = self._final_levels()[wins + losses]
        if wins >= critical:
            return 1.0
        p = self.params
        if not p.final_look_coin or wins != critical - 1 or wins < p.coin_min_wins:
            return 0.0
        return final_look_chances(self.threshold, p.alpha, self.horizon)[wins + losses]

    def _looks_accept(self, wins: int, losses: int) -> bool:
        """Whether the final look accepts that end: for sure, or on this test's coin."""
        return self._takes(self.final_look_chance(wins, losses))

    def _takes(self, chance: float) -> bool:
        return chance >= 1.0 or (self.coin is not None and self.coin < chance)

    def _final_look_passes(self) -> bool:
        """At the end of the whole ladder: W ≥ the joint level for the D = W + L discordant
        families (`core.stats.final_look_levels`), or one short on the coin."""
        chance = self.final_look_chance(self.bet_W, self.bet_L)
        if not self._takes(chance):
            return False
        self.chance = chance
        return True

    def _evidence_row(
        self, family_id: str, unit_id: str, base: Outcome, cand: Outcome, d: float, g: int
    ) -> EvidenceRow:
        return EvidenceRow(
            unit_id=unit_id,
            family=family_id,
            base=_stored(base),
            cand=_stored(cand),
            outcome=OUTCOME_NAMES[(d > 0) - (d < 0)],
            e_win=self.e_win,
            e_harm=self.e_harm,
            W=self.W,
            L=self.L,
            n=self.n,
            d=d,
            g=g,
        )

    def finish(self, exhausted: bool = True) -> GateDecision:
        """Settle the gate. `exhausted`: the ladder ran out before the horizon.

        Calling it before a decision, the horizon or exhaustion is a caller bug (the gate would
        settle on less evidence than it was configured for), so it raises.
        """
        if self.decision is not None:
            return self._decision(
                self.decision, self.stop_reason or "", self.ended_by or GateEndedBy.THRESHOLD
            )
        if self.n >= self.horizon:
            ended_by = GateEndedBy.N_MAX
        elif exhausted:
            ended_by = GateEndedBy.EXHAUSTED
        else:
            raise RuntimeError("finish() before a decision, the horizon or an exhausted ladder")
        return self._decision(GateAction.REJECT, GateStopReason.INSUFFICIENT_EVIDENCE, ended_by)

    def _provisional_ok(self) -> bool:
        p = self.params
        net = self.bet_W - self.bet_L
        return (
            self.e_win >= p.e_provisional
            and net >= p.w_net_min
            and self._delta_shrunk() >= p.delta_min
        )

    def _delta_shrunk(self) -> float:
        denom = self.n + self.params.shrink_k
        return (self.bet_W - self.bet_L) / denom if denom else 0.0

    @classmethod
    def resume(cls, params: GateParams, state: GateState) -> SequentialGate:
        """The test `state()` describes, going on with no stage boundary left."""
        gate = cls(params, horizon=state.horizon, stage1=state.horizon)
        gate.threshold = state.threshold
        gate._ev.restore(state.evidence)
        gate.n, gate.units = state.n, state.units
        gate.segment_start = gate.n
        # a test that goes on later is an e-process only: its end is not a fixed ladder's end
        gate.final_look = False
        return gate

    def state(self) -> GateState:
        """What a probation, or a test that goes on in a later step, needs to go on."""
        return GateState(
            evidence=self._ev.snapshot(),
            n=self.n,
            units=self.units,
            horizon=self.horizon,
            threshold=self.threshold,
        )

    def _decision(
        self, action: GateAction, stop_reason: str, ended_by: GateEndedBy
    ) -> GateDecision:
        return GateDecision(
            action=action,
            W=self.W,
            L=self.L,
            n_used=self.n,
            e_value=self.e_win,
            e_harm=self.e_harm,
            stop_reason=stop_reason,
            delta_hat=(self.bet_W - self.bet_L) / self.n if self.n else 0.0,
            delta_shrunk=self._delta_shrunk(),
            evidence=tuple(self.evidence),
            ended_by=ended_by,
            threshold=self.threshold,
            horizon=self.horizon,
            units_used=self.units,
            continuation=self.state() if action == GateAction.ACCEPT_PROVISIONAL else None,
            chance=self.chance if action == GateAction.ACCEPT else 1.0,
        )


class ProbationTest:
    """The rest of a provisional accept's test: the same evidence, the same threshold, over the
    stage-2 families it reserved. "keep" only if E_win crosses the threshold; any other end
    ("harm", curtailed, families exhausted) is "rollback". Because it is one test from the
    first family to the last, P(a null edit is accepted at the gate or kept here) ≤ α."""

    def __init__(self, params: GateParams, state: GateState) -> None:
        self.gate = SequentialGate.resume(params, state)

    def observe_family(self, family_id: str, pairs: Sequence[Pair]) -> GateAction | None:
        return self.gate.observe_family(family_id, pairs)

    @property
    def done(self) -> bool:
        return self.gate.done

    def verdict(self) -> tuple[ProbationVerdict, GateDecision]:
        decision = self.gate.finish(exhausted=True)
        keep = decision.action == GateAction.ACCEPT
        return (ProbationVerdict.KEEP if keep else ProbationVerdict.ROLLBACK), decision


_REL_SLACK = 1e-9


@functools.lru_cache(maxsize=65_536)
def _all_w_growth(
    strategy: str, lambda_dir: float, lambda_max: float, wins: int, losses: int, steps: int
) -> float:
    """Factor by which E_win grows over `steps` further W after `wins` W and `losses` L.

    The bets depend only on the counts, so this is a pure function (cached: the gate asks it
    after every family). The KT bet rises along an all-W path and stays at lambda_max once
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
    pairs: Iterable[Pair], params: GateParams | None = None, *, horizon: int | None = None
) -> GateDecision:
    """Run the gate over single-unit families (unit_id, base, cand) in order; stops pulling at
    the first decision or the horizon, so a lazy iterable is evaluated no further than needed."""
    gate = SequentialGate(params, horizon=horizon, singletons=True)
    for unit_id, base, cand in pairs:
        gate.observe(unit_id, base, cand)
        if gate.done:
            break
    return gate.finish(exhausted=not gate.done)


def run_gate_families(
    families: Iterable[tuple[str, Sequence[Pair]]],
    params: GateParams | None = None,
    *,
    horizon: int | None = None,
    stage1: int | None = None,
    singletons: bool = False,
    coin: float | None = None,
) -> GateDecision:
    """`run_gate` over families (family_id, pairs)."""
    gate = SequentialGate(params, horizon=horizon, stage1=stage1, singletons=singletons, coin=coin)
    for family_id, pairs in families:
        gate.observe_family(family_id, pairs)
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
