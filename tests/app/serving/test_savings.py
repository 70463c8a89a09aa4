"""`report --savings`: figures with their basis, from the log's rows (core/savings.py,
app/harness/serving/savings.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from core.savings import Price, RunUsage, priced_baseline, run_baseline, run_figures

SIM = Price("sim/basic", 0.5, 1.5, "simulated, notional")


def usage(**changes: object) -> RunUsage:
    base = RunUsage(
        run_id="eval-1",
        kind="eval",
        answered=4,
        latencies_s=(0.1, 0.2, 0.3, 0.4),
        correct_units=3,
        total_units=4,
        paid_calls=2,
        cache_hits=2,
        paid_usd=0.5,
        tokens_in=1_000_000,
        tokens_out=200_000,
        models=("sim/basic",),
        simulated=True,
        price=SIM,
    )
    return RunUsage(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def by_name(figures: list) -> dict:
    return {f.name: f for f in figures}


def test_costs_are_every_calls_tokens_at_the_price_and_paid_is_shown_beside():
    f = by_name(run_figures(usage()))
    assert f["cost"].value == pytest.approx(0.5 + 0.3)  # 1M in at 0.5 + 0.2M out at 1.5
    assert f["cost_per_1000"].value == pytest.approx(0.8 / 4 * 1000)
    assert f["paid"].value == 0.5 and "2 answered from the response cache" in f["paid"].basis
    assert f["latency_p50"].value == pytest.approx(0.25)
    assert f["latency_p95"].value == pytest.approx(0.385)
    assert f["accuracy"].value == 0.75
    lo, hi = f["accuracy"].interval
    assert 0.0 < lo < 0.75 < hi <= 1.0
    assert all(fig.basis for fig in f.values())


def test_a_missing_price_omits_the_figure_with_its_reason_never_zero():
    f = by_name(run_figures(usage(price=None, price_missing="no price for 'x'")))
    assert f["cost"].value is None and f["cost"].basis == "omitted: no price for 'x'"
    assert f["cost_per_1000"].value is None
    base = by_name(priced_baseline(usage(), None, "no price for 'big'"))
    assert [base[n].value for n in ("baseline_cost", "saved", "saved_per_1000")] == [None] * 3
    assert base["saved"].basis == "omitted: no price for 'big'"


def test_a_serve_run_reports_no_accuracy_and_says_why():
    f = by_name(run_figures(usage(kind="serve", correct_units=None, total_units=None)))
    assert f["accuracy"].value is None and "no reference answers" in f["accuracy"].basis


def test_the_same_tokens_at_a_dearer_model_give_the_saving():
    dear = Price("big", 5.0, 15.0, "test")
    f = by_name(priced_baseline(usage(), dear, ""))
    assert f["baseline_cost"].value == pytest.approx(5.0 + 3.0)
    assert f["saved"].value == pytest.approx(8.0 - 0.8)
    assert f["saved_per_1000"].value == pytest.approx(7.2 / 4 * 1000)


def test_another_run_as_the_baseline_is_compared_per_question():
    teacher = usage(run_id="eval-2", answered=2, price=Price("big", 5.0, 15.0, "test"))
    f = by_name(run_baseline(usage(), teacher))
    assert f["baseline_cost"].value == pytest.approx(8.0)
    assert f["saved"].value == pytest.approx(8.0 / 2 * 4 - 0.8)  # per question x 4 answered
    assert f["baseline_accuracy"].value == 0.75


@pytest.fixture(scope="module")
def inferred(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("savings") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    done = ["infer", "-w", str(ws), "--task-types", "ledger", "--no-progress"]
    assert main([*done, "--run-id", "infer-a"]) == 0
    return ws


def test_the_report_is_read_from_the_logged_rows(inferred):
    report = api.savings(inferred)
    assert report.run.run_id == "infer-a"  # no serve or eval run: the latest infer run
    with sqlite3.connect(inferred / "harness.db") as conn:
        n, tin, tout = conn.execute(
            "SELECT (SELECT COUNT(*) FROM predictions WHERE run_id = 'infer-a'), "
            "SUM(tokens_in), SUM(tokens_out) FROM llm_calls WHERE run_id = 'infer-a'"
        ).fetchone()
        summary = json.loads(
            conn.execute("SELECT summary_json FROM _runs WHERE run_id = 'infer-a'").fetchone()[0]
        )
    f = by_name(report.figures)
    assert f["answered"].value == n
    assert f["cost"].value == pytest.approx((tin * 0.5 + tout * 1.5) / 1e6)
    assert f["accuracy"].value == pytest.approx(summary["accuracy"])


def test_the_command_prints_every_figure_with_its_basis(inferred, capsys):
    assert main(["report", "-w", str(inferred), "--savings", "--baseline-model", "no-such-x"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("savings of run infer-a (infer, sim/basic; SIMULATED")
    figures = [line for line in lines[1:] if not line.startswith("baseline:")]
    assert all("(basis: " in line or "(omitted: " in line for line in figures)
    baseline = [line for line in lines if line.strip().startswith(("baseline_cost", "saved"))]
    assert len(baseline) == 3
    assert all("omitted: no price for 'no-such-x'" in line and "$" not in line for line in baseline)


def test_the_command_refuses_a_run_that_is_not_there(inferred, capsys):
    assert main(["report", "-w", str(inferred), "--savings", "--run", "eval-9"]) == 2
    assert "--run eval-9: no such run" in capsys.readouterr().err
