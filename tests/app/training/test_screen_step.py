"""Several proposals per candidate (`evolve_proposals`, app/harness/training/screen.py), end to
end through the CLI on sim/basic: the evolver is asked more than once, each changed proposal
answers the questions its pack showed, only those, and never a question a later test reads; the
first with the most right goes on, and the step says so. A run killed while it screens resumes
to exactly the workspace an uninterrupted run ends with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.harness.training.screen import ALTERNATIVE, Screened, proposal_prompts
from tests.support.snapshot import diff_states, workspace_state
from tests.support.training import ROOT, init_sim_basic, run_patched_cli, train_on_sim_basic

DEMO = (ROOT / "app" / "demo.toml").read_text()
CONFIG = DEMO.replace("epochs = 4", "epochs = 1").replace(
    "[gate]\n", "evolve_proposals = 3\n\n[gate]\n"
)


def test_the_first_request_is_the_prompt_itself_and_the_others_differ() -> None:
    assert proposal_prompts("P", 1) == ["P"]
    three = proposal_prompts("P", 3)
    assert three[0] == "P"
    assert three[1] == "P\n\n" + ALTERNATIVE.format(index=2, total=3)
    assert len(set(three)) == 3


def test_the_note_names_every_score_and_is_empty_without_a_choice() -> None:
    assert Screened(3, (4,), 9).note() == ""
    note = Screened(3, (4, 6), 9).note()
    assert "of 3 proposals, 2 changed the file and answered 4 / 6 of the 9 shown" in note


def _step(run_id: str) -> tuple[int, int]:
    """(epoch, step) of a step run id `train1-e1-s2-...`; the slow update is step 99."""
    parts = run_id.split("-")
    epoch = int(parts[1][1:])
    return (epoch, int(parts[2][1:]) if parts[2].startswith("s") and parts[2][1:].isdigit() else 99)


def _questions(conn: sqlite3.Connection, run_id: str) -> set[str]:
    rows = conn.execute("SELECT question_id FROM predictions WHERE run_id = ?", (run_id,))
    return {q for (q,) in rows}


def test_proposals_are_screened_on_shown_questions_only(tmp_path: Path) -> None:
    assert "evolve_proposals = 3" in CONFIG
    ws = train_on_sim_basic(tmp_path, CONFIG)
    with sqlite3.connect(ws / "harness.db") as conn:
        runs = dict(conn.execute("SELECT run_id, status FROM _runs WHERE kind = 'screen'"))
        gates = [r for (r,) in conn.execute("SELECT run_id FROM _runs WHERE kind = 'gate'")]
        summaries = [s for (s,) in conn.execute("SELECT request_summary FROM evolutions")]
        screened = {run: _questions(conn, run) for run in runs}
        gated = {run: _questions(conn, run) for run in gates}
    assert runs and set(runs.values()) == {"done"}
    assert any("-screen-system.md-" in r for r in runs)  # the slow update screens too
    assert any(" shown questions right: the first with the most went on" in s for s in summaries)
    for run, questions in screened.items():
        assert questions
        later = [g for g in gated if _step(g) >= _step(run)]
        assert all(not questions & gated[g] for g in later), run


@pytest.mark.parametrize("kill_at", ["screen:4", "step_end:2"])
def test_a_run_killed_while_it_screens_resumes_exactly(tmp_path: Path, kill_at: str) -> None:
    reference = train_on_sim_basic(tmp_path / "ref", CONFIG)
    ws = init_sim_basic(tmp_path / "killed")
    cfg = tmp_path / "killed" / "run.toml"
    cfg.write_text(CONFIG)
    train = ["train", "-w", str(ws), "--config", str(cfg), "--no-progress"]
    assert run_patched_cli("pass", train, kill_at=kill_at) == -9
    assert run_patched_cli("pass", [*train, "--resume"]) == 0
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []
