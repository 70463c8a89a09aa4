"""`report --savings`: what the served (or evaluated) configuration costs, how fast and how
well it answers, against a baseline: the same tokens priced at another model, or another
logged run (core/savings.py holds the figures).

Everything comes from the log's rows (predictions, llm_calls, the run's summary), so the
report is the same after a restart and never needs the serving process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from app.errors import UserError
from app.harness.workspace.harness_log.reader import LogReader, open_reader
from app.harness.workspace.harness_log.rows import RunRow
from app.harness.workspace.workspace import resolve_paths
from app.providers.sim.provider import STRONG_PRICE_FACTOR, sim_price
from core.savings import Figure, Price, RunUsage, priced_baseline, run_baseline, run_figures

DEFAULT_KINDS = ("serve", "eval", "infer")  # the latest run of the first kind that has one


@dataclass(frozen=True)
class SavingsReport:
    run: RunUsage
    figures: list[Figure]
    baseline: str  # what the baseline is, one line ("" when none was asked for)
    baseline_figures: list[Figure] = field(default_factory=list)


def savings_report(
    root: Path,
    run_id: str | None = None,
    baseline_model: str | None = None,
    baseline_run: str | None = None,
) -> SavingsReport:
    if baseline_model and baseline_run:
        raise UserError("--baseline-model and --baseline-run: give one baseline, not both")
    paths = resolve_paths(Path(root))
    if not paths.db.is_file():
        raise UserError(f"{root}: no harness.db yet (nothing has run)")
    teacher = None if baseline_model or baseline_run else distill_teacher_run(paths.analyses)
    with open_reader(paths.db) as reader:
        usage = run_usage(reader, pick_run(reader, run_id))
        if teacher is not None and reader.run(teacher) is not None and teacher != usage.run_id:
            baseline_run, label = teacher, "the distillation teacher (analyses/distill.json): "
        else:
            label = ""
        if baseline_run:
            base = run_usage(reader, pick_run(reader, baseline_run))
            return SavingsReport(
                usage,
                run_figures(usage),
                f"{label}run {base.run_id} ({base.kind}, {', '.join(base.models) or 'no calls'})",
                run_baseline(usage, base),
            )
    if not baseline_model:
        return SavingsReport(usage, run_figures(usage), "")
    price, missing = model_price(baseline_model)
    return SavingsReport(
        usage,
        run_figures(usage),
        f"the same tokens priced at {baseline_model}",
        priced_baseline(usage, price, missing),
    )


def distill_teacher_run(analyses: Path) -> str | None:
    """The teacher's test run of the last `distill` (app/distill.py), when one was trained:
    without a baseline asked for, `report --savings` compares with it."""
    try:
        data = json.loads((analyses / "distill.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    teacher = data.get("teacher") if isinstance(data, dict) else None
    run = teacher.get("run_id") if isinstance(teacher, dict) else None
    return run if isinstance(run, str) and run else None


def pick_run(reader: LogReader, run_id: str | None) -> RunRow:
    if run_id is not None:
        run = reader.run(run_id)
        if run is None:
            raise UserError(f"--run {run_id}: no such run in this workspace's log")
        return run
    for kind in DEFAULT_KINDS:
        if (run := reader.latest_run(kind)) is not None:
            return run
    raise UserError(
        "no serve, eval or infer run to report on yet; serve some requests or run eval first"
    )


def run_usage(reader: LogReader, run: RunRow) -> RunUsage:
    calls = reader.calls.run_totals(run.run_id)
    correct, total = run.summary.get("correct"), run.summary.get("total")
    checked = run.kind != "serve" and isinstance(correct, int) and isinstance(total, int)
    price, missing = run_price(reader, run.run_id)
    return RunUsage(
        run_id=run.run_id,
        kind=run.kind,
        answered=reader.prediction_count(run.run_id),
        latencies_s=tuple(reader.prediction_latencies(run.run_id)),
        correct_units=correct if checked else None,
        total_units=total if checked else None,
        paid_calls=calls.paid_calls,
        cache_hits=calls.cache_hits,
        paid_usd=float(calls.cost_usd),
        tokens_in=calls.tokens_in,
        tokens_out=calls.tokens_out,
        models=calls.models,
        simulated=bool(run.provenance.get("simulated_model")),
        price=price,
        price_missing=missing,
    )


def run_price(reader: LogReader, run_id: str) -> tuple[Price | None, str]:
    """The price of the run's agent model: its config's `price_in_per_mtok` /
    `price_out_per_mtok` when set, the simulated world's notional prices for `sim/...`, else
    litellm's price map."""
    columns = reader.run_columns(run_id) or {}
    try:
        config = json.loads(columns.get("config_json") or "{}")
    except ValueError:
        config = {}
    model = str(config.get("agent_model") or "")
    if not model:
        return None, f"{run_id} recorded no agent model"
    tin, tout = config.get("price_in_per_mtok"), config.get("price_out_per_mtok")
    if isinstance(tin, int | float) and isinstance(tout, int | float):
        return Price(model, float(tin), float(tout), "the run's price_in/out_per_mtok"), ""
    if model.startswith("sim/"):
        factor = config.get("sim_strong_price_factor", STRONG_PRICE_FACTOR)
        tin, tout = sim_price(model, factor if isinstance(factor, int | float) else 1.0)
        return Price(model, tin, tout, "simulated, notional"), ""
    return model_price(model)


def model_price(model: str) -> tuple[Price | None, str]:
    """(price, "") from litellm's bundled price map, or (None, why not)."""
    from app.providers.litellm_provider import load_litellm

    table = load_litellm().model_cost
    for key in (model, model.split("/", 1)[-1]):
        entry = table.get(key)
        if isinstance(entry, dict):
            tin, tout = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
            if isinstance(tin, int | float) and isinstance(tout, int | float) and tin + tout > 0:
                return Price(model, tin * 1e6, tout * 1e6, f"litellm's price map, {key!r}"), ""
    return None, f"no price for {model!r} in litellm's bundled price map"


def format_savings(report: SavingsReport) -> list[str]:
    u = report.run
    sim = "; SIMULATED model, notional prices" if u.simulated else ""
    lines = [f"savings of run {u.run_id} ({u.kind}, {', '.join(u.models) or 'no calls'}{sim})"]
    lines += [_line(f) for f in report.figures]
    if report.baseline:
        lines.append(f"baseline: {report.baseline}")
        lines += [_line(f) for f in report.baseline_figures]
    return lines


def _line(f: Figure) -> str:
    if f.value is None:
        return f"  {f.name:<22} -  ({f.basis})"
    value = _value(f.value, f.unit)
    if f.interval is not None:
        value += f" [{f.interval[0]:.3f}, {f.interval[1]:.3f}]"
    return f"  {f.name:<22} {value}  (basis: {f.basis})"


def _value(v: float, unit: str) -> str:
    if unit == "USD":
        return f"${v:,.6f}"
    if unit == "s":
        return f"{v * 1000:.1f} ms"
    if unit == "share":
        return f"{v:.3f}"
    return f"{v:g} {unit}"
