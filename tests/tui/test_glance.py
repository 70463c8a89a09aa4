"""Results at a glance in the TUI: the Overview's curve starts at epoch 0 (the baseline) on a
fixed 0..1 axis, the held-out test per task type is shown baseline vs final, the Steps chart
draws the accept level, runs with nothing to score show a dash, and a trajectory's system and
user messages read as text under their role."""

from __future__ import annotations

from rich.console import Console

from app.harness.workspace.harness_log import HarnessLog
from app.tui.data import WorkspaceData
from app.tui.format import DASH
from app.tui.screens.runs import run_cells
from app.tui.screens.trajectory import event_widget
from app.tui.widgets.charts import ACCURACY_TICKS, AccuracyChart, EvidenceChart, whole_ticks
from tests.support.log_rows import upsert_predictions
from tests.tui.helpers import SIZE, settle


def _text(renderable: object) -> str:
    console = Console(width=100, record=True)
    console.print(renderable)
    return console.export_text()


def test_overview_has_the_baseline_and_the_per_type_test(demo_ws):
    ov = WorkspaceData(demo_ws.root).overview(with_calls=False)
    assert (ov.baseline_val, ov.baseline_test) == (0.21, 0.22)
    assert ov.per_type[0] == {"task_type": "dates", "baseline": 0.25, "final": 0.75}
    assert [t["task_type"] for t in ov.per_type] == ["dates", "ledger", "units"]


def test_baseline_from_the_log_when_the_checkpoint_lacks_it(fresh_ws):
    """A baseline run scored on the questions of a validation run: its unit accuracy there."""
    root = fresh_ws.root
    (root / "checkpoint.json").write_text("{}")
    (root / "analyses" / "final_test_eval.json").unlink()
    preds = fresh_ws.predictions[:6]
    log = HarnessLog(root / "harness.db")
    for run_id, kind in (("baseline", "baseline"), ("t-val", "validation")):
        log.register_run(run_id, kind=kind, skills_version="v1", prompts_version="v1")
        rows = [
            {**p, "run_id": run_id, "correct": int(run_id == "t-val" or i < 2)}
            for i, p in enumerate(preds)
        ]
        upsert_predictions(log, rows)
    log.close()
    ov = WorkspaceData(root).overview(with_calls=False)
    assert ov.baseline_val == 2 / 6  # the baseline's 2 right of the validation run's 6
    assert ov.baseline_test is None and ov.per_type == []


async def test_accuracy_axis_is_0_to_1_with_epoch_0(demo_ws):
    from app.tui.app import make_app

    app = make_app(demo_ws.root, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        monitor = pilot.app.screen.query_one(AccuracyChart).plt.monitor  # plotext's state
        assert monitor.ylim[0] == [0.0, 1.0]  # fixed, not zoomed on the data
        assert sorted(monitor.yticks[0]) == ACCURACY_TICKS
        assert sorted(monitor.xticks[0]) == [0, 1, 2]  # epoch 0: the baseline


def test_evidence_chart_draws_the_accept_level_on_whole_ticks():
    chart = EvidenceChart()
    rows = [{"idx": i, "e_win": 1.5**i, "e_harm": 0.9**i} for i in range(13)]
    chart.show(rows, threshold=20.0)
    monitor = chart.plt.monitor
    assert "accept e=20" in monitor.label
    assert sorted(monitor.xticks[0]) == [0, 2, 4, 6, 8, 10, 12]  # whole units, never 0.5
    assert sorted(monitor.ylabels[0], key=float) == ["0.1", "10", "1000"]  # powers of ten


def test_whole_ticks_keep_the_ends_and_stay_few():
    assert whole_ticks(list(range(5))) == [0, 1, 2, 3, 4]
    ticks = whole_ticks(list(range(40)))
    assert ticks[0] == 0 and ticks[-1] == 39 and len(ticks) <= 8


def _run(kind: str, **over: object) -> dict:
    row = {
        "seq": 1,
        "run_id": "r",
        "kind": kind,
        "status": "done",
        "skills_version": "v1",
        "prompts_version": "v1",
        "n_predictions": 5,
        "n_correct": 0,
        "accuracy": None,
        "simulated": False,
        "started_at": None,
        "finished_at": None,
    }
    return {**row, **over}


def test_runs_with_nothing_to_score_show_a_dash_not_zero():
    assert run_cells(_run("serve"))[7] == DASH
    assert run_cells(_run("ingest", n_correct=0))[7] == DASH
    assert run_cells(_run("eval", n_correct=2))[7] == "0.400"


def test_system_and_user_messages_read_as_text_under_their_role():
    widget = event_widget({"turn": 0, "type": "system", "text": "You are a ledger clerk."})
    assert widget.border_title.startswith("system")
    shown = _text(widget.content)
    assert "You are a ledger clerk." in shown and "{" not in shown
    user = event_widget({"turn": 0, "type": "user", "text": 'Total of "3, 4"?'})
    assert user.border_title.startswith("user") and 'Total of "3, 4"?' in _text(user.content)
    request = event_widget(
        {"type": "request", "task": "What is 2+2?", "task_type": "sums", "context_chars": 12}
    )
    shown = _text(request.content)
    assert "What is 2+2?" in shown and "task type sums, context 12 chars" in shown
