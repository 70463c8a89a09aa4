"""Only an edit with evidence against it joins the rejected list the evolver is shown
(app/harness/training/step.py `shows_harm`): an edit rejected for want of evidence is
unproven, not refuted, so the evolver may bundle it with others later. End to end on the
simulated world: the rules the gate rejected without evidence against them never reach a later
evolve prompt's rejected list, and the refuted ones do."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.harness.training.step import shows_harm
from app.providers.sim import evolver as sim_evolver
from app.providers.sim.world import normalise
from core.evolution.gate import AcceptanceStrategy, GateAction, GateDecision, GateStopReason
from tests.support.training import train_on_sim_basic

ROOT = Path(__file__).resolve().parents[3]


def decision(stop: str, w: int, lost: int) -> GateDecision:
    return GateDecision(
        action=GateAction.REJECT,
        W=w,
        L=lost,
        n_used=w + lost,
        e_value=1.0,
        e_harm=1.0,
        stop_reason=stop,
        delta_hat=0.0,
        delta_shrunk=0.0,
        strategy=AcceptanceStrategy.EPROCESS,
    )


@pytest.mark.parametrize(
    ("stop", "w", "lost", "blacklisted"),
    [
        (GateStopReason.HARM, 0, 1, True),  # the harm e-value crossed its level
        (GateStopReason.FUTILITY, 0, 0, False),  # ties only
        (GateStopReason.FUTILITY, 0, 1, False),  # a lone loss
        (GateStopReason.FUTILITY, 3, 1, False),  # more wins than losses, below the level
        (GateStopReason.FUTILITY, 2, 2, False),  # as many wins as losses
        (GateStopReason.FUTILITY, 0, 2, True),
        (GateStopReason.FUTILITY, 1, 2, True),
        ("strict_improvement: mean 0.25 vs 0.30 over 40 units", 0, 2, True),  # any rule
        ("strict_improvement: mean 0.30 vs 0.30 over 40 units", 0, 0, False),
    ],
)
def test_only_evidence_against_an_edit_blacklists_it(
    stop: str, w: int, lost: int, blacklisted: bool
) -> None:
    assert shows_harm(decision(stop, w, lost)) is blacklisted


def test_the_evolver_is_shown_only_refuted_edits(tmp_path: Path, monkeypatch) -> None:
    listed: list[str] = []  # every rejected list an evolve-skill prompt showed

    def recording(world, prompt, shares):  # noqa: ANN001, ANN202 - the sim evolver's signature
        listed.append(prompt.split("<rejected_edits>", 1)[1].split("</rejected_edits>", 1)[0])
        return real(world, prompt, shares)

    real = sim_evolver.evolve_skill
    monkeypatch.setattr(sim_evolver, "evolve_skill", recording)
    config = (ROOT / "app" / "demo.toml").read_text().replace("epochs = 4", "epochs = 2")
    ws = train_on_sim_basic(tmp_path, config)
    with sqlite3.connect(ws / "harness.db") as conn:
        rows = conn.execute("SELECT report_json FROM step_reports ORDER BY epoch, step, task_type")
        rejected = [r for (t,) in rows if (r := json.loads(t))["action"] == "reject"]
    unproven = [r for r in rejected if "not blacklisted" in r["summary"]]
    refuted = [r for r in rejected if shows_harm(decision(r["stop_reason"], r["W"], r["L"]))]
    assert unproven and refuted and listed
    assert all(not shows_harm(decision(r["stop_reason"], r["W"], r["L"])) for r in unproven)
    refuted_texts = {normalise(e["content"]) for r in refuted for e in r["edits"]}
    shown = normalise("\n".join(listed))
    for r in unproven:
        for edit in r["edits"]:
            text = normalise(edit["content"])
            assert text in refuted_texts or text not in shown, edit["content"]
    assert any(text in shown for text in refuted_texts)
