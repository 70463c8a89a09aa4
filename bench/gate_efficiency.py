"""How many units does the sequential gate save over a fixed-n McNemar test, at what cost?

A benchmark, not a test: it prints figures. Each simulated unit is discordant with probability
`discordance`. Effects are given as the net share among discordant units, s = P(W | disc) −
P(L | disc), so the evidence per discordant unit is the same at every discordance and only the
number of ties changes; the absolute effect P(W) − P(L) is s·discordance (at discordance 0.3
the five shares are the absolute effects 0, 0.05, 0.10, 0.20 and −0.10). For every gate
configuration it runs the real `run_gate` and, on the same simulated units, a one-sided exact
McNemar test on all n_max units at the nominal α = 1/e_confirm.

Target (the issue): on average over the five effects, at least 40% fewer units than the fixed
test (which always uses n_max), with a false-accept rate no higher than the fixed test's: under
"no difference" strictly no higher, under the harmful effect up to 2 Monte-Carlo standard errors
(both rates are ~1e-3 there, i.e. a handful of runs). An accept is "accept" or
"accept_provisional"; `confirmed` is "accept" alone (the part Ville's inequality covers).

Columns: `effect` absolute P(W) − P(L); `share` s; `units` mean units the gate used; `saved`
1 − units / n_max; `seq acc` share of runs accepted; `confirmed`; `fixed acc` the fixed test's
rejection of "no gain". Under s = 0 and s < 0 an accept is a false accept; otherwise it is power.

The defaults (`GateParams()`) come first, on two seeds; then the configurations that explain
them. Every configuration with the same n_max and discordance sees the same simulated ladders
(common random numbers), so differences between rows are the gate's, not the simulation's.
"defaults, no curtailment" must show the same accept columns as the defaults: curtailment
changes no decision, only units.

    .venv/bin/python bench/gate_efficiency.py [--reps 2000] [--seeds 20240611 7]
                                              [--discordance 0.3 0.15]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from core.evolution.gate import GateParams, run_gate
from core.stats import mcnemar_exact

SHARES = (0.0, 1 / 6, 1 / 3, 2 / 3, -1 / 3)  # net share of W among discordant units
NULL_SHARE, HARM_SHARE = 0.0, -1 / 3
_PAIR = {1: (False, True), -1: (True, False), 0: (True, True)}  # g -> (base, cand)


@dataclass(frozen=True)
class Cell:
    units: float
    seq_accept: float
    confirmed: float
    fixed_accept: float


@dataclass(frozen=True)
class Verdict:
    saved: float
    null: float
    fixed_null: float
    power: float
    fixed_power: float
    met: bool


def simulate_outcomes(
    rng: np.random.Generator, reps: int, n: int, discordance: float, share: float
) -> np.ndarray:
    """reps × n paired outcomes g ∈ {+1, −1, 0} with P(W) − P(L) = share·discordance."""
    if not -1.0 <= share <= 1.0:
        raise ValueError(f"net share {share} outside [-1, 1]")
    p_w, p_l = discordance * (1 + share) / 2, discordance * (1 - share) / 2
    u = rng.random((reps, n))
    return np.where(u < p_w, 1, np.where(u < p_w + p_l, -1, 0)).astype(np.int8)


@cache
def fixed_accepts(w: int, l: int, alpha: float) -> bool:  # noqa: E741 - W and L
    return mcnemar_exact(w, l, "greater") <= alpha


def run_cell(outcomes: np.ndarray, params: GateParams) -> Cell:
    """Run the real gate and the fixed-n test on the same simulated ladders."""
    units = accepts = confirmed = fixed = 0
    alpha = 1.0 / params.e_confirm
    for row in outcomes.tolist():
        pairs = [(f"u{i}", *_PAIR[g]) for i, g in enumerate(row)]
        decision = run_gate(pairs, params)
        units += decision.n_used
        accepts += decision.action != "reject"
        confirmed += decision.action == "accept"
        fixed += fixed_accepts(row.count(1), row.count(-1), alpha)
    reps = len(outcomes)
    return Cell(units / reps, accepts / reps, confirmed / reps, fixed / reps)


def describe(params: GateParams) -> str:
    fut = "off" if params.e_futility is None else f"{params.e_futility:g}"
    return (f"strategy={params.lambda_strategy} lambda_dir={params.lambda_dir:g} "
            f"lambda_max={params.lambda_max:g} e_confirm={params.e_confirm:g} "
            f"e_rollback={params.e_rollback:g} e_provisional={params.e_provisional:g} "
            f"e_futility={fut} curtail={params.curtail} w_net_min={params.w_net_min} "
            f"delta_min={params.delta_min:g} n_max={params.n_max}")


def judge(cells: dict[float, Cell], n_max: int, reps: int) -> Verdict:
    mean_units = float(np.mean([c.units for c in cells.values()]))
    saved = 1 - mean_units / n_max
    null, fixed_null = cells[NULL_SHARE].seq_accept, cells[NULL_SHARE].fixed_accept
    harm, fixed_harm = cells[HARM_SHARE].seq_accept, cells[HARM_SHARE].fixed_accept
    harm_se = float(np.sqrt(max(harm, fixed_harm, 1.0 / reps) / reps))
    positive = [s for s in cells if s > 0]
    power = float(np.mean([cells[s].seq_accept for s in positive]))
    fixed_power = float(np.mean([cells[s].fixed_accept for s in positive]))
    met = saved >= 0.40 and null <= fixed_null and harm <= fixed_harm + 2 * harm_se
    return Verdict(saved, null, fixed_null, power, fixed_power, met)


def print_config(
    name: str, params: GateParams, discordance: float, cells: dict[float, Cell], reps: int
) -> Verdict:
    n = params.n_max
    print(f"\n== {name} | discordance {discordance:g}\n   {describe(params)}")
    print(f"{'effect':>7} {'share':>6} {'units':>6} {'saved':>6} {'seq acc':>8} {'confirmed':>9} "
          f"{'fixed acc':>9}   meaning")
    for share, c in cells.items():
        meaning = "false accept" if share <= 0 else "power"
        print(f"{share * discordance:+7.3f} {share:+6.2f} {c.units:6.1f} {1 - c.units / n:6.1%} "
              f"{c.seq_accept:8.3f} {c.confirmed:9.3f} {c.fixed_accept:9.3f}   {meaning}")
    v = judge(cells, n, reps)
    se = float(np.sqrt(max(v.fixed_null * (1 - v.fixed_null), 1e-9) / reps))
    print(f"  mean over the 5 effects: saved {v.saved:.1%} of n_max units vs fixed-n; "
          f"false accept (null) {v.null:.3f} vs fixed {v.fixed_null:.3f} (MC s.e. ~{se:.3f}); "
          f"mean power {v.power:.3f} vs fixed {v.fixed_power:.3f}")
    print(f"  TARGET {'MET' if v.met else 'NOT MET'}: {name} at discordance {discordance:g} "
          "(>= 40% fewer units; false accept <= fixed under null, and under harm up to "
          "2 MC s.e.)")
    return v


def configs() -> list[tuple[str, GateParams]]:
    """The defaults, then the variants that show where their figures come from."""
    d = GateParams()
    return [
        ("defaults, no curtailment", replace(d, curtail=False)),
        ("defaults, no futility stop (curtailment only)", replace(d, e_futility=None)),
        ("previous defaults (e_prov 2, lambda 0.3, no futility, no curtailment)",
         replace(d, e_provisional=2.0, lambda_dir=0.3, e_futility=None, curtail=False)),
        ("defaults with the kt bet", replace(d, lambda_strategy="kt")),
        ("defaults, n_max=100", replace(d, n_max=100)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[20240611, 7],
                        help="the defaults run on every seed, the other configurations on "
                             "the first")
    parser.add_argument("--discordance", type=float, nargs="+", default=[0.3, 0.15])
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"paired units: {args.reps} reps per cell, seeds {args.seeds}; fixed-n = one-sided "
          "exact McNemar on n_max units at alpha = 1/e_confirm")
    data: dict[tuple[float, int, int], dict[float, np.ndarray]] = {}

    def ladders(discordance: float, n_max: int, seed: int) -> dict[float, np.ndarray]:
        key = (discordance, n_max, seed)
        if key not in data:
            rng = np.random.default_rng([seed, n_max, round(discordance * 1000)])
            data[key] = {s: simulate_outcomes(rng, args.reps, n_max, discordance, s)
                         for s in SHARES}
        return data[key]

    summary: list[tuple[str, float, Verdict]] = []
    defaults = GateParams()
    for discordance in args.discordance:
        runs = [(f"DEFAULTS (seed {seed})", defaults, seed) for seed in args.seeds]
        runs += [(name, params, args.seeds[0]) for name, params in configs()]
        for name, params, seed in runs:
            sims = ladders(discordance, params.n_max, seed)
            cells = {s: run_cell(sims[s], params) for s in SHARES}
            summary.append((name, discordance, print_config(name, params, discordance, cells,
                                                            args.reps)))
    print("\nsummary (saved | false accept vs fixed under null | mean power vs fixed):")
    for name, discordance, v in summary:
        print(f"  {'MET    ' if v.met else 'NOT MET'} d={discordance:<5g} {name}: "
              f"{v.saved:6.1%} | {v.null:.3f} vs {v.fixed_null:.3f} | "
              f"{v.power:.3f} vs {v.fixed_power:.3f}")
    for name, discordance, v in summary:
        if name.startswith("DEFAULTS"):
            tag = f"gate.d{discordance:g}.{name.split('seed ')[1].rstrip(')')}"
            print(f"RESULT {tag}.units_saved {v.saved * 100:.1f} % target >=40")
            print(f"RESULT {tag}.false_accept_minus_fixed {v.null - v.fixed_null:+.3f} "
                  "rate target <=0")
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
