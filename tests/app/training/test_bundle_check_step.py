"""The line check of an accepted bundle (app/harness/training/bundle_check.py), end to end
through the CLI on sim/basic, where every bundle of true rules the evolver proposes also
carries the decoy of another rule (`sim_bundled_decoy_share = 1`): the gate accepts such
bundles on their true rules' wins, the check drops the decoy before the bundle is kept (its
answers are in the harness log, the decoy joins the rejected list the evolver is shown), and
with `[gate] bundle_check = false` the decoys stay. A run killed after such a step resumes to
exactly the workspace an uninterrupted run ends with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from app.providers.sim.world import build_world, normalise
from tests.support.snapshot import diff_states, workspace_state
from tests.support.training import ROOT, init_sim_basic, run_patched_cli, train_on_sim_basic

DEMO = (ROOT / "app" / "demo.toml").read_text()
CONFIG = DEMO.replace("epochs = 4", "epochs = 1").replace(
    "[sim]\n", "[sim]\nbundled_decoy_share = 1.0\n"
)
DECOYS = {normalise(r.decoy) for r in build_world("basic", 7).rules.values()}


def _accepts(ws: Path) -> list[dict]:
    with sqlite3.connect(ws / "harness.db") as conn:
        rows = conn.execute("SELECT report_json FROM step_reports ORDER BY epoch, step, task_type")
        return [r for (t,) in rows if (r := json.loads(t))["action"].startswith("accept")]


def _decoys_in_skills(ws: Path) -> set[str]:
    manifest = json.loads((ws / "manifest.json").read_text())
    folder = ws / manifest["current"]["skills"]
    text = normalise("\n".join(f.read_text() for f in folder.rglob("*.md")))
    return {d for d in DECOYS if d in text}


def test_the_line_check_drops_decoys_that_ride_in_accepted_bundles(tmp_path: Path) -> None:
    assert "bundled_decoy_share = 1.0" in CONFIG
    ws = train_on_sim_basic(tmp_path / "checked", CONFIG)
    checked = [r for r in _accepts(ws) if "the line check dropped" in r["summary"]]
    assert checked
    rejected = json.loads((ws / "checkpoint.json").read_text())["state"]["rejected"]
    last_accept = {r["task_type"]: (r["epoch"], r["step"]) for r in _accepts(ws)}
    dropped: set[str] = set()
    for report in checked:
        # the report lists the kept edits, no decoy among them, and names the dropped ones
        assert not any(normalise(e["content"]) in DECOYS for e in report["edits"])
        named = normalise(report["summary"].split("won units wrong: ", 1)[1])
        found = {d for d in DECOYS if d in named}
        assert found, named
        dropped |= found
        # blacklisted: the evolver is shown it until the task type's next accept clears its list
        if last_accept[report["task_type"]] == (report["epoch"], report["step"]):
            listed = normalise(json.dumps(rejected[report["task_type"]]))
            assert found <= {d for d in DECOYS if d in listed}
    kept = _decoys_in_skills(ws)
    assert not kept & dropped
    with sqlite3.connect(ws / "harness.db") as conn:
        variants = [
            r for (r,) in conn.execute("SELECT run_id FROM _runs WHERE run_id LIKE '%-without-%'")
        ]
        answered = conn.execute(
            "SELECT COUNT(*) FROM predictions WHERE run_id LIKE '%-without-%'"
        ).fetchone()[0]
        further = conn.execute("SELECT COUNT(*) FROM _runs WHERE run_id LIKE '%-further'")
        looked_further = further.fetchone()[0]
        # every variant's run is closed once its answers are in: nothing of a finished
        # training is left `running` for the TUI and `report` to show as going on
        open_runs = [r for (r,) in conn.execute("SELECT run_id FROM _runs WHERE status != 'done'")]
    assert open_runs == []
    assert any("-lost-without-" in r for r in variants)
    assert any("-changed-without-" in r for r in variants)
    assert answered > 0
    assert looked_further > 0  # an e-process accept before its ladder's end looks at the rest

    # the same run without the check keeps more decoys (a decoy whose questions the gate's
    # ladder did not lose is out of the check's sight: docs/training.md)
    unchecked = CONFIG.replace("[gate]\n", "[gate]\nbundle_check = false\n")
    ws_off = train_on_sim_basic(tmp_path / "unchecked", unchecked)
    assert not any("line check" in r["summary"] for r in _accepts(ws_off))
    assert len(_decoys_in_skills(ws_off)) > len(kept)


def test_a_run_killed_after_a_checked_step_resumes_exactly(tmp_path: Path) -> None:
    reference = train_on_sim_basic(tmp_path / "ref", CONFIG)
    ws = init_sim_basic(tmp_path / "killed")
    cfg = tmp_path / "killed" / "run.toml"
    cfg.write_text(CONFIG)
    train = ["train", "-w", str(ws), "--config", str(cfg), "--no-progress"]
    assert run_patched_cli("pass", train, kill_at="step_end:2") == -9
    assert run_patched_cli("pass", [*train, "--resume"]) == 0
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []


def test_only_a_sequential_test_has_its_bundle_look_past_where_it_stopped(tmp_path: Path) -> None:
    """GEPA's minibatch rule observes 3 units by design: its line check looks at those alone,
    so its cost stays its own (bench/acceptance.py compares calls against it)."""
    config = CONFIG.replace('strategy = "eprocess"', 'strategy = "minibatch"')
    assert 'strategy = "minibatch"' in config
    ws = train_on_sim_basic(tmp_path, config)
    with sqlite3.connect(ws / "harness.db") as conn:
        runs = [r for (r,) in conn.execute("SELECT run_id FROM _runs WHERE kind = 'gate'")]
    assert any(r.endswith(("-gate-dates", "-gate-ledger")) for r in runs)
    assert not any(r.endswith("-further") for r in runs)
