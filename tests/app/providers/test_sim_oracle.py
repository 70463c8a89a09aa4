"""`sim/oracle` (app/providers/sim/oracle.py): any benchmark runs offline, its wrong answers are
wrong to the question's checker, and every output that shows results says what it checks."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from app.cli import main
from app.providers.sim import notices, oracle
from app.tui import data as tui_data
from app.tui.app import make_app
from core.checkers import check
from core.evolution.diagnose import CATEGORIES
from core.evolution.edits import parse_edits
from core.types import Question, ToolSpec
from tests.app.oracle_bench import NAME, SEED, TASK_TYPES, write_store
from tests.tui.helpers import SIZE, screen_text, settle

ORACLE_SET = [
    "--set",
    'agent_model="sim/oracle"',
    "--set",
    'evolver_model="sim/oracle"',
    "--set",
    'judge_model="sim/oracle"',
]


def q(checker: str, answer: str, **kw: object) -> Question:
    return Question("q1", "t", "What?", answer, checker=checker, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "question",
    [
        q("numeric", "42"),
        q("numeric", "0.5", checker_args={"rel_tol": 0.9}),
        q("exact", "Paris"),
        q("choice", "C"),
        q("regex", "ab", checker_args={"pattern": "[a-z]+"}),
    ],
)
def test_a_wrong_answer_is_rejected_by_the_questions_checker(question: Question) -> None:
    assert check(question, question.answer)
    wrong = oracle.wrong_answer(question)
    assert wrong and not check(question, wrong)


def test_a_checker_the_oracle_cannot_run_gets_an_off_topic_reply() -> None:
    assert oracle.wrong_answer(q("mymod:check", "yes")) == oracle.OFF_TOPIC


def test_answers_right_at_the_set_rate_whatever_the_skills_say() -> None:
    questions = [
        Question(f"q{i}", "t", f"What is {i} + 1?", str(i + 1), checker="numeric")
        for i in range(400)
    ]
    provider = oracle.OracleProvider(questions, oracle.OracleSettings(accuracy=0.6))

    async def answers(skill: str) -> list[bool]:
        out = []
        for question in questions:
            messages = [
                {"role": "system", "content": skill},
                {"role": "user", "content": f"<question>\n{question.question}\n</question>"},
            ]
            reply = await provider.complete(messages)
            out.append(reply.text.endswith(f"ANSWER: {question.answer}"))
        return out

    plain = anyio.run(answers, "# Skill\n- nothing")
    better = anyio.run(answers, "# Skill\n- " + "\n- ".join(oracle.GENERIC_RULES))
    assert plain == better  # no edit can ever help: it checks plumbing, not learning
    assert 0.5 < sum(plain) / len(plain) < 0.7


def test_the_tuis_copy_of_the_oracles_name_is_the_providers() -> None:
    assert oracle.ORACLE_MODEL == notices.ORACLE_MODEL
    assert tui_data.ORACLE_MODEL == notices.ORACLE_MODEL


async def _tui_banner(ws: Path) -> str:
    app = make_app(ws, poll_interval=0, warm_up=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        return screen_text(app)


def test_a_user_benchmark_runs_init_train_report_offline(tmp_path: Path, capsys) -> None:
    store = write_store(tmp_path / "store")
    ws = tmp_path / "ws"
    assert (
        main(["init", "-w", str(ws), "--seed", SEED, "--questions", NAME, "--store", str(store)])
        == 0
    )
    # the built-in simulated model refuses a benchmark it did not generate
    assert main(["train", "-w", str(ws), "--set", "epochs=1", "--no-progress"]) == 2
    capsys.readouterr()
    argv = ["train", "-w", str(ws), "--set", "epochs=2", "--no-progress", *ORACLE_SET]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "test accuracy: baseline" in out
    assert notices.SIM_NOTICE in out and notices.ORACLE_NOTICE in out
    assert main(["report", "-w", str(ws), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    train = next(r for r in summary["runs"] if r["kind"] == "train")
    assert train["status"] == "done" and train["sim_oracle"] and train["simulated_model"]
    roles = {c["role"]: c["calls"] for c in summary["llm_calls"]}
    assert roles["agent"] > 0 and roles["evolver"] > 0 and roles["judge"] > 0
    # every task type was answered, right at about the set rate, by the checkers
    assert main(["report", "-w", str(ws)]) == 0
    assert notices.ORACLE_NOTICE in capsys.readouterr().out
    text = anyio.run(_tui_banner, ws)  # the TUI says it too
    assert "SIMULATED MODEL" in text and "sim/oracle answered at a set rate" in text
    assert main(["eval", "-w", str(ws), "v1", "--json", *ORACLE_SET]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["per_task_type"]) == set(TASK_TYPES)
    assert 0.45 <= result["accuracy"] <= 0.75


def _ask(provider: oracle.OracleProvider, prompt: str) -> str:
    async def go() -> str:
        reply = await provider.complete([{"role": "user", "content": prompt}])
        return reply.text

    return anyio.run(go)


def test_the_judge_grades_on_the_answer_key_with_settable_noise() -> None:
    question = Question("q1", "t", "What is 2 + 2?", "4", checker="numeric")
    exact = oracle.OracleProvider([question], oracle.OracleSettings(judge_noise=0.0))

    def scalar(answer: str, salt: int = 0) -> str:
        return (
            f"## Judge: scalar\n<question>\nWhat is 2 + 2?\n</question>\n"
            f"<answer>\nworking {salt}\nANSWER: {answer}\n</answer>"
        )

    assert json.loads(_ask(exact, scalar("4")))["score"] == oracle.SCORE_CORRECT
    assert json.loads(_ask(exact, scalar("5")))["score"] == oracle.SCORE_WRONG
    noisy = oracle.OracleProvider([question], oracle.OracleSettings(judge_noise=1.0))
    scores = {json.loads(_ask(noisy, scalar("4", salt)))["score"] for salt in range(30)}
    assert len(scores) > 3  # drawn at random, not graded


def test_the_evolver_and_diagnoses_reply_in_the_formats_the_harness_parses() -> None:
    provider = oracle.OracleProvider([], oracle.OracleSettings())
    skill = "# t\n\n## Rules\n" + oracle.GENERIC_RULES[0] + "\n"
    prompt = (
        f'## Task: evolve-skill\nat most 2 edits\n<skill_file name="t.md">\n{skill}</skill_file>'
    )
    parsed = parse_edits(_ask(provider, prompt))
    assert not parsed.errors and 1 <= len(parsed.edits) <= 2
    assert all(e.op == "add" and e.content not in skill for e in parsed.edits)
    diagnosis = json.loads(_ask(provider, "## Task: diagnose-failure\n<question>x</question>"))
    assert diagnosis["category"] in CATEGORIES and diagnosis["target"] == "skill"


def test_the_learning_stand_in_blames_the_system_prompt_for_a_fifth_until_it_holds_the_line() -> (
    None
):
    """estimate's stand-in (app/estimate.py) goes through prompt evolution as a learning run
    does: a share of its failures are the system prompt's, its prompt evolver proposes the line,
    and once the system prompt holds it those failures are the skill's again."""
    questions = [Question(f"q{i}", "t", f"What is {i} + 1?", str(i + 1)) for i in range(200)]
    learner = oracle.OracleProvider(questions, oracle.OracleSettings(rules=5))
    never = oracle.OracleProvider(questions, oracle.OracleSettings(rules=0))

    def diagnose(provider: oracle.OracleProvider, q: Question, system: str) -> str:
        prompt = (
            f"## Task: diagnose-failure\n<question>\n{q.question}\n</question>\n"
            f'<agent_answer stop_reason="final">0</agent_answer>\n'
            f"<system_prompt>\n{system}\n</system_prompt>"
        )
        return json.loads(_ask(provider, prompt))["target"]

    blamed = [q for q in questions if diagnose(learner, q, "Answer.") == "system"]
    assert 0.1 < len(blamed) / len(questions) < 0.3  # SYSTEM_NEED_SHARE = 0.2
    assert all(diagnose(learner, q, "Answer.\n" + oracle.SYSTEM_RULE) == "skill" for q in blamed)
    assert all(diagnose(never, q, "Answer.") == "skill" for q in blamed)  # offline: never
    evolve = (
        '## Task: evolve-system-prompt\n<prompt_file name="system.md">\nAnswer.\n</prompt_file>'
    )
    edits = parse_edits(_ask(learner, evolve)).edits
    assert [e.content for e in edits] == [oracle.SYSTEM_RULE]


