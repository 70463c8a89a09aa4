"""Answers as real models write them: the `ANSWER:` line first, then declared fallbacks."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from app.errors import UserError
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings, _fallback, answer_question
from app.harness.workspace.store import load_benchmark
from app.paths import read_prompt
from core.checkers import extract_answer, fallback_answer
from core.types import Question, StopReason
from tests.fakes.scripted import ScriptedProvider


@pytest.mark.parametrize(
    ("text", "method", "want"),
    [
        ("9 * 20 = 180", "last_number", "180"),
        ("The total is 1,250.5 dollars.", "last_number", "1250.5"),
        ("No digits here.", "last_number", None),
        ("The capital city of Norway is Oslo.", "last_line", "The capital city of Norway is Oslo"),
        ("Thinking...\n\n**Oslo**\n", "last_line", "Oslo"),
        (
            "Denmark is the capital of Denmark.\n</pre>",
            "last_line",
            "Denmark is the capital of Denmark",
        ),
        ("<answer>\nOslo\n</answer>", "last_line", "Oslo"),
        ("I pick (C).", "choice", "C"),
        ("The answer is b", "choice", "B"),
        ("", "last_line", None),
        ("anything", "extract", None),  # the harness makes that call, not the checker
    ],
)
def test_fallbacks(text, method, want):
    assert fallback_answer(text, method) == want


def test_answer_line_wins_over_fallbacks():
    assert extract_answer("7 + 5 = 12\nANSWER: 12") == "12"


# Replies shaped like small real models' on store/questions/real-easy: the first ends as a 1.5B
# instruct model's reply did (marker after the reasoning, same line); then lower case, bold.
REAL_REPLIES = [
    (
        "What is the capital city of Thailand?",
        "Bangkok",
        "Thailand's capital is often confused, but the capital IS Bangkok. ANSWER: Bangkok",
    ),
    ("What is the capital city of Norway?", "Oslo", "The capital of Norway is Oslo.\nanswer: Oslo"),
    ("What is 9 * 20?", "180", "9 * 20 = 180\n\n**Answer:** 180"),
]


@pytest.mark.parametrize(("text", "answer", "reply"), REAL_REPLIES)
def test_real_replies_with_a_marker_mid_line_are_answers_not_refusals(text, answer, reply):
    q = Question("q1", "geo", text, answer)
    prompts = AgentPrompts(
        system="# Agent",
        tool_docs={},
        skills={},
        user_template=read_prompt("agent_user.md"),
        skills_version="v1",
        prompts_version="v1",
    )
    provider = ScriptedProvider([reply])
    pred = anyio.run(lambda: answer_question(provider, prompts, q, AgentSettings()))
    assert (pred.stop_reason, pred.correct) == (StopReason.FINAL, True)
    assert pred.steps[-1]["answer_source"] == "answer_line"


def run_fallback(provider, text: str, fallbacks: dict) -> tuple:
    q = Question("q1", "geo", "What is the capital of Norway?", "Oslo")
    steps: list = []
    settings = AgentSettings(answer_fallbacks=fallbacks)
    found = anyio.run(lambda: _fallback(provider, q, text, settings, steps))
    return found, steps


def test_fallbacks_apply_in_order_per_task_type_and_are_marked():
    provider = ScriptedProvider(["ANSWER: Oslo"])
    found, _ = run_fallback(
        provider, "It is Oslo, 1 city.", {"*": ["last_number"], "geo": ["extract", "last_line"]}
    )
    assert found == ("Oslo", "extract")
    [request] = provider.requests
    assert request.kwargs["role"] == "extract"
    assert "It is Oslo, 1 city." in request.messages[0]["content"]


def test_extraction_that_finds_nothing_falls_through_and_none_means_refused():
    found, steps = run_fallback(
        ScriptedProvider(["ANSWER: none"]), "I cannot say.", {"*": ["extract"]}
    )
    assert found == (None, "") and steps[-1]["type"] == "extract"
    assert run_fallback(ScriptedProvider(["x"]), "Oslo", {}) == ((None, ""), [])


def write_bench(tmp_path: Path, fallbacks: str) -> Path:
    (tmp_path / "questions.jsonl").write_text(
        '{"question_id": "a", "task_type": "geo", "question": "q?", "answer": "x"}\n'
    )
    (tmp_path / "benchmark.toml").write_text(f'name = "b"\n{fallbacks}\n')
    return tmp_path


def test_benchmark_declares_fallbacks_as_a_list_or_per_task_type(tmp_path):
    bench = load_benchmark(write_bench(tmp_path, 'answer_fallbacks = ["last_number"]'))
    assert bench.answer_fallbacks == {"*": ("last_number",)}
    bench = load_benchmark(write_bench(tmp_path, '[answer_fallbacks]\ngeo = ["extract"]'))
    assert bench.answer_fallbacks == {"geo": ("extract",)}


@pytest.mark.parametrize(
    "bad",
    [
        'answer_fallbacks = ["guess"]',
        '[answer_fallbacks]\nmaths = ["last_line"]',
        'answer_fallbacks = "last_line"',
    ],
)
def test_bad_fallbacks_are_refused_naming_the_key(tmp_path, bad):
    with pytest.raises(UserError, match="answer_fallbacks"):
        load_benchmark(write_bench(tmp_path, bad))
