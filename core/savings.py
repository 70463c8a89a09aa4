"""Savings figures: cost, latency and accuracy of one run against a baseline, each with the basis
it was computed from (pure: the harness reads the rows, app/harness/serving/savings.py).

Costs are list costs: every call's tokens (cache hits included, which log their tokens but cost
nothing) at a model's price per million tokens, so a run answered from the response cache
costs what its answers would cost to produce, and two configurations compare on the same
footing. What was actually paid is shown beside it. A figure that cannot be computed (no
price for a model, no reference answers) has no value and says why; it is never shown as 0.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from core.stats import wilson_interval

PER = 1000  # costs are also given per this many answered questions


@dataclass(frozen=True)
class Figure:
    name: str
    value: float | None  # None: omitted, `basis` says why
    unit: str
    basis: str
    interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class Price:
    model: str
    in_per_mtok: float
    out_per_mtok: float
    source: str  # where the price came from, one line


@dataclass(frozen=True)
class RunUsage:
    """What the log holds about one run, as savings needs it."""

    run_id: str
    kind: str
    answered: int  # predictions rows
    latencies_s: tuple[float, ...]  # predictions.latency_s (the agent loop per question)
    correct_units: int | None  # from the run's summary; None: not checked (serve)
    total_units: int | None
    paid_calls: int
    cache_hits: int
    paid_usd: float  # what the paid calls cost
    tokens_in: int  # every call's, cache hits included
    tokens_out: int
    models: tuple[str, ...]
    simulated: bool
    price: Price | None  # the run's own model's price; None: unknown
    price_missing: str = ""  # why there is no price


def percentile(values: tuple[float, ...], q: int) -> float:
    """The q-th percentile (1..99), interpolated between order statistics."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def list_cost(u: RunUsage, price: Price) -> float:
    return (u.tokens_in * price.in_per_mtok + u.tokens_out * price.out_per_mtok) / 1e6


def _tokens_at(u: RunUsage, price: Price) -> str:
    return (
        f"{u.tokens_in} input + {u.tokens_out} output tokens of {u.paid_calls + u.cache_hits} "
        f"calls of {u.run_id} at {price.model}'s ${price.in_per_mtok:g} / "
        f"${price.out_per_mtok:g} per million ({price.source})"
    )


def run_figures(u: RunUsage) -> list[Figure]:
    figures = [
        Figure("answered", float(u.answered), "questions", f"predictions rows of {u.run_id}")
    ]
    if u.price is None:
        figures.append(Figure("cost", None, "USD", f"omitted: {u.price_missing}"))
    else:
        figures.append(Figure("cost", list_cost(u, u.price), "USD", _tokens_at(u, u.price)))
    figures.append(_per_thousand("cost_per_1000", figures[-1].value, u.answered, "cost"))
    figures.append(
        Figure(
            "paid",
            u.paid_usd,
            "USD",
            f"sum of cost_usd over {u.paid_calls} paid llm_calls rows of {u.run_id} "
            f"({u.cache_hits} answered from the response cache cost nothing)",
        )
    )
    figures += _latency(u)
    figures.append(_accuracy(u))
    return figures


def _per_thousand(name: str, cost: float | None, answered: int, of: str) -> Figure:
    if cost is None:
        return Figure(name, None, "USD", f"omitted: no {of}")
    if answered == 0:
        return Figure(name, None, "USD", "omitted: no question answered")
    return Figure(name, cost / answered * PER, "USD", f"{of} / {answered} answered x {PER}")


def _latency(u: RunUsage) -> list[Figure]:
    if not u.latencies_s:
        reason = "omitted: no answer with a logged latency"
        return [Figure("latency_p50", None, "s", reason), Figure("latency_p95", None, "s", reason)]
    basis = (
        f"predictions.latency_s of {len(u.latencies_s)} answers "
        "(the agent loop; queueing and cache misses vs hits not separated)"
    )
    return [
        Figure("latency_p50", percentile(u.latencies_s, 50), "s", basis),
        Figure("latency_p95", percentile(u.latencies_s, 95), "s", basis),
    ]


def _accuracy(u: RunUsage) -> Figure:
    if u.correct_units is None or not u.total_units:
        return Figure(
            "accuracy",
            None,
            "share",
            f"omitted: {u.kind} runs have no reference answers, so nothing was checked",
        )
    return Figure(
        "accuracy",
        u.correct_units / u.total_units,
        "share",
        f"{u.correct_units}/{u.total_units} units right in {u.run_id}'s summary; "
        "95% Wilson interval",
        wilson_interval(u.correct_units, u.total_units),
    )


def priced_baseline(u: RunUsage, price: Price | None, missing: str) -> list[Figure]:
    """The same tokens priced at a baseline model, and what the run saves against it."""
    names = ("baseline_cost", "saved", "saved_per_1000")
    if price is None:
        return [Figure(n, None, "USD", f"omitted: {missing}") for n in names]
    figures = [Figure("baseline_cost", list_cost(u, price), "USD", _tokens_at(u, price))]
    return figures + _saved(u, figures[0].value, "baseline_cost")


def _saved(u: RunUsage, baseline_cost: float | None, of: str) -> list[Figure]:
    if u.price is None or baseline_cost is None:
        reason = f"omitted: {u.price_missing or 'no baseline cost'}"
        return [Figure(n, None, "USD", reason) for n in ("saved", "saved_per_1000")]
    saved = baseline_cost - list_cost(u, u.price)
    share = f" ({saved / baseline_cost:.1%} of it)" if baseline_cost > 0 else ""
    return [
        Figure("saved", saved, "USD", f"{of} - cost{share}"),
        _per_thousand("saved_per_1000", saved, u.answered, "saved"),
    ]


def run_baseline(u: RunUsage, base: RunUsage) -> list[Figure]:
    """Another logged run (e.g. the expensive model's) as the baseline: its figures, and what
    this run saves per question against its cost per question."""
    figures = [
        Figure(f"baseline_{f.name}", f.value, f.unit, f.basis, f.interval)
        for f in run_figures(base)
    ]
    if base.price is None or not base.answered:
        reason = base.price_missing or "the baseline run answered nothing"
        return figures + [
            Figure(n, None, "USD", f"omitted: {reason}") for n in ("saved", "saved_per_1000")
        ]
    per_question = list_cost(base, base.price) / base.answered
    return figures + _saved(
        u, per_question * u.answered, f"{base.run_id}'s cost per question x {u.answered}"
    )
