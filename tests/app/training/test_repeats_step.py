"""A candidate whose test already ended is not gated again (app/harness/training/step.py
`refuse_repeats`), end to end through the CLI on sim/oracle: an evolver that proposes the same
harmful rule at every step, copying the rejected list's "(rejected: …)" into it as
Qwen2.5-Coder-1.5B did on real-conventions, gets one gate test per task type; every later
proposal is a `skip_repeat` step report that costs no gate call, the annotation never reaches
the skill, `report` counts the repeats, and a run killed between them resumes to exactly the
workspace an uninterrupted run ends with."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

from app.cli import main
from app.harness.training.vocabulary import Count, SkipAction
from app.providers.sim import oracle
from tests.app.training.test_learning_failures import ORACLE, SCHEDULE, _store
from tests.support.snapshot import diff_states, workspace_state
from tests.support.training import run_patched_cli

ROOT = Path(__file__).resolve().parents[3]
# every question needs rule 1; the scripted evolver proposes its decoy, which the gate rejects
SETS = [
    *("--set", "sim_oracle_rules=1", "--set", "sim_oracle_accuracy=0.6"),
    *("--set", "batch_size=8", "--set", "epochs=2"),
]
ANNOTATION = re.compile(r" \(rejected:.*$")


def repeating_reply(real):  # noqa: ANN001, ANN201 - wraps OracleProvider._task_reply
    """The oracle, except that its skill evolver always proposes the first decoy rule with the
    newest rejected edit's annotation copied after it."""

    def reply(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        if "## Task: evolve-skill" not in prompt:
            return real(self, prompt)
        listed = prompt.split("<rejected_edits>", 1)[1].split("</rejected_edits>", 1)[0]
        found = ANNOTATION.search(listed.strip().splitlines()[0])
        content = oracle.DECOY_RULES[0] + (found.group(0) if found else "")
        edit = {"op": "add", "section": "Rules", "content": content, "priority": 1}
        return json.dumps({"edits": [edit], "suggestions": []})

    return reply


def install() -> None:
    """Used by the child process of the resume test (the same scripted evolver)."""
    oracle.OracleProvider._task_reply = repeating_reply(oracle.OracleProvider._task_reply)


def _init(tmp_path: Path) -> Path:
    store = _store(tmp_path)
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--store", str(store), "--seed", "rc", "--questions", "rc"]
    assert main(init) == 0
    return ws


def _reports(ws: Path) -> list[dict]:
    with sqlite3.connect(ws / "harness.db") as conn:
        rows = conn.execute("SELECT report_json FROM step_reports ORDER BY epoch, step, task_type")
        return [json.loads(r) for (r,) in rows]


def test_a_repeated_candidate_is_not_gated(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(
        oracle.OracleProvider, "_task_reply", repeating_reply(oracle.OracleProvider._task_reply)
    )
    ws = _init(tmp_path)
    assert main(["train", "-w", str(ws), *ORACLE, *SCHEDULE, *SETS]) == 0
    reports = _reports(ws)
    gated = [r for r in reports if r["gate_run_id"]]
    repeats = [r for r in reports if r["action"] == SkipAction.SKIP_REPEAT]
    # one test per task type (the skill file never changes: every test rejects the decoy)
    assert sorted(r["task_type"] for r in gated) == ["dates", "lengths"]
    assert all(r["action"] == "reject" for r in gated)
    assert len(repeats) >= 4  # 2 epochs of 2 steps, less each type's first
    for r in repeats:
        first = next(g for g in gated if g["task_type"] == r["task_type"])
        assert f"gated in e{first['epoch']} s{first['step']} (reject: gate " in r["summary"]
        assert r["gate_run_id"] is None and r["W"] is None
        assert [e["content"] for e in r["edits"]] == [oracle.DECOY_RULES[0]]
    # the later proposals carried the annotation; no skill text and no edit keeps it
    for folder in (ws / "skills").iterdir():
        assert all("rejected" not in f.read_text() for f in folder.glob("*.md"))
    with sqlite3.connect(ws / "harness.db") as conn:
        gate_runs = [r for (r,) in conn.execute("SELECT run_id FROM _runs WHERE kind = 'gate'")]
        gate_calls = conn.execute(
            "SELECT COUNT(*) FROM llm_calls WHERE run_id LIKE '%-gate-%'"
        ).fetchone()[0]
        edits = [e for (e,) in conn.execute("SELECT edits_json FROM evolutions")]
        epochs = [json.loads(r) for (r,) in conn.execute("SELECT report_json FROM epoch_reports")]
    assert sorted(gate_runs) == sorted(r["gate_run_id"] for r in gated)  # no other gate ran
    assert gate_calls > 0
    assert all("rejected" not in e for e in edits)
    assert sum(e["counts"].get(Count.REPEATS, 0) for e in epochs) == len(repeats)
    capsys.readouterr()
    assert main(["report", str(ws), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["repeats"] == len(repeats)
    assert main(["report", str(ws)]) == 0
    assert f"repeats    {len(repeats)} skill candidate(s) not gated" in capsys.readouterr().out

    # bench/real_learning.py's figures read the same log
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import real_learning
    finally:
        sys.path.remove(str(ROOT / "bench"))
    with sqlite3.connect(ws / "harness.db") as conn:
        train_id = conn.execute("SELECT run_id FROM _runs WHERE kind = 'train'").fetchone()[0]
        figures = dict((n, v) for n, v, _ in real_learning.repeat_figures(conn, ws, train_id))
    assert figures == {
        "repeats_gated": 0,
        "repeats_skipped": len(repeats),
        "repeats_on_changed_file": 0,
    }


PATCH = "from tests.app.training.test_repeats_step import install; install()"


def _train_child(ws: Path, *extra: str, kill_at: str | None = None) -> int:
    argv = ["train", "-w", str(ws), *ORACLE, *SCHEDULE, *SETS, *extra]
    return run_patched_cli(PATCH, argv, kill_at)


def test_a_run_killed_between_repeats_resumes_exactly(tmp_path: Path) -> None:
    """Killed at the end of the second step (its repeats recorded, its checkpoint not yet
    written): the resumed run redoes that step from the checkpoint, which holds the candidates
    whose tests ended, and ends where an uninterrupted run ends."""
    reference = _init(tmp_path / "ref")
    assert _train_child(reference) == 0
    ws = _init(tmp_path / "killed")
    assert _train_child(ws, kill_at="step_end:2") == -9
    assert _train_child(ws, "--resume") == 0
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []
    assert [r["action"] for r in _reports(ws)] == [r["action"] for r in _reports(reference)]
    assert SkipAction.SKIP_REPEAT in [r["action"] for r in _reports(ws)]


def test_the_tui_shows_a_repeat_in_a_colour_of_its_own_and_counts_it_skipped() -> None:
    from app.tui.format import action
    from app.tui.status import ACTION_TO_COUNT

    assert action(SkipAction.SKIP_REPEAT).style == "magenta"
    assert ACTION_TO_COUNT[SkipAction.SKIP_REPEAT] == Count.SKIPPED