def test_the_judge_grades_a_rubric_answer_on_the_answer_key() -> None:
    """The rubric prompt holds the extracted answer, without an ANSWER: marker
    (app/harness/rollouts/rubric.py): the reference answer scores right, another wrong."""
    from app.harness.rollouts.rubric import rubric_prompt

    answer = "Sorry it arrived broken: we will send a new mug today."
    question = Question(
        "r1", "t", "Write the reply to: 'My mug arrived broken.'", answer, checker="rubric",
        checker_args={"rubric": "Apologises once."},
    )  # fmt: skip
    judge = oracle.OracleProvider([question], oracle.OracleSettings(judge_noise=0.0))

    def score(reply: str) -> int:
        return json.loads(_ask(judge, rubric_prompt(question, reply)))["score"]

    assert score(answer) == oracle.SCORE_CORRECT
    assert score(oracle.OFF_TOPIC) == score("") == oracle.SCORE_WRONG


def test_a_question_with_reference_tool_calls_makes_them_when_right_and_then_answers() -> None:
    """`metadata.oracle_tool_calls` (bench/public/bfcl_multi_turn.py): a right answer makes the
    calls, all in one reply and once, then answers; a wrong one, or tools not offered, none."""
    planned = [
        {"name": "cd", "arguments": {"folder": "docs"}},
        {"name": "mkdir", "arguments": {"dir_name": "temp"}},
    ]
    question = Question(
        "m1", "t", "Make temp in docs.", "ok", metadata={"oracle_tool_calls": planned}
    )
    plain = Question("m2", "t", "What is 2 + 2?", "4", checker="numeric")
    tools = [ToolSpec(n, f"tool {n}", {"type": "object"}) for n in ("cd", "mkdir", "ls")]

    async def turns(accuracy: float, offered: list[ToolSpec], q: Question) -> list[object]:
        provider = oracle.OracleProvider([question, plain], oracle.OracleSettings(accuracy))
        messages: list[dict] = [{"role": "user", "content": q.question}]
        first = await provider.complete(messages, tools=offered)
        if not first.tool_calls:
            return [first]
        calls = [
            {"id": c.id, "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in first.tool_calls
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
        return [first, await provider.complete(messages, tools=offered)]

    first, second = anyio.run(turns, 1.0, tools, question)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        (p["name"], p["arguments"]) for p in planned
    ]
    assert not second.tool_calls and second.text.endswith("ANSWER: ok")
    (wrong,) = anyio.run(turns, 0.0, tools, question)
    assert not wrong.tool_calls and "ANSWER: ok" not in wrong.text
    (unoffered,) = anyio.run(turns, 1.0, tools[1:], question)
    assert not unoffered.tool_calls and unoffered.text.endswith("ANSWER: ok")
    (other,) = anyio.run(turns, 1.0, tools, plain)  # no metadata: as before, no calls
    assert not other.tool_calls and other.text.endswith("ANSWER: 4")
