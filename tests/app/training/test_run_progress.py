"""How a checkpoint's progress reads in `report`, the TUI overview and the workspace picker."""

from __future__ import annotations

from app.harness.training.run_progress import progress_view
from app.harness.training.vocabulary import TrainPhase
from app.tui.data import _steps_done


def test_a_run_that_stopped_early_reads_as_finished_with_a_full_bar() -> None:
    progress = {"phase": TrainPhase.FINISHED, "epoch": 4, "global_step": 11, "total_steps": 16}
    view = progress_view(progress)
    assert view.finished
    assert view.text == "finished after epoch 4 (11 steps)"
    assert view.bar() == (11, 11)
    assert _steps_done(progress) == "11/11"


def test_a_running_run_shows_where_it_is_against_the_plan() -> None:
    progress = {
        "phase": TrainPhase.IN_EPOCH,
        "epoch": 2,
        "step_completed": 1,
        "global_step": 6,
        "total_steps": 16,
    }
    view = progress_view(progress)
    assert not view.finished
    assert view.text == "epoch 2 (in_epoch, step 1 done)  6/16 steps"
    assert view.bar() == (6, 16)
    assert _steps_done(progress) == "6/16"


def test_an_unknown_plan_is_shown_as_unknown_not_as_a_full_bar() -> None:
    progress = {"phase": TrainPhase.SETUP, "epoch": 0, "step_completed": -1, "global_step": 3}
    view = progress_view(progress)
    assert view.total is None and not view.finished
    assert "no step yet" in view.text and "3/? steps" in view.text
    assert view.bar() == (3, 3)
    assert _steps_done(progress) == "3/?"


def test_a_single_step_is_not_plural() -> None:
    view = progress_view({"phase": "finished", "epoch": 1, "global_step": 1})
    assert view.text == "finished after epoch 1 (1 step)"


def test_a_finished_run_says_its_last_epoch_and_why_it_stopped() -> None:
    base = {"phase": "finished", "global_step": 11, "epochs_planned": 6}
    early = {**base, "epoch": 4, "end": "early_stop", "epochs_since_best": 2}
    assert progress_view(early).text == (
        "finished after epoch 4 of 6: early stop, no new best validation accuracy for 2 epochs "
        "(11 steps)"
    )
    full = {**base, "epoch": 6, "end": "all_epochs", "epochs_since_best": 1}
    assert progress_view(full).text == "finished after epoch 6 of 6: all epochs run (11 steps)"


def test_a_budget_spent_before_any_step_closed_says_nothing_was_learned() -> None:
    base = {"phase": "finished", "epoch": 1, "epochs_planned": 4, "end": "max_calls"}
    assert progress_view({**base, "global_step": 0}).text == (
        "finished in epoch 1 of 4: max_calls spent before the first step closed, so nothing "
        "was learned (0 steps)"
    )
    assert progress_view({**base, "global_step": 3}).text == (
        "finished in epoch 1 of 4: max_calls spent, the best version so far tested (3 steps)"
    )
