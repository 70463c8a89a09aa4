"""`judge-quality` (app/harness/rollouts/judge_quality.py): the cases file is checked line by
line, the check is recorded, and `train` warns until a passing one is recorded for its judge
model and rubrics; the simulated judged world (app/providers/sim/judge.py rubric_reply)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from loguru import logger

from app import api
from app.errors import UserError
from app.harness.rollouts.judge_quality import load_cases, missing_check_warning
from app.harness.rollouts.rubric import rubric_prompt
from app.providers.sim.generate import judge_case_lines, write_benchmark
from app.providers.sim.judge import rubric_reply
from app.providers.sim.world import build_world
from core.types import Question

UNITS = 24


def q(qid: str, checker: str = "rubric", rubric: str = "Be right.") -> Question:
    args = {"rubric": rubric} if checker == "rubric" else {}
    return Question(qid, "t", f"{qid}?", "x", checker=checker, checker_args=args)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ("[1]", "a case is a JSON object"),
        ('{"answer": "a", "band": [0, 1], "colour": 1, "question_id": "r1"}', "unknown field"),
        ('{"band": [0, 1], "question_id": "r1"}', "answer is missing"),
        ('{"answer": "a", "band": [0.5, 0.1], "question_id": "r1"}', "band must be"),
        ('{"answer": "a", "band": [0, "1"], "question_id": "r1"}', "band must be"),
        ('{"answer": "a", "band": [0, 1], "question_id": "nope"}', "not in the benchmark"),
        ('{"answer": "a", "band": [0, 1], "question_id": "e1"}', "give question_id of a rubric"),
        ('{"answer": "a", "band": [0, 1], "question_id": "r1", "kind": "x"}', "kind must be"),
        ('{"answer": 3, "band": [0, 1], "question_id": "r1"}', "answer must be a string"),
    ],
)
def test_a_bad_case_line_is_one_error_naming_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "cases.jsonl"
    good = '{"answer": "a", "band": [0, 1], "question_id": "r1"}'
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(UserError, match=message) as e:
        load_cases(path, {"r1": q("r1"), "e1": q("e1", "exact")})
    assert str(e.value).startswith(f"{path}:2: ") and "\n" not in str(e.value)


def test_cases_take_question_and_rubric_from_the_benchmark(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"answer": "a", "band": [0.8, 1], "question_id": "r1"}\n\n'
        '{"case_id": "own", "question": "Q", "rubric": "R", "answer": "", "band": [0, 0.1],'
        ' "kind": "control"}\n',
        encoding="utf-8",
    )
    cases = load_cases(path, {"r1": q("r1", rubric="Polite.")})
    assert [(c.case_id, c.question, c.rubric, c.kind) for c in cases] == [
        ("line1", "r1?", "Polite.", "reference"),
        ("own", "Q", "R", "control"),
    ]


def test_warning_until_a_passing_check_for_this_judge_and_every_rubric(tmp_path: Path) -> None:
    questions = [q("a", rubric="One."), q("b", rubric="Two."), q("c", "exact")]
    assert missing_check_warning(tmp_path, "m", [q("c", "exact")]) is None
    assert "2 of its 2 rubric(s) have no check" in str(
        missing_check_warning(tmp_path, "m", questions)
    )
    from core.judge_quality import rubric_key

    def record(model: str, rubrics: list[str], passed: bool, agreement: float) -> None:
        path = tmp_path / "judge_quality.json"
        data = json.loads(path.read_text()) if path.exists() else {"version": 1, "checks": []}
        data["checks"].append(
            {
                "judge_model": model,
                "rubrics": [rubric_key(r) for r in rubrics],
                "passed": passed,
                "agreement": agreement,
                "pass_line": 0.9,
            }
        )
        path.write_text(json.dumps(data))

    record("other", ["One.", "Two."], True, 1.0)  # another judge model proves nothing
    assert "2 of its 2" in str(missing_check_warning(tmp_path, "m", questions))
    record("m", ["One."], True, 0.95)
    assert "1 of its 2" in str(missing_check_warning(tmp_path, "m", questions))
    record("m", ["Two."], False, 0.7)
    assert "failed (agreement 0.700 < 0.90)" in str(missing_check_warning(tmp_path, "m", questions))
    record("m", ["Two."], True, 0.92)
    assert missing_check_warning(tmp_path, "m", questions) is None


def test_the_simulated_judge_grades_rubric_prompts_against_the_hidden_key() -> None:
    world = build_world("judged", 7, UNITS)
    spec = next(iter(world.cases.values()))
    question = Question(
        spec.question_id,
        spec.task_type,
        spec.question,
        spec.answer,
        checker="rubric",
        checker_args={"rubric": "r"},
    )

    def score(answer: str, key: str, noise: float = 0.0, invalid: float = 0.0) -> object:
        text = rubric_reply(world, rubric_prompt(question, answer), key, noise, invalid)
        try:
            return json.loads(text)["score"]
        except ValueError:
            return None

    assert score(spec.answer, "k") == 10
    assert score(spec.answer + "\n\nfiller", "k") == 10  # filler after the answer is ignored
    assert score(spec.wrong_answers[0], "k") == 0 and score("", "k") == 0
    keys = [f"k{i}" for i in range(200)]
    noisy = [score(spec.answer, k, noise=0.5) for k in keys]
    assert 0.3 < sum(s != 10 for s in noisy) / len(keys) < 0.6  # ~half drawn 0-10 at random
    invalid = [score(spec.answer, k, invalid=0.3) for k in keys]
    assert 0.2 < sum(s is None for s in invalid) / len(keys) < 0.4


def test_judge_quality_records_the_check_and_train_warns_and_runs(tmp_path: Path) -> None:
    world = build_world("judged", 7, UNITS)
    store = tmp_path / "store"
    write_benchmark(world, store / "questions" / "sim-judged", "sim-judged")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(judge_case_lines(world, per_type=1)) + "\n", encoding="utf-8")
    ws = tmp_path / "ws"
    api.init_workspace(ws, seed="sim-starter", questions="sim-judged", store=store)
    sim = {
        "agent_model": "sim/judged",
        "evolver_model": "sim/judged",
        "judge_model": "sim/judged",
        "sim_units_per_type": UNITS,
    }
    noisy = api.judge_quality(ws, cases, overrides={**sim, "sim_judge_noise": 0.5})
    assert noisy.cases == 18 and noisy.simulated_model and not noisy.passed
    assert noisy.band_misses and noisy.agreement < 0.9
    record = json.loads((ws / "analyses" / "judge_quality.json").read_text())
    assert [c["passed"] for c in record["checks"]] == [False]
    questions = [
        Question(
            r["question_id"],
            r["task_type"],
            r["question"],
            r["answer"],
            checker=r["checker"],
            checker_args=r["checker_args"],
        )
        for r in map(json.loads, (ws / "questions" / "questions.jsonl").read_text().splitlines())
    ]
    assert "failed" in str(missing_check_warning(ws / "analyses", "sim/judged", questions))
    with pytest.raises(UserError, match="missing.jsonl: cannot read"):
        api.judge_quality(ws, tmp_path / "missing.jsonl", overrides=sim)
    warnings: list[str] = []
    sink = logger.add(lambda m: warnings.append(str(m)), level="WARNING")
    try:
        result = api.train(ws, overrides={**sim, "epochs": 1, "sim_judge_invalid_share": 0.3})
    finally:
        logger.remove(sink)
    assert any("judge-quality -w WS --cases FILE" in w for w in warnings)
    # a judged run with unreadable judge replies ends normally; none of them is a 0
    assert result.test_accuracy > 0
    con = sqlite3.connect(ws / "harness.db")
    counts = dict(con.execute("SELECT check_status, count(*) FROM predictions GROUP BY 1"))
    nulls = con.execute(
        "SELECT count(*) FROM predictions WHERE check_status = 'invalid' AND score IS NOT NULL"
    ).fetchone()[0]
    con.close()
    assert counts.get("invalid", 0) > 0 and counts["ok"] > 0 and nulls == 0
