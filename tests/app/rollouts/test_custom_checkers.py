"""Custom (`module:function`) and rubric checkers in training (docs/checkers.md): a hostile
checker costs one recorded failure, never the run; a judge reply that does not parse is
invalid, never scored 0."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from app.errors import UserError
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.checking import AnswerChecker
from app.harness.rollouts.custom_checkers import CheckerPool
from app.harness.rollouts.inference import AgentSettings, run_inference
from app.harness.rollouts.rubric import RubricSettings, parse_rubric_score
from app.harness.workspace.harness_log import HarnessLog
from app.paths import read_prompt
from core.checkers import CheckStatus
from core.types import Question
from tests.fakes.scripted import Request, ScriptedProvider

PLUGINS = "tests.app.checker_plugins"


def question(qid: str, checker: str, **args: object) -> Question:
    return Question(
        question_id=qid,
        task_type="ledger",
        question=f"[{qid}] What is it?",
        answer="42",
        checker=checker,
        checker_args=dict(args),
    )


def prompts() -> AgentPrompts:
    return AgentPrompts(
        system="# Agent\nBe exact.",
        skills={"ledger.md": "# Ledger\n\n## Rules\n- SECRET-SKILL-RULE\n"},
        tool_docs={"read_context": "Reads the context.", "read_skill": "Reads a skill."},
        user_template=read_prompt("agent_user.md"),
        skills_version="v9-skillver",
        prompts_version="v2",
    )


def run(qs: list[Question], checker: AnswerChecker, provider: ScriptedProvider, log: HarnessLog):
    return anyio.run(
        lambda: run_inference(
            qs,
            provider=provider,
            prompts=prompts(),
            log=log,
            run_id="r1",
            settings=AgentSettings(concurrency=4, checker=checker),
        )
    )


@pytest.fixture
def log(tmp_path: Path):
    with HarnessLog(tmp_path / "harness.db") as log:
        yield log


def stored(log: HarnessLog) -> dict[str, dict]:
    rows = log.query(
        "SELECT question_id, correct, score, check_status, check_reason FROM predictions"
    )
    return {r["question_id"]: r for r in rows}


HOSTILE = {
    "raises": "raised RuntimeError: checker blew up",
    "hangs": "timed out after 1.5s",
    "returns_nan": "not a number in [0, 1]",
    "returns_seven": "score 7 is not a number in [0, 1]",
    "exits": "checker process died (exit code 3)",
    "raises_system_exit": "raised SystemExit",
}


def test_hostile_checkers_cost_one_recorded_failure_each(log: HarnessLog) -> None:
    names = [*HOSTILE, "prints_megabytes", "returns_huge_reason", "exact", "partial", "ok_dict"]
    qs = [question(n, f"{PLUGINS}:{n}", pass_threshold=0.5) for n in names]
    checker = AnswerChecker(pool=CheckerPool(workers=2, timeout_s=1.5))
    try:
        result = run(qs, checker, ScriptedProvider(["ANSWER: 42"]), log)
    finally:
        checker.close()
    rows = stored(log)
    assert len(rows) == len(names)  # the run went on past every hostile checker
    for name, reason in HOSTILE.items():
        row = rows[name]
        assert row["check_status"] == CheckStatus.CHECK_ERROR, name
        assert reason in row["check_reason"], (name, row["check_reason"])
        assert row["correct"] == 0 and row["score"] == 0.0
        assert result.correctness[name] is False  # a failure, counted in accuracy
    # megabytes printed go nowhere; a megabyte reason is cut before it crosses the pipe
    assert rows["prints_megabytes"]["check_status"] == "ok"
    assert rows["prints_megabytes"]["correct"] == 1
    assert len(rows["returns_huge_reason"]["check_reason"]) <= 500
    assert rows["exact"]["score"] == 1.0 and rows["ok_dict"]["correct"] == 1
    assert rows["partial"]["score"] == pytest.approx(0.6)
    assert rows["partial"]["correct"] == 1  # 0.6 >= pass_threshold 0.5
    assert result.check_counts == {"check_error": len(HOSTILE), "ok": 5}
    assert sum(result.check_reasons.values()) == len(HOSTILE)  # each reason counted
    assert result.check_reasons["timed out after 1.5s"] == 1
    assert result.scores["partial"] == pytest.approx(0.6)


def test_pass_threshold_defaults_to_a_full_score(log: HarnessLog) -> None:
    checker = AnswerChecker(pool=CheckerPool(workers=1, timeout_s=5))
    try:
        result = run(
            [question("p", f"{PLUGINS}:partial")], checker, ScriptedProvider(["ANSWER: 42"]), log
        )
    finally:
        checker.close()
    assert result.correctness == {"p": False} and result.scores == {"p": pytest.approx(0.6)}


def test_a_checker_that_does_not_load_is_bad_input() -> None:
    pool = CheckerPool(workers=1, timeout_s=5)
    try:
        with pytest.raises(UserError, match="has no function 'nope'"):
            pool.check(f"{PLUGINS}:nope", question("q", f"{PLUGINS}:nope"), "42")
        with pytest.raises(UserError, match="cannot import no_such_module_xyz"):
            pool.check("no_such_module_xyz:f", question("q", "no_such_module_xyz:f"), "42")
    finally:
        pool.close()


# ------------------------------------------------------------------------------ rubric


def rubric_provider(judge_replies: list[str]) -> ScriptedProvider:
    return ScriptedProvider({"agent": ["ANSWER: a short reply"], "judge": judge_replies})


def rubric_question(qid: str = "j1", threshold: float = 0.7) -> Question:
    return question(
        qid, "rubric", rubric="Polite, names the refund window.", pass_threshold=threshold
    )


def test_invalid_judge_replies_are_excluded_never_scored_zero(log: HarnessLog) -> None:
    provider = rubric_provider(
        ['{"score": 8}', "I think it is fine", '{"score": 6, "reasoning": "ok"}']
    )
    checker = AnswerChecker(judge=provider, rubric=RubricSettings(samples=3))
    result = run([rubric_question()], checker, provider, log)
    row = stored(log)["j1"]
    assert row["score"] == pytest.approx(0.7)  # mean of 0.8 and 0.6; the invalid one left out
    assert row["correct"] == 1 and row["check_status"] == "ok"
    assert "1 of 3 judge replies invalid" in row["check_reason"]
    judge_calls = [r for r in provider.requests if r.role == "judge"]
    assert [r.seed for r in judge_calls] == [0, 1, 2]
    assert {r.temperature for r in judge_calls} == {0.1}
    assert result.correctness == {"j1": True}


def test_a_unit_whose_judge_replies_are_all_invalid_has_no_verdict(log: HarnessLog) -> None:
    provider = rubric_provider(["no idea", '{"score": 11}', '{"score": "high"}'])
    checker = AnswerChecker(judge=provider, rubric=RubricSettings(samples=3))
    result = run([rubric_question(), question("e", "exact")], checker, provider, log)
    row = stored(log)["j1"]
    assert row["score"] is None and row["check_status"] == "invalid"
    assert "all 3 judge replies invalid" in row["check_reason"]
    # not a failure: left out of accuracy and of the scores the gate compares
    assert "j1" not in result.correctness and "j1" not in result.scores
    assert result.check_counts == {"invalid": 1, "ok": 1}
    assert result.total == 1


def test_the_judge_sees_question_rubric_and_answer_only(log: HarnessLog) -> None:
    provider = rubric_provider(['{"score": 9}'])
    checker = AnswerChecker(judge=provider, rubric=RubricSettings(samples=2))
    run([rubric_question()], checker, provider, log)
    judge_prompts = [r.user for r in provider.requests if r.role == "judge"]
    assert len(judge_prompts) == 2
    for text in judge_prompts:
        assert "Polite, names the refund window." in text and "a short reply" in text
        assert "[j1] What is it?" in text
        assert "SECRET-SKILL-RULE" not in text and "skillver" not in text


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ('{"score": 7}', 7.0),
        ('Sure: {"score": "4", "reasoning": "x"}', 4.0),
        ('{"score": -1}', None),
        ('{"score": NaN}', None),
        ('{"score": true}', None),
        ("", None),
    ],
)
def test_parse_rubric_score(reply: str, score: float | None) -> None:
    assert parse_rubric_score(reply)[0] == score


def test_judge_requests_are_role_judge(log: HarnessLog) -> None:
    seen: list[Request] = []
    provider = rubric_provider(['{"score": 10}'])
    checker = AnswerChecker(judge=provider, rubric=RubricSettings(samples=1))
    run([rubric_question()], checker, provider, log)
    seen = [r for r in provider.requests if r.role == "judge"]
    assert len(seen) == 1 and "## Judge: rubric" in seen[0].user


def test_the_fork_checker_verifier_never_passes_a_custom_checker_as_exact() -> None:
    from app.harness.data.verifiers import checker_verifier

    branch = {"stop_reason": "final", "prediction": "42"}
    verdict = checker_verifier(question("r", "rubric"), branch)
    # a branch the fork never checked: unknown, never an exact comparison of "42"
    assert verdict.status == "unknown" and "recorded no check" in verdict.reason
    assert checker_verifier(question("e", "exact"), branch).status == "pass"


def test_a_rubric_question_without_a_rubric_is_a_check_error(log: HarnessLog) -> None:
    provider = rubric_provider(['{"score": 9}'])
    checker = AnswerChecker(judge=provider, rubric=RubricSettings(samples=1))
    run([question("j", "rubric", pass_threshold=0.5)], checker, provider, log)
    row = stored(log)["j"]
    assert (
        row["check_status"] == "check_error"
        and "without checker_args.rubric" in row["check_reason"]
    )
    assert not [r for r in provider.requests if r.role == "judge"]
