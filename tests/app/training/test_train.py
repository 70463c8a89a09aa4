"""Training end to end through the CLI on the simulated model: learning, gate, resume."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
SMALL = """
epochs = 2
# sim-large, the demo's world: on sim-basic (72 units per type) the gate confirms no one-rule
# edit, so a run there would exercise no accept, probation or version change
sim_units_per_type = 216
batch_size = 48
early_stop_patience = 3
edit_budget_start = 3
concurrency = 8
[gate]
# no final look (a test taking it runs its whole ladder and makes no provisional accept) and a
# low provisional level, so provisional accepts and their probation are exercised
final_look = false
e_provisional = 3.0
"""


LARGE = ["--set", "sim_units_per_type=216"]  # the world sim-large was generated from


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def resume_differences(
    reference: Path, config: Path, ws: Path, kill_at: str = "step_end:2"
) -> list[str]:
    """Init `ws` on sim-basic, train it with `config` killed at `kill_at` (after step 2), resume
    it, and list how its final state differs from `reference`'s, the same training run
    uninterrupted."""
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    train = ("train", "-w", str(ws), "--config", str(config), "--no-progress")
    killed = run_cli(*train, env={"SKILL_TRAINER_KILL_AT": kill_at})
    assert killed.returncode == -9, "kill point never reached"
    resumed = run_cli(*train, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    return diff_states(workspace_state(reference), workspace_state(ws))


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "small.toml"
    path.write_text(SMALL)
    return path


@pytest.fixture(scope="module")
def fresh_ws(tmp_path_factory) -> Path:
    """A just-initialised workspace to copy from (init is cheap but not free)."""
    ws = tmp_path_factory.mktemp("seedws") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-large"]) == 0
    return ws


@pytest.fixture(scope="module")
def reference(tmp_path_factory, fresh_ws, config_file) -> Path:
    ws = tmp_path_factory.mktemp("ref") / "ws"
    shutil.copytree(fresh_ws, ws)
    proc = run_cli("train", "-w", str(ws), "--config", str(config_file), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def copy_fresh(fresh_ws: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(fresh_ws, ws)
    return ws


@pytest.mark.slow
def test_training_learns_and_the_gate_filters(reference: Path):
    final = json.loads((reference / "analyses" / "final_test_eval.json").read_text())
    assert final["simulated_model"] is True
    assert final["test_accuracy"] >= final["baseline_test_accuracy"] + 0.25, final
    reports = [json.loads(p.read_text()) for p in (reference / "reports" / "steps").glob("*.json")]
    actions = [r["action"] for r in reports]
    assert "reject" in actions and any(a.startswith("accept") for a in actions)
    epochs = [json.loads(p.read_text()) for p in (reference / "reports" / "epochs").glob("*.json")]
    settled = sum(e["counts"]["kept"] + e["counts"]["rolled_back"] for e in epochs)
    assert settled >= 1, "no provisional accept was settled at epoch end"
    manifest = json.loads((reference / "manifest.json").read_text())
    assert manifest["current"]["skills"] == manifest["best"]["skills"]


def test_gate_evidence_shows_real_rule_accepted_and_harmful_rule_rejected(reference: Path):
    from app.providers.sim.world import build_world

    world = build_world()
    decoys = {r.decoy for r in world.rules.values()}
    statements = {r.statement for r in world.rules.values()}
    reports = [json.loads(p.read_text()) for p in (reference / "reports" / "steps").glob("*.json")]
    conn = sqlite3.connect(reference / "harness.db")
    accepted_real = rejected_decoy = 0
    for r in reports:
        added = " ".join(e.get("content", "") for e in r["edits"])
        # one row per unit; W and L (families won and lost) as they stood after the last one
        rows = conn.execute(
            "SELECT w, l FROM gate_evidence WHERE run_id = ? ORDER BY idx", (r["gate_run_id"],)
        ).fetchall()
        if r["action"].startswith("accept") and any(s in added for s in statements):
            assert len(rows) == r["units_used"] and rows[-1][0] == r["W"]
            accepted_real += 1
        if r["action"] == "reject" and any(d in added for d in decoys):
            assert len(rows) == r["units_used"] and rows[-1][1] == r["L"]
            rejected_decoy += 1
    assert accepted_real >= 1 and rejected_decoy >= 1


def test_each_evolution_names_the_version_its_accept_produced(reference: Path):
    """evolutions.result_version is the step report's new_version (app/harness/training/step.py
    `settle`): set for every accepted edit, empty for the rest."""
    conn = sqlite3.connect(reference / "harness.db")
    rows = conn.execute(
        "SELECT e.result_version, json_extract(s.report_json, '$.new_version'), s.action "
        "FROM evolutions e JOIN step_reports s ON s.epoch = e.epoch AND s.step = e.step "
        "AND s.task_type = e.task_type AND s.run_id LIKE 'train%'"
    ).fetchall()
    accepted = [r for r in rows if r[2].startswith("accept")]
    assert accepted and all(r[0] for r in accepted), accepted
    assert all(result == new for result, new, _ in rows), rows
    assert any(r[0] is None for r in rows), "no evolution without a new version was seen"


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", ["rollout:150", "gate:9", "slow:1", "version:4", "step_end:2"])
def test_resume_after_sigkill_ends_in_the_reference_state(
    kill_at, reference, fresh_ws, config_file, tmp_path
):
    ws = copy_fresh(fresh_ws, tmp_path)
    killed = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        env={"SKILL_TRAINER_KILL_AT": kill_at},
    )
    assert killed.returncode == -9, f"kill point {kill_at} was never reached"
    resumed = run_cli(
        "train", "-w", str(ws), "--config", str(config_file), "--no-progress", "--resume"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert diff_states(workspace_state(reference), workspace_state(ws)) == []
    conn = sqlite3.connect(ws / "harness.db")
    dupes = conn.execute(
        "SELECT COUNT(*) FROM (SELECT run_id, question_id FROM predictions "
        "GROUP BY run_id, question_id HAVING COUNT(*) > 1)"
    ).fetchone()[0]
    assert dupes == 0
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert not list((ws / ".staging").glob("*")) if (ws / ".staging").exists() else True


@pytest.mark.slow
def test_structural_change_refuses_resume(fresh_ws, config_file, tmp_path):
    ws = copy_fresh(fresh_ws, tmp_path)
    killed = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        env={"SKILL_TRAINER_KILL_AT": "gate:2"},
    )
    assert killed.returncode == -9
    changed = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--resume",
        "--set",
        "batch_size=40",
    )
    assert changed.returncode == 2
    assert "batch_size" in changed.stderr and "Traceback" not in changed.stderr
    decision = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--resume",
        "--set",
        "concurrency=4",
    )
    assert decision.returncode == 0, decision.stderr
    assert "concurrency" in decision.stderr


@pytest.mark.slow
def test_faults_at_5_percent_complete(fresh_ws, config_file, tmp_path):
    ws = copy_fresh(fresh_ws, tmp_path)
    proc = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--set",
        "sim_fault_rate=0.05",
        "--set",
        "epochs=1",
    )
    assert proc.returncode == 0, proc.stderr
    assert (ws / "analyses" / "final_test_eval.json").exists()


@pytest.mark.slow
def test_faults_at_50_percent_stop_cleanly_then_resume(fresh_ws, config_file, tmp_path):
    ws = copy_fresh(fresh_ws, tmp_path)
    failing = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--set",
        "sim_fault_rate=0.5",
        "--set",
        "max_retries=1",
        "--set",
        "epochs=1",
    )
    assert failing.returncode == 1, failing.stderr
    assert "--resume" in failing.stderr and "Traceback" not in failing.stderr
    checkpoint = json.loads((ws / "checkpoint.json").read_text())  # still valid JSON
    assert checkpoint["progress"]["phase"] in ("setup", "in_epoch")
    resumed = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--resume",
        "--set",
        "epochs=1",
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "analyses" / "final_test_eval.json").exists()


def test_eval_twice_makes_no_new_model_calls(fresh_ws, tmp_path, capsys):
    ws = copy_fresh(fresh_ws, tmp_path)
    assert main(["eval", "v1", "-w", str(ws), *LARGE, "--no-progress"]) == 0
    first = capsys.readouterr().out
    assert main(["eval", "v1", "-w", str(ws), *LARGE, "--no-progress"]) == 0
    second = capsys.readouterr().out
    assert "SIMULATED" in first and "accuracy" in first
    assert "model calls: 0 new" in second
    evals = sorted((ws / "analyses").glob("eval_*.json"))
    assert len(evals) == 2
    assert json.loads(evals[1].read_text())["new_model_calls"] == 0


def test_diagnose_and_promote(reference, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(reference, ws)
    assert main(["diagnose", "baseline", "-w", str(ws), *LARGE, "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["failures"] > 0 and summary["by_category"].get("skill_gap", 0) > 0
    assert summary["contradictory"] == 0  # the simulated judge never contradicts itself
    best = json.loads((ws / "manifest.json").read_text())["best"]["skills"].split("/")[-1]
    assert main(["eval", best, "-w", str(ws), *LARGE, "--no-progress"]) == 0
    run_id = capsys.readouterr().out.split("(run ")[1].split(")")[0]
    store = tmp_path / "store"
    shutil.copytree(ROOT / "store", store)
    import git

    repo = git.Repo.init(store)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")
    repo.index.add(["seeds", "questions"])
    repo.index.commit("store")
    assert (
        main(
            [
                "promote",
                best,
                "-w",
                str(ws),
                "--eval-run",
                run_id,
                "--name",
                "trained",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    assert (store / "seeds" / "trained" / "skills").is_dir()
    assert "promoted_from" in (store / "seeds" / "trained" / "seed.toml").read_text()
    assert repo.head.commit.message == "promote seed trained"
    assert (
        main(
            [
                "promote",
                best,
                "-w",
                str(ws),
                "--eval-run",
                "nope",
                "--name",
                "x",
                "--store",
                str(store),
            ]
        )
        == 2
    )


@pytest.mark.slow
def test_cost_budget_stops_cleanly_and_resume_continues(fresh_ws, config_file, tmp_path):
    ws = copy_fresh(fresh_ws, tmp_path)
    stopped = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--set",
        "max_cost_usd=0.15",
    )
    assert stopped.returncode == 1, stopped.stderr
    assert "cost budget" in stopped.stderr and "Traceback" not in stopped.stderr
    runs = (
        sqlite3.connect(ws / "harness.db")
        .execute("SELECT status FROM _runs WHERE kind = 'train'")
        .fetchall()
    )
    assert runs == [("stopped",)]
    resumed = run_cli(
        "train",
        "-w",
        str(ws),
        "--config",
        str(config_file),
        "--no-progress",
        "--resume",
        "--set",
        "max_cost_usd=100",
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "analyses" / "final_test_eval.json").exists()


@pytest.mark.slow
def test_demo_command_prints_the_curve_and_the_sim_notice(tmp_path):
    ws = tmp_path / "demo"
    # two epochs of the demo's four: the whole demo runs in tests/test_packaging.py
    proc = run_cli("demo", "--workspace", str(ws), "--no-progress", "--set", "epochs=2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "learning curve" in out and "epoch 1: val" in out
    assert "SIMULATED" in out and f"tui -w {ws}" in out
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] - final["baseline_test_accuracy"] >= 0.25
    steps = [json.loads(p.read_text()) for p in (ws / "reports" / "steps").glob("*.json")]
    from app.providers.sim.world import build_world

    decoys = [r.decoy for r in build_world().rules.values()]
    assert any(
        s["action"] == "reject" and any(d in json.dumps(s["edits"]) for d in decoys) for s in steps
    ), "no harmful (decoy) edit was rejected"
    proc = run_cli("demo", "--workspace", str(ws), "--no-progress", "--set", "epochs=1")
    # the second demo archives the first
    assert proc.returncode == 0
    assert list(tmp_path.glob("demo.archived-*"))


@pytest.mark.slow
def test_train_ends_with_the_held_out_result(fresh_ws, tmp_path, capsys):
    ws = copy_fresh(fresh_ws, tmp_path)
    assert main(["train", "-w", str(ws), "--set", "epochs=1", *LARGE, "--no-progress"]) == 0
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("test accuracy"))
    assert line.startswith(
        f"test accuracy: baseline {final['baseline_test_accuracy']:.3f} -> "
        f"final {final['test_accuracy']:.3f} (best {final['skills_version']}/"
    ), line
