"""The step gate on a scored (rubric) task type (app/harness/training/validate.py): it compares
paired scores, leaves out units without a verdict (counted), caches the baseline's scores and
is held to Ville's level (docs/checkers.md#how-the-gate-uses-a-score)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.checking import AnswerChecker
from app.harness.rollouts.inference import AgentSettings
from app.harness.rollouts.question_units import build_units
from app.harness.rollouts.rubric import RubricSettings
from app.harness.training.gate_ladder import BaselineCache, Ladder
from app.harness.training.observation import evidence_rows
from app.harness.training.validate import GateSpec, Validator, with_skill
from app.harness.workspace.harness_log import HarnessLog
from app.paths import read_prompt
from core.evolution.gate import GateParams
from core.types import Question
from tests.fakes.scripted import Request, ScriptedProvider

N = 12


def agent(request: Request) -> str:
    return "ANSWER: good" if "CANDIDATE-RULE" in request.prompt else "ANSWER: meh"


def judge(request: Request) -> str:
    if "[q3]" in request.user and "good" in request.user:
        return "cannot say"  # every candidate reply for q3 unreadable: no verdict
    return '{"score": 8}' if "<answer>\ngood" in request.user else '{"score": 5}'


def test_scored_gate_compares_scores_and_counts_no_verdict_against_the_candidate(
    tmp_path: Path,
) -> None:
    questions = [
        Question(
            f"q{i}",
            "support",
            f"[q{i}] Reply to the customer.",
            "",
            checker="rubric",
            checker_args={"rubric": "Polite.", "pass_threshold": 0.7},
        )
        for i in range(N)
    ]
    units = {u.unit_id: u for u in build_units(questions)}
    base = AgentPrompts(
        system="# Agent",
        skills={"support.md": "# Support\n\n## Rules\n- be brief\n"},
        tool_docs={},
        user_template=read_prompt("agent_user.md"),
        skills_version="v1",
        prompts_version="v1",
    )
    cand = with_skill(base, "support.md", "# Support\n\n## Rules\n- CANDIDATE-RULE\n")
    judge_provider = ScriptedProvider(respond=judge)
    settings = AgentSettings(
        concurrency=4,
        checker=AnswerChecker(judge=judge_provider, rubric=RubricSettings(samples=2)),
    )
    cache = BaselineCache()
    ladder = Ladder(tuple((f"q{i}", (f"q{i}",)) for i in range(N)), ())
    spec = GateSpec("support", "support.md", cand, ladder, "gate-support")
    with HarnessLog(tmp_path / "harness.db") as log:
        validator = Validator(
            provider=ScriptedProvider(respond=agent),
            base_prompts=base,
            units=units,
            log=log,
            settings=settings,
            params=GateParams(),
            baseline_cache=cache,
            guard_err=0.5,
        )
        outcome = anyio.run(validator.validate, [spec], "gatebase")["support"]
    d = outcome.decision
    assert d.threshold == GateParams().e_confirm  # scored: Ville's level, never the exact one
    assert outcome.imputed_units == 1
    by_unit = {e.unit_id: e for e in d.evidence}
    assert by_unit["q0"].base == pytest.approx(0.5) and by_unit["q0"].cand == pytest.approx(0.8)
    assert by_unit["q0"].d == pytest.approx(0.3)
    # observed (the test cannot stop within 4 families): no verdict, so the candidate's worst
    # case, 0, against the baseline's 0.5
    assert by_unit["q3"].cand is None and by_unit["q3"].d == pytest.approx(-0.5)
    rows = {r.unit_id: r for r in evidence_rows("g", "support", d, 1, 1)}
    assert rows["q3"].cand is None and rows["q0"].cand == pytest.approx(0.8)
    # pass/fail at the threshold (0.7): the baseline fails, the candidate passes
    assert outcome.baseline_correctness["q0"] is False and outcome.candidate_correctness["q0"]
    assert "q3" not in outcome.candidate_correctness
    assert cache.outcome("v1", "v1", "q0") == pytest.approx(0.5)
    assert cache.get("v1", "v1", "q0") is False
    assert d.e_value > 1.0  # every judged family moved the evidence up by 0.3


def test_baseline_cache_keeps_scores_and_a_pass_fail_file_as_it_was(tmp_path: Path) -> None:
    plain = BaselineCache()
    plain.put_many("v1", "v1", {"u0": True}, {"u0": True})  # pass/fail outcomes: no scores
    plain.save(tmp_path / "plain.json")
    assert "scores" not in (tmp_path / "plain.json").read_text()
    scored = BaselineCache()
    scored.put_many("v1", "v1", {"u0": False, "u1": False}, {"u0": 0.4, "u1": None})
    scored.save(tmp_path / "scored.json")
    back = BaselineCache.load(tmp_path / "scored.json")
    assert back.outcome("v1", "v1", "u0") == pytest.approx(0.4)
    assert back.outcome("v1", "v1", "u1") is None  # no verdict survives a resume as such
    assert back.get("v1", "v1", "u1") is False and len(back) == 2


def test_a_training_run_gates_a_scored_unit_on_its_baseline_score(tmp_path: Path) -> None:
    """The baseline run's scores reach the gate (app/harness/training/runner.py): a wrong reply
    the judge scores 0.2 is 0.2 on both sides of the gate, not 0 against 0.2 (a win for a
    candidate that changed nothing), and the checkpoint keeps them for a resume."""
    import json
    import sqlite3

    from app import api

    bench = tmp_path / "store" / "questions" / "replies"
    bench.mkdir(parents=True)
    rows = [
        {
            "question_id": f"r{i:02d}",
            "task_type": "replies",
            "question": f"Write the reply to ticket {i}: 'My order {i} is late.'",
            "answer": f"Sorry order {i} is late: it ships today.",
            "checker": "rubric",
            "rubric": "Apologises, says when it ships.",
            "pass_threshold": 0.7,
        }
        for i in range(60)  # enough that the ladder keeps failures the evolver was not shown
    ]
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (bench / "benchmark.toml").write_text('name = "replies"\n')
    ws = tmp_path / "ws"
    api.init_workspace(ws, questions="replies", store=tmp_path / "store")
    oracle = {f"{role}_model": "sim/oracle" for role in ("agent", "evolver", "judge")}
    api.train(ws, overrides={**oracle, "epochs": 1, "sim_oracle_accuracy": 0.2})
    con = sqlite3.connect(ws / "harness.db")
    baseline = dict(
        con.execute("SELECT question_id, score FROM predictions WHERE run_id = 'baseline'")
    )
    evidence = con.execute("SELECT unit_id, base FROM gate_evidence WHERE task_type = 'replies'")
    pairs = [(baseline[unit], base) for unit, base in evidence]
    assert pairs and any(score == pytest.approx(0.2) for score, _ in pairs)
    assert all(base == pytest.approx(score) for score, base in pairs), pairs
    state = json.loads((ws / "checkpoint.json").read_text())["state"]
    kept = {key.rsplit("|", 1)[1]: score for key, score in state["baseline_scores"].items()}
    assert kept == pytest.approx(baseline)
