"""Changes whose added text memorises a held-out question are refused before any gate
(core/evolution/contamination.py; app/harness/training/step.py `refuse_contaminated`,
app/harness/training/contamination_guard.py): real training steps on the simulated model, with
the simulated evolver's reply for one task type (and for the system prompt) given one extra
line that quotes a validation question, as an evolver that copies held-out data would."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.harness.rollouts.pools import split_pools
from app.harness.training.vocabulary import Count, SkipAction
from app.harness.workspace.store import load_benchmark
from app.providers.sim import evolver as sim_evolver
from tests.support.training import train_on_sim_basic

ROOT = Path(__file__).resolve().parents[3]
SMALL = "epochs = 1\nbatch_size = 48\nconcurrency = 8\n"


def _held_out_ledger_question(store: Path) -> str:
    b = load_benchmark(store / "questions" / "sim-basic")
    pools = split_pools(b.questions, b.split, b.seed)
    return next(q.question for q in pools.validation if q.task_type == "ledger")


def _with_line(reply: str, line: str, section: str) -> str:
    data = json.loads(reply)
    # first and at the highest priority, so the rank clip to the edit budget keeps it
    data["edits"].insert(0, {"op": "add", "section": section, "content": line, "priority": 10})
    return json.dumps(data)


@pytest.mark.slow
def test_edits_quoting_a_held_out_question_are_refused_before_the_gate(
    tmp_path, monkeypatch, capsys
):
    leak = f"- Worked example: {_held_out_ledger_question(ROOT / 'store')}"
    real_skill, real_system = sim_evolver.evolve_skill, sim_evolver.evolve_system

    def leaky_skill(world, prompt, shares):  # type: ignore[no-untyped-def]
        reply = real_skill(world, prompt, shares)
        cases = sim_evolver._pack_cases(world, prompt)
        leaks = bool(cases) and cases[0].task_type == "ledger"
        return _with_line(reply, leak, "Rules") if leaks else reply

    def leaky_system(world, prompt, shares):  # type: ignore[no-untyped-def]
        return _with_line(real_system(world, prompt, shares), leak, "Instructions")

    monkeypatch.setattr(sim_evolver, "evolve_skill", leaky_skill)
    monkeypatch.setattr(sim_evolver, "evolve_system", leaky_system)
    ws = train_on_sim_basic(tmp_path, SMALL)

    reports = [json.loads(p.read_text()) for p in sorted((ws / "reports" / "steps").glob("*.json"))]
    refused = [r for r in reports if r["action"] == SkipAction.CONTAMINATION]
    assert refused and {r["task_type"] for r in refused} == {"ledger"}
    assert all("held-out question" in r["summary"] for r in refused)
    assert any(r["action"] in ("accept", "reject") for r in reports)  # the others were gated
    with sqlite3.connect(ws / "harness.db") as conn:
        gated = conn.execute("SELECT COUNT(*) FROM gate_evidence WHERE task_type = 'ledger'")
        assert gated.fetchone() == (0,)
        (epoch_report,) = conn.execute("SELECT report_json FROM epoch_reports").fetchone()
    counts = json.loads(epoch_report)["counts"]
    assert counts[Count.CONTAMINATION] == len(refused) + 1  # + the system prompt change
    manifest = json.loads((ws / "manifest.json").read_text())
    prompts = ws / manifest["current"]["prompts"]
    assert all(leak not in p.read_text() for p in prompts.glob("*.md"))
    for path in (ws / "skills").rglob("*.md"):
        assert "Worked example" not in path.read_text()

    capsys.readouterr()
    assert main(["report", "-w", str(ws)]) == 0
    shown = capsys.readouterr().out
    assert f"refused before the gate: {len(refused)} skill edit(s)" in shown
    assert f"{len(refused) + 1} change(s) in finished epochs' counts" in shown


def test_a_description_quoting_a_held_out_question_is_refused(tmp_path, monkeypatch):
    """Progressive mode's description evolution (app/harness/training/descriptions.py) is shown
    validation questions; a description that copies one is not gated or applied."""
    store = tmp_path / "store"
    shutil.copytree(ROOT / "store", store)
    leak = _held_out_ledger_question(store)
    real = sim_evolver.evolve_description

    def leaky(world, prompt, shares):  # type: ignore[no-untyped-def]
        data = json.loads(real(world, prompt, shares))
        if data["description"]:
            data["description"] += f" For example: {leak}"
        return json.dumps(data)

    monkeypatch.setattr(sim_evolver, "evolve_description", leaky)
    ws = tmp_path / "ws"
    vague = ROOT / "examples" / "agent-skills" / "sim-vague"
    init = ["init", str(ws), "--skills-from", str(vague), "--seed", "vague"]
    assert main([*init, "--questions", "sim-basic", "--store", str(store)]) == 0
    train = ["train", "-w", str(ws), "--config", str(ROOT / "app" / "demo.toml")]
    sets = ["--set", 'skill_mode="progressive"', "--set", "epochs=1", "--no-progress"]
    assert main([*train, *sets, "--store", str(store)]) == 0
    records = json.loads((ws / "reports" / "epochs" / "e1_descriptions.json").read_text())
    refused = [r for r in records["records"] if r["action"] == "contamination"]
    assert refused and len(refused) == len([r for r in records["records"] if r["new"]])
    epoch1 = json.loads((ws / "reports" / "epochs" / "e1.json").read_text())
    assert epoch1["counts"][Count.CONTAMINATION] >= len(refused)
    assert "descriptions_accepted" not in epoch1["counts"]
    for path in (ws / "skills").rglob("_skills.json"):
        assert "For example" not in path.read_text()
