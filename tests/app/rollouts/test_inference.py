"""run_inference and answer_question against a scripted fake model (docs/architecture.md#a-step)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from app.errors import RunFailed
from app.harness.rollouts import inference
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings, answer_question, run_inference
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.store import load_seed, seed_dir
from app.paths import builtin_store, read_prompt
from app.providers.errors import BudgetExceeded, ProviderError, TransientError
from core.evolution.edits import Edit, apply_edits, replace_momentum
from core.trajectory import summarise_tool_output
from core.types import LLMResponse, Question, ToolCall, Usage
from tests.fakes.scripted import Request, ScriptedProvider

LONG_CONTEXT = "Summary: the file.\n" + "\n".join(f"line {i}: value {i * 7}" for i in range(80))


def scripted(script: dict[str, Sequence[LLMResponse | Exception]]) -> ScriptedProvider:
    """Per question, a list of replies (or exceptions) served in order, the last repeating.

    The question is recognised by its id inside the user message.
    """

    def question_id(request: Request) -> str:
        return next(k for k in sorted(script, key=len, reverse=True) if f"[{k}]" in request.user)

    return ScriptedProvider(script, key=question_id)


def reply(
    text: str = "", *calls: ToolCall, tokens: tuple[int, int] = (10, 2), cost: float = 0.001
) -> LLMResponse:
    return LLMResponse(
        text=text, tool_calls=calls, usage=Usage(*tokens), cost_usd=cost, model="fake"
    )


def question(
    qid: str,
    answer: str = "42",
    *,
    unit: str = "",
    context: str = "",
    task_type: str = "ledger",
    checker: str = "exact",
) -> Question:
    return Question(
        question_id=qid,
        task_type=task_type,
        question=f"[{qid}] What is it?",
        answer=answer,
        unit_id=unit,
        context=context,
        checker=checker,
    )


def prompts(
    skill_mode: str = "inline", skill: str = "# Ledger\n\n## Rules\n- r1\n"
) -> AgentPrompts:
    return AgentPrompts(
        system="# Agent\nBe exact.",
        skills={"ledger.md": skill, "default-strategy.md": "# D\n"},
        tool_docs={"read_context": "Reads the context.", "read_skill": "Reads a skill."},
        user_template=read_prompt("agent_user.md"),
        skill_mode=skill_mode,
        skills_version="v3",
        prompts_version="v2",
    )


def answer(provider, q: Question, p: AgentPrompts | None = None, **settings):
    return anyio.run(
        lambda: answer_question(provider, p or prompts(), q, AgentSettings(**settings))
    )


def infer(
    provider, qs, log: HarnessLog, run_id: str = "r1", p: AgentPrompts | None = None, **kwargs
):
    return anyio.run(
        lambda: run_inference(
            qs,
            provider=provider,
            prompts=p or prompts(),
            log=log,
            run_id=run_id,
            settings=AgentSettings(concurrency=4),
            **kwargs,
        )
    )


@pytest.fixture
def log(tmp_path: Path):
    with HarnessLog(tmp_path / "harness.db") as log:
        yield log


def tool_steps(pred) -> list[dict]:
    return [s for s in pred.steps if s["type"] == "tool"]


# ------------------------------------------------------------------------------ one question


def test_final_answer() -> None:
    q = question("q1", "42")
    provider = scripted({"q1": [reply("Thinking.\nANSWER: 41\nANSWER:  42 ")]})
    p = answer(provider, q, max_tokens=77, temperature=0.5, sample=3)
    assert (p.prediction, p.correct, p.stop_reason) == ("42", True, "final")
    assert (p.tokens_in, p.tokens_out, p.cost_usd) == (10, 2, 0.001)
    assert (p.skills_version, p.prompts_version) == ("v3", "v2")
    [call] = provider.requests
    assert call.tools is None and call.role == "agent"
    assert (call.temperature, call.max_tokens, call.seed) == (0.5, 77, 3)
    system, user = call.messages
    assert "- r1" in system["content"] and "[q1] What is it?" in user["content"]
    assert [s["type"] for s in p.steps] == ["model", "verdict"]
    assert p.steps[-1] == {
        "type": "verdict",
        "prediction": "42",
        "answer": "42",
        "correct": True,
        "checker": "exact",
        "stop_reason": "final",
        "answer_source": "answer_line",
    }


def test_wrong_final_answer_is_final_but_not_correct() -> None:
    p = answer(scripted({"q1": [reply("ANSWER: 7")]}), question("q1", "42"))
    assert (p.prediction, p.correct, p.stop_reason) == ("7", False, "final")


def test_tool_call_then_answer_trajectory_matches_what_the_model_saw() -> None:
    q = question("q1", context=LONG_CONTEXT)
    call = ToolCall(id="c1", name="read_context", arguments={"section": "full"})
    provider = scripted(
        {"q1": [reply("Let me look.", call, tokens=(5, 1)), reply("ANSWER: 42", tokens=(7, 3))]}
    )
    p = answer(provider, q)
    assert (p.stop_reason, p.correct, p.tokens_in, p.tokens_out) == ("final", True, 12, 4)
    first, second = provider.requests
    assert [t.name for t in first.tools] == ["read_context"]
    assert first.tools[0].parameters["properties"]["section"]["enum"] == ["summary", "full"]
    assistant, tool = second.messages[2:]
    assert assistant == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_context", "arguments": '{"section": "full"}'},
            }
        ],
    }
    assert tool["role"] == "tool" and tool["tool_call_id"] == "c1"
    expected = summarise_tool_output(LONG_CONTEXT)
    assert tool["content"] == expected
    assert "lines omitted ...]" in expected and len(expected) < len(LONG_CONTEXT)
    [step] = tool_steps(p)
    assert step == {
        "turn": 0,
        "type": "tool",
        "name": "read_context",
        "arguments": {"section": "full"},
        "status": "ok",
        "output": expected,
    }
    assert p.steps[0]["tool_calls"] == [
        {"id": "c1", "name": "read_context", "arguments": {"section": "full"}}
    ]


def test_default_section_returns_only_the_summary_line() -> None:
    q = question("q1", context=LONG_CONTEXT)
    call = ToolCall(id="c1", name="read_context", arguments={})
    provider = scripted({"q1": [reply("", call), reply("ANSWER: 42")]})
    p = answer(provider, q)
    assert tool_steps(p)[0]["output"] == "Summary: the file."
    assert provider.requests[1].messages[2]["content"] is None  # empty text -> null content


@pytest.mark.parametrize(
    "name, p",
    [("shell", prompts()), ("read_skill", prompts("inline"))],
    ids=["never-offered", "not-offered-inline"],
)
def test_unknown_tool_name_is_an_error_result_not_a_crash(name: str, p: AgentPrompts) -> None:
    q = question("q1", context="Summary: x\nFACT: y")
    provider = scripted(
        {"q1": [reply("", ToolCall("c9", name, {"task_type": "ledger"})), reply("ANSWER: 42")]}
    )
    pred = answer(provider, q, p)
    assert (pred.stop_reason, pred.correct) == ("final", True)
    [step] = tool_steps(pred)
    assert step["status"] == "error" and step["output"] == f"error: unknown tool {name!r}"
    assert provider.requests[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "c9",
        "content": step["output"],
    }


@pytest.mark.parametrize(
    "tool, arguments, reason",
    [
        ("read_context", {"section": "everything"}, "argument 'section' must be one of"),
        ("read_context", {"section": 3}, "argument 'section' must be a string"),
        ("read_context", {"bogus": "x"}, "unexpected argument 'bogus'"),
        ("read_context", ["full"], "arguments are not a JSON object"),
        ("read_skill", {}, "missing argument 'task_type'"),
        ("read_skill", {"task_type": "ledger", "x": "y"}, "unexpected argument 'x'"),
    ],
)
def test_schema_violating_arguments(tool: str, arguments, reason: str) -> None:
    q = question("q1", context="Summary: x\nFACT: y")
    provider = scripted({"q1": [reply("", ToolCall("c1", tool, arguments)), reply("ANSWER: 1")]})
    pred = answer(provider, q, prompts("tool"))
    [step] = tool_steps(pred)
    assert step["status"] == "error" and step["output"].startswith(f"error: {reason}")
    assert provider.requests[1].messages[-1]["content"] == step["output"]
    assert pred.stop_reason == "final" and not pred.correct


def test_read_skill_in_tool_mode_returns_the_task_types_skill() -> None:
    q = question("q1")
    provider = scripted(
        {
            "q1": [
                reply("", ToolCall("c1", "read_skill", {"task_type": "ledger"})),
                reply("ANSWER: 42"),
            ]
        }
    )
    pred = answer(provider, q, prompts("tool"))
    assert "# Skill" not in provider.requests[0].messages[0]["content"]
    assert [t.name for t in provider.requests[0].tools] == ["read_skill"]
    assert tool_steps(pred)[0]["output"] == "# Ledger\n\n## Rules\n- r1\n"


def test_read_skill_returns_the_whole_skill_file() -> None:
    # A skill as training grows it: the starter file, rules added, momentum guidance set.
    skill = load_seed(seed_dir(builtin_store(), "sim-starter")).skills["ledger.md"]
    rules = [f"- In ledger cases marked m{i}, take the smaller value." for i in range(14)]
    skill, reports = apply_edits(
        skill, [Edit("add", "Rules", content="\n".join(rules))], "ledger.md"
    )
    assert reports[0].applied
    skill = replace_momentum(skill, "\n".join(f"- guidance {i}" for i in range(6)))
    assert len(skill) < 2000  # short: well under any context budget
    provider = scripted(
        {
            "q1": [
                reply("", ToolCall("c1", "read_skill", {"task_type": "ledger"})),
                reply("ANSWER: 42"),
            ]
        }
    )
    answer(provider, question("q1"), prompts("tool", skill=skill))
    sent = provider.requests[1].messages[-1]["content"]
    assert [r for r in rules if r not in sent] == []


def test_arguments_that_are_not_valid_json() -> None:
    q = question("q1", context="Summary: x")
    raw = '{"section": "full"'
    provider = scripted(
        {"q1": [reply("", ToolCall("c1", "read_context", raw)), reply("ANSWER: 42")]}
    )
    pred = answer(provider, q)
    [step] = tool_steps(pred)
    assert step == {
        "turn": 0,
        "type": "tool",
        "name": "read_context",
        "arguments": raw,
        "status": "error",
        "output": "error: arguments are not valid JSON",
    }
    assistant = provider.requests[1].messages[2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == raw  # echoed as sent
    assert pred.stop_reason == "final"


@pytest.mark.parametrize("text", ["", "I would rather not say.", "answer is 42"])
def test_reply_without_answer_line_is_refused(text: str) -> None:
    pred = answer(scripted({"q1": [reply(text)]}), question("q1", "42"))
    assert (pred.stop_reason, pred.prediction, pred.correct) == ("refused", "", False)
    assert pred.steps[-1]["stop_reason"] == "refused"


def test_max_steps_reached() -> None:
    q = question("q1", context="Summary: x")
    loop = reply("", ToolCall("c", "read_context", {"section": "summary"}))
    provider = scripted({"q1": [loop]})
    pred = answer(provider, q, max_steps=3)
    assert len(provider.requests) == 3
    assert (pred.stop_reason, pred.prediction, pred.correct) == ("max_steps", "", False)
    assert len(tool_steps(pred)) == 3
    assert [s["turn"] for s in pred.steps if s["type"] == "model"] == [0, 1, 2]


@pytest.mark.parametrize(
    "exc", [TransientError("429 too many requests"), ProviderError("bad gateway")]
)
def test_provider_error_ends_the_question_with_stop_reason_error(exc: Exception) -> None:
    q = question("q1", context="Summary: x")
    provider = scripted({"q1": [reply("", ToolCall("c", "read_context", {})), exc]})
    pred = answer(provider, q)
    assert (pred.stop_reason, pred.prediction, pred.correct) == ("error", "", False)
    errors = [s for s in pred.steps if s["type"] == "error"]
    assert errors == [{"turn": 1, "type": "error", "error": str(exc)}]


def test_budget_exceeded_is_not_swallowed(log: HarnessLog) -> None:
    qs = [question(f"q{i}") for i in range(3)]
    provider = scripted(
        {
            "q0": [reply("ANSWER: 42")],
            "q1": [BudgetExceeded("budget spent")],
            "q2": [reply("ANSWER: 42")],
        }
    )
    with pytest.raises(BaseException) as info:  # anyio may wrap it in an exception group
        infer(provider, qs, log)
    leaves, error = [], info.value
    while isinstance(error, BaseExceptionGroup):
        leaves += error.exceptions[1:]
        error = error.exceptions[0]
    assert isinstance(error, BudgetExceeded) and not leaves


# --------------------------------------------------------------------------- the whole pool


def _pool(n: int, failing: int) -> tuple[list[Question], ScriptedProvider]:
    qs = [question(f"q{i:02d}") for i in range(n)]
    script = {
        q.question_id: [TransientError("timeout") if i < failing else reply("ANSWER: 42")]
        for i, q in enumerate(qs)
    }
    return qs, scripted(script)


def test_more_than_ten_percent_errors_raises_run_failed(log: HarnessLog) -> None:
    qs, provider = _pool(20, 3)
    with pytest.raises(RunFailed, match="3/20"):
        infer(provider, qs, log)
    # Nothing is lost: every answered question was still written.
    assert log.query("SELECT COUNT(*) AS n FROM predictions")[0]["n"] == 20


def test_ten_percent_errors_or_guard_off_does_not_raise(log: HarnessLog) -> None:
    qs, provider = _pool(20, 2)
    result = infer(provider, qs, log)
    assert result.stop_reason_counts == {"error": 2, "final": 18}
    assert result.accuracy == pytest.approx(18 / 20)
    qs, provider = _pool(20, 10)
    result = infer(provider, qs, log, run_id="r2", guard=False)
    assert result.stop_reason_counts["error"] == 10


def test_pairs_fold_into_units(log: HarnessLog) -> None:
    qs = [
        question("u1a", unit="u1"),
        question("u1b", unit="u1"),
        question("u2a", unit="u2"),
        question("u2b", unit="u2"),
        question("s3"),
        question("s4", task_type="dates"),
    ]
    right, wrong = [reply("ANSWER: 42")], [reply("ANSWER: 0")]
    provider = scripted(
        {"u1a": right, "u1b": wrong, "u2a": right, "u2b": right, "s3": wrong, "s4": right}
    )
    result = infer(provider, qs, log)
    assert (result.total, result.correct) == (4, 2)
    assert result.accuracy == 0.5
    assert result.per_task_type == {
        "dates": {"total": 1, "correct": 1, "accuracy": 1.0},
        "ledger": {"total": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)},
    }
    assert result.correctness == {
        "u1a": True,
        "u1b": False,
        "u2a": True,
        "u2b": True,
        "s3": False,
        "s4": True,
    }
    rows = {r["question_id"]: r for r in log.query("SELECT * FROM predictions")}
    assert rows["u1a"]["unit_id"] == rows["u1b"]["unit_id"] == "u1"


def test_predictions_are_logged_once_with_their_trajectory(log: HarnessLog, monkeypatch) -> None:
    monkeypatch.setattr(inference, "WRITE_BATCH", 2)  # several batches plus the final flush
    qs = [question(f"q{i}", context="Summary: x\nFACT: 1") for i in range(7)]
    script = {
        q.question_id: [
            reply("", ToolCall("c1", "read_context", {"section": "full"})),
            reply("ANSWER: 42"),
        ]
        for q in qs
    }
    provider = scripted(script)
    result = infer(provider, qs, log, run_id="run-a")
    rows = log.query("SELECT * FROM predictions WHERE run_id = 'run-a' ORDER BY question_id")
    assert [r["question_id"] for r in rows] == [q.question_id for q in qs]
    for row in rows:
        steps = json.loads(row["steps_json"])
        assert [s["type"] for s in steps] == ["model", "tool", "model", "verdict"]
        assert steps[1]["output"] == "Summary: x\nFACT: 1"
        assert (row["correct"], row["stop_reason"], row["prediction"]) == (1, "final", "42")
        assert (row["skills_version"], row["prompts_version"]) == ("v3", "v2")
        assert row["tokens_in"] == 20 and row["cost_usd"] == pytest.approx(0.002)
    assert result.accuracy == 1.0
    # The same run again (a retried step) replaces rows, never duplicates them.
    again = scripted({q.question_id: [reply("ANSWER: 0")] for q in qs})
    infer(again, qs, log, run_id="run-a")
    rows = log.query("SELECT question_id, correct FROM predictions WHERE run_id = 'run-a'")
    assert len(rows) == 7 and not any(r["correct"] for r in rows)
    dupes = log.query(
        "SELECT run_id, question_id, COUNT(*) AS n FROM predictions "
        "GROUP BY run_id, question_id HAVING n > 1"
    )
    assert dupes == []
    infer(again, qs[:2], log, run_id="run-b")  # another run keeps its own rows
    assert log.query("SELECT COUNT(*) AS n FROM predictions")[0]["n"] == 9


def test_reply_with_a_lone_surrogate_is_logged_not_fatal(log: HarnessLog) -> None:
    provider = scripted({"q1": [reply("half an emoji \ud83d\nANSWER: 42")]})
    result = infer(provider, [question("q1")], log)
    assert result.accuracy == 1.0
    assert log.query("SELECT COUNT(*) AS n FROM predictions")[0]["n"] == 1
