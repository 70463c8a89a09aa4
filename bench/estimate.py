"""`estimate` against the real (simulated) run: estimated / actual new model calls and cost.

For three configs of the demo (sim-large, app/demo.toml): the default; epochs=2 with
batch_size=96; and a gate/fork variation (gate.n_max=30, one edit per candidate). Each: a fresh
workspace, `estimate` (app/estimate.py), then the real training on the simulated model, and
the ratios of the estimate to what the log records (new calls, cache hits excluded; cost at the
simulated model's notional prices, app/providers/sim/provider.py, so cost is non-zero and
counts tokens), and of its first step's calls to the run's first step (the least `max_calls`
that can keep anything; app/harness/training/call_budget.py `first_step_calls`). Target: each
ratio within 0.8-1.25 (printed as two RESULT lines, >= 0.8 and <= 1.25). `--tiny`: one config
on sim-basic, one epoch (figures that measure nothing).

    PYTHONPATH=. .venv/bin/python bench/estimate.py [--tiny]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from loguru import logger

from app import api

DEMO = Path(__file__).resolve().parents[1] / "app" / "demo.toml"
CONFIGS = {
    "default": {},
    "epochs2_batch96": {"epochs": 2, "batch_size": 96},
    "gate_variation": {"gate.n_max": 30, "edit_budget_start": 1, "edit_budget_end": 1},
}


def actual(workspace: Path) -> tuple[int, float]:
    summary = api.report(workspace).summary
    calls = sum(c["calls"] - (c["cache_hits"] or 0) for c in summary["llm_calls"])
    cost = sum(c["cost_usd"] or 0.0 for c in summary["llm_calls"])
    return calls, cost


def actual_first_step(workspace: Path) -> int:
    """The counted calls of the run's first step (app/harness/training/call_budget.py)."""
    from app.harness.training.call_budget import first_step_calls, ledger_paid_calls

    return first_step_calls(ledger_paid_calls(workspace / "response_cache.db", "train1"), "train1")


def one(root: Path, name: str, overrides: dict, questions: str, units: int) -> tuple[float, float]:
    ws = root / name
    api.init_workspace(ws, seed="sim-starter", questions=questions)
    settings = {"sim_units_per_type": units, **overrides}
    est = api.estimate(ws, DEMO, overrides=settings)
    api.train(ws, DEMO, overrides=settings)
    calls, cost = actual(ws)
    first = actual_first_step(ws)
    calls_ratio = est.calls / calls
    cost_ratio = (est.cost_usd or 0.0) / cost
    print(
        f"# {name}: estimated {est.calls} calls (range {est.calls_low}-{est.calls_high}), "
        f"actual {calls}; estimated ${est.cost_usd:.4f}, actual ${cost:.4f}; first step "
        f"estimated {est.first_step_calls} calls, actual {first}"
    )
    figures = [("calls_ratio", calls_ratio), ("cost_ratio", cost_ratio)]
    if est.first_step_calls is not None and first:
        figures.append(("first_step_ratio", est.first_step_calls / first))
    for figure, value in figures:
        print(f"RESULT estimate.{figure}.{name} {value:.3f} ratio target >=0.8")
        print(f"RESULT estimate.{figure}_upper.{name} {value:.3f} ratio target <=1.25")
    return calls_ratio, cost_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    logger.remove()
    configs = {"tiny": {"epochs": 1}} if args.tiny else CONFIGS
    questions, units = ("sim-basic", 72) if args.tiny else ("sim-large", 216)
    with tempfile.TemporaryDirectory() as tmp:
        ratios = [one(Path(tmp), n, o, questions, units) for n, o in configs.items()]
    for i, figure in enumerate(("calls_ratio", "cost_ratio")):
        values = [r[i] for r in ratios]
        combined = sum(values) / len(values)
        print(f"RESULT estimate.{figure}.combined {combined:.3f} ratio target >=0.8")
        print(f"RESULT estimate.{figure}_upper.combined {combined:.3f} ratio target <=1.25")


if __name__ == "__main__":
    main()
