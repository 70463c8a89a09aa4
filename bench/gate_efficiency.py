"""How many units does the sequential gate save over a fixed-n McNemar test, at what cost?

A benchmark, not a test: it prints figures. Each simulated unit is discordant with probability
`discordance`; the true effect is P(W) − P(L) among units, so P(W) = (d + effect)/2 and
P(L) = (d − effect)/2. For every gate configuration it runs the real `run_gate` and, on the same
simulated units, a one-sided exact McNemar test on all n_max units at α = 1/e_confirm.

Columns: `units` mean units the gate used (the fixed test always uses n_max); `saved` 1 − units /
n_max; `seq acc` share of runs accepted (accept + accept_provisional); `confirmed` accept only
(the part covered by Ville's inequality); `fixed acc` the fixed test's rejection of "no gain".
Under effect 0 and −0.10 an accept is a false accept; elsewhere it is power.

    .venv/bin/python bench/gate_efficiency.py [--reps 2000] [--seed 20240611] [--discordance 0.3]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from core.evolution.gate import GateParams, run_gate
from core.stats import mcnemar_exact

EFFECTS = (0.0, 0.05, 0.10, 0.20, -0.10)
NULL_LIKE = (0.0, -0.10)  # effects under which any accept is a false accept
_PAIR = {1: (False, True), -1: (True, False), 0: (True, True)}  # g -> (base, cand)


@dataclass(frozen=True)
class Cell:
    units: float
    seq_accept: float
    confirmed: float
    fixed_accept: float


def simulate_outcomes(
    rng: np.random.Generator, reps: int, n: int, discordance: float, effect: float
) -> np.ndarray:
    """reps × n paired outcomes g ∈ {+1, −1, 0} with P(W) − P(L) = effect."""
    p_w, p_l = (discordance + effect) / 2, (discordance - effect) / 2
    if min(p_w, p_l) < 0:
        raise ValueError(f"effect {effect} impossible at discordance {discordance}")
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


def print_config(name: str, params: GateParams, cells: dict[float, Cell], reps: int) -> bool:
    n = params.n_max
    print(f"\n== {name}: strategy={params.lambda_strategy} lambda_dir={params.lambda_dir} "
          f"lambda_max={params.lambda_max} e_confirm={params.e_confirm:g} "
          f"e_rollback={params.e_rollback:g} e_provisional={params.e_provisional:g} n_max={n}")
    print(f"{'effect':>7} {'units':>6} {'saved':>6} {'seq acc':>8} {'confirmed':>9} "
          f"{'fixed acc':>9}   meaning")
    for effect, c in cells.items():
        meaning = "false accept" if effect in NULL_LIKE else "power"
        print(f"{effect:+7.2f} {c.units:6.1f} {1 - c.units / n:6.1%} {c.seq_accept:8.3f} "
              f"{c.confirmed:9.3f} {c.fixed_accept:9.3f}   {meaning}")
    mean_units = float(np.mean([c.units for c in cells.values()]))
    saved = 1 - mean_units / n
    null, fixed_null = cells[0.0].seq_accept, cells[0.0].fixed_accept
    se = float(np.sqrt(max(fixed_null * (1 - fixed_null), 1e-9) / reps))
    power = float(np.mean([c.seq_accept for e, c in cells.items() if e not in NULL_LIKE]))
    fixed_power = float(np.mean([c.fixed_accept for e, c in cells.items() if e not in NULL_LIKE]))
    # Under harm both rates are ~1e-3, i.e. a handful of runs: allow 2 MC standard errors there.
    harm, fixed_harm = cells[-0.10].seq_accept, cells[-0.10].fixed_accept
    harm_se = float(np.sqrt(max(harm, fixed_harm, 1.0 / reps) / reps))
    ok = saved >= 0.40 and null <= fixed_null and harm <= fixed_harm + 2 * harm_se
    print(f"  mean over the 5 effects: {mean_units:.1f} units, saved {saved:.1%} vs fixed-n; "
          f"false accept (null) {null:.3f} vs fixed {fixed_null:.3f} (MC s.e. ~{se:.3f}); "
          f"mean power {power:.3f} vs fixed {fixed_power:.3f}")
    print("  target (>= 40% fewer units; false accept <= fixed under null, and under harm up to "
          f"2 MC s.e.): {'MET' if ok else 'NOT met'}")
    return ok


def configs() -> list[tuple[str, GateParams]]:
    """Defaults first, then the candidates the efficiency search suggested (see report)."""
    d = GateParams()
    return [
        ("defaults", d),
        ("defaults, n_max=100", replace(d, n_max=100)),
        ("kt bet", replace(d, lambda_strategy="kt")),
        ("kt bet, n_max=100", replace(d, lambda_strategy="kt", n_max=100)),
        ("stricter provisional only", replace(d, e_provisional=5.0)),
        # Both suggestions use e_rollback as a futility stop (weak evidence toward L ends the
        # run with a reject): that is where the units are saved, and what costs some power.
        ("suggested, n_max=100",
         replace(d, lambda_dir=0.3, e_rollback=1.5, e_provisional=5.0, n_max=100)),
        ("suggested, n_max=60 (futility-heavy)",
         replace(d, lambda_dir=0.5, e_rollback=1.5, e_provisional=6.0)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--discordance", type=float, default=0.3)
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"paired units: discordance {args.discordance}, {args.reps} reps per cell, "
          f"seed {args.seed}; fixed-n = one-sided exact McNemar at alpha = 1/e_confirm")
    # Common random numbers: every configuration with the same n_max sees the same ladders,
    # so differences between rows are the gate's, not the simulation's.
    data: dict[int, dict[float, np.ndarray]] = {}
    for name, params in configs():
        if params.n_max not in data:
            rng = np.random.default_rng([args.seed, params.n_max])
            data[params.n_max] = {
                e: simulate_outcomes(rng, args.reps, params.n_max, args.discordance, e)
                for e in EFFECTS
            }
        cells = {e: run_cell(data[params.n_max][e], params) for e in EFFECTS}
        print_config(name, params, cells, args.reps)
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
