"""export --format otlp, then ingest of that file, keeps every step
(app/harness/ingest/roundtrip.py): model messages, tool calls with their arguments,
observations with their error flags, provider errors and the final answer. Steps that a sim
run does not produce (a refused tool call, a provider error, the same reply twice) are
planted in a run's rows first."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.harness.data.export_otel import load_trajectories
from app.harness.data.fork import held_out_question_ids
from app.harness.ingest import parse, roundtrip
from app.harness.ingest.spans import Span, SpanGroups
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from core.traces import Source

PLANTED = [
    {
        "turn": 0,
        "type": "model",
        "text": "Let me look.",
        "tool_calls": [
            {"id": "c0", "name": "read_context", "arguments": {"part": 1, "b": [1, 2]}},
            {"id": "c1", "name": "read_skill", "arguments": {"name": "nope"}},
        ],
    },
    {
        "turn": 0,
        "type": "tool",
        "name": "read_context",
        "arguments": {"part": 1, "b": [1, 2]},
        "status": "ok",
        "output": "Figures: 12 and 30.",
    },
    {
        "turn": 0,
        "type": "tool",
        "name": "read_skill",
        "arguments": {"name": "nope"},
        "status": "error",
        "output": "no skill named 'nope'",
    },
    {"turn": 1, "type": "error", "error": "rate limited (429)"},
    {"turn": 1, "type": "model", "text": "Let me look.", "tool_calls": []},
    {"turn": 2, "type": "extract", "text": "ANSWER: 42"},
    {"type": "verdict", "prediction": "42", "answer": "42", "correct": True},
]


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("roundtrip") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["infer", "-w", str(ws), "--task-types", "ledger", "--no-progress"]) == 0
    with sqlite3.connect(ws / "harness.db") as conn:
        conn.execute(
            "UPDATE predictions SET steps_json = ? WHERE id = "
            "(SELECT MIN(id) FROM predictions WHERE run_id = 'infer-1')",
            (json.dumps(PLANTED),),
        )
    return ws


def test_the_otlp_round_trip_keeps_every_step(ws, tmp_path):
    api.export_traces(ws, ["infer-1"], format="otlp", out=tmp_path)
    with Session(ws, load_config(None)) as s:
        written = list(load_trajectories(s, "infer-1", held_out_question_ids(s.benchmark)))
    read = [trace for trace, _ in parse.traces(tmp_path / "otlp.json")]
    assert len(read) == len(written) > 1
    result = roundtrip.compare(written, read)
    assert result.first_difference == ""
    assert result.share == 1.0
    planted = next(t for t in read if any(s.is_error for s in t.steps))
    assert planted.error  # the provider error
    assert [s.text for s in planted.steps if s.text == "Let me look."] == ["Let me look."] * 2


def test_a_lost_step_is_seen(ws, tmp_path):
    api.export_traces(ws, ["infer-1"], format="otlp", out=tmp_path)
    with Session(ws, load_config(None)) as s:
        written = list(load_trajectories(s, "infer-1", held_out_question_ids(s.benchmark)))
    read = [trace for trace, _ in parse.traces(tmp_path / "otlp.json")]
    short = replace(read[0], steps=read[0].steps[:-1])
    result = roundtrip.compare(written, [short, *read[1:]])
    assert result.equal == len(written) - 1 and result.first_difference


def _span(trace: str, span: str, parent: str = "") -> Span:
    return Span(trace, span, parent, "s", 0, 0, {}, [], False, 1)


def test_a_root_that_comes_first_waits_for_its_children():
    groups = SpanGroups(Source.PHOENIX)
    done = [
        g
        for s in (_span("t", "r"), _span("t", "a", "r"), _span("t", "b", "a"))
        for g in groups.add(s)
    ]
    assert done == []
    assert [len(g) for g in groups.rest()] == [3]
    # one record of an OTLP batch: the traces whose root came in it are complete at its end
    groups = SpanGroups(Source.OTLP)
    for s in (_span("u", "r"), _span("u", "a", "r"), _span("v", "c", "x")):
        assert groups.add(s) == []
    assert [len(g) for g in groups.end_record()] == [2]
    assert [len(g) for g in groups.rest()] == [1]
