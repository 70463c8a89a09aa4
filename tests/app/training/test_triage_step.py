"""Triage before the judge in a training step (app/harness/training/step.py diagnose_batch,
core/evolution/triage.py, app/harness/training/triage_probe.py), end to end on the simulated
world with `sim_missing_context_share` (the agent never opens a share of the contexts it needs):

- every failure whose context went unread is decided by `rule:context_unread`, never sent to
  the judge, and never reaches a skill case pack;
- the step reports count it (by category and by decider) and say it in their summary, the log
  warns about it, and `report` lists it;
- with `triage_probe`, a judged skill gap that passes once its context is inlined becomes
  missing_context (`probe:context_inlined`) and leaves the skill pack.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.providers.sim import evolver as sim_evolver
from app.providers.sim.agent import skips_context, tag
from app.providers.sim.world import build_world
from tests.support.training import train_on_sim_basic

SHARE = 0.5
SMALL = (
    "epochs = 1\nbatch_size = 48\nedit_budget_start = 3\nconcurrency = 8\n"
    f"sim_missing_context_share = {SHARE}\n"
)


def _train(tmp_path: Path, extra: str = "") -> Path:
    return train_on_sim_basic(tmp_path, SMALL + extra)


def _rows(ws: Path, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
    con = sqlite3.connect(ws / "harness.db")
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _skipped(question_text: str) -> bool:
    world = build_world("basic", 7, 72)
    case = world.case_for_text(question_text)
    return case is not None and skips_context(world, case, SHARE)


@pytest.fixture
def packs(monkeypatch) -> list[str]:
    """The question texts of every skill case pack the evolver was sent."""
    seen: list[str] = []
    real = sim_evolver.evolve_skill

    def recording(world, prompt, shares):
        pack = tag(prompt, "case_pack") or ""
        for block in re.findall(r"<failure[^>]*>(.*?)</failure>", pack, flags=re.S):
            seen.append(tag(block, "question") or "")
        return real(world, prompt, shares)

    monkeypatch.setattr(sim_evolver, "evolve_skill", recording)
    return seen


def test_unread_context_is_decided_by_rule_and_reaches_no_skill_pack(tmp_path, packs) -> None:
    ws = _train(tmp_path)
    texts = {
        json.loads(line)["question_id"]: json.loads(line)["question"]
        for line in (ws / "questions" / "questions.jsonl").read_text().splitlines()
        if line.strip()
    }
    diag = _rows(ws, "SELECT run_id, question_id, category, decided_by FROM diagnoses")
    assert diag
    truly = {(r["run_id"], r["question_id"]) for r in diag if _skipped(texts[r["question_id"]])}
    ruled = {
        (r["run_id"], r["question_id"]) for r in diag if r["decided_by"] == "rule:context_unread"
    }
    assert truly and ruled == truly  # recall and precision 1 on what the world knows
    assert all(r["category"] == "missing_context" for r in diag if r["decided_by"] != "judge")
    # the judge was asked only about the rest
    asked = _rows(ws, "SELECT run_id, subject FROM reply_attempts WHERE purpose = 'diagnosis'")
    assert not {(r["run_id"], r["subject"]) for r in asked} & ruled
    assert packs and not [t for t in packs if _skipped(t)]

    reports = [json.loads(p.read_text()) for p in (ws / "reports" / "steps").glob("*.json")]
    counted = sum(r["diagnosis"]["by_category"].get("missing_context", 0) for r in reports)
    assert counted == len(truly)
    assert sum(r["diagnosis"]["decided_by"].get("rule:context_unread", 0) for r in reports) == (
        counted
    )
    noted = [r for r in reports if r["diagnosis"]["by_category"].get("missing_context")]
    assert all("missing_context" in r["summary"] for r in noted)
    log = (ws / "logs" / "skill-trainer.log").read_text()
    assert "no edit can fix (missing_context" in log

    # `diagnose RUN_ID` triages a logged rollout the same way and says who decided
    from app import api

    rollout = "train1-e1-s0-rollout"
    again = api.diagnose(ws, rollout, overrides={"sim_missing_context_share": SHARE})
    in_step = {q for run, q in truly if run == "train1-e1-s0-diag"}
    assert again.decided_by.get("rule:context_unread", 0) == len(in_step) > 0
    assert again.by_category["missing_context"] >= len(in_step)

    report = _report(ws)
    assert re.search(
        rf"missing_context\s+{len(truly)}\s+\(rule:context_unread {len(truly)}\)", report
    )
    assert "no edit can fix these" in report


def _report(ws: Path) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", "-w", str(ws)]) == 0
    return out.getvalue()


def test_the_probe_turns_skill_gaps_that_pass_with_context_into_missing_context(
    tmp_path, monkeypatch, packs
) -> None:
    """A judge that calls every failure a skill gap: the probe re-runs those with context
    inlined, and each that passes leaves the skill pack as missing_context."""
    monkeypatch.setattr(
        sim_evolver,
        "diagnose",
        lambda world, prompt, shares: json.dumps(
            {"category": "skill_gap", "target": "skill", "rationale": "always"}
        ),
    )
    # accept_all: the skills learn their rules, so a probe with the context inlined can pass
    # (in sim-basic the gate can confirm no one-rule edit; the probe is not about the gate)
    ws = _train(tmp_path, 'triage_probe = true\n[gate]\nstrategy = "accept_all"\n')
    probed = _rows(
        ws,
        "SELECT run_id, question_id, correct FROM predictions WHERE run_id LIKE '%-probe'",
    )
    assert probed and {r["run_id"] for r in probed} <= {
        r["run_id"] for r in _rows(ws, "SELECT run_id FROM _runs WHERE kind = 'probe'")
    }
    passed = {(r["run_id"].removesuffix("probe"), r["question_id"]) for r in probed if r["correct"]}
    assert passed  # reading the full context fixes some of them in this world
    relabelled = {
        (r["run_id"].removesuffix("diag"), r["question_id"])
        for r in _rows(
            ws,
            "SELECT run_id, question_id FROM diagnoses WHERE decided_by = ?",
            ("probe:context_inlined",),
        )
    }
    assert relabelled == passed
    texts = {
        json.loads(line)["question_id"]: json.loads(line)["question"]
        for line in (ws / "questions" / "questions.jsonl").read_text().splitlines()
        if line.strip()
    }
    passed_texts = {texts[q] for _, q in passed}
    # a failure that passed its probe in a step never appears in that step's skill pack; the
    # pack texts are not tagged with their step, so check the ones that passed everywhere
    always_passed = passed_texts - {
        texts[r["question_id"]]
        for r in _rows(ws, "SELECT question_id FROM diagnoses WHERE category = 'skill_gap'")
    }
    assert always_passed and not always_passed & set(packs)
