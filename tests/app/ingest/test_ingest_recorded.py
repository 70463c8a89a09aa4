"""What was recorded is what is stored: tool calls once, tool results not hidden, token
counts, errors and times as the exporting tool wrote them (app/harness/ingest/documents.py,
spans.py, core/traces.py). Records are written here in the shapes the client libraries
write, with the libraries' own ids (a tracer's id is never the model's call id)."""

from __future__ import annotations

import json
from pathlib import Path

from app.harness.ingest.parse import traces
from core.traces import StepKind, Trace

DATA = Path(__file__).parents[1] / "data" / "traces"


def one(path: Path) -> Trace:
    ((trace, _),) = traces(path)
    return trace


def calls(trace: Trace) -> list[tuple[str, str]]:
    return [(s.kind.value, s.tool_call_id) for s in trace.steps if s.kind != StepKind.MESSAGE]


def test_a_langfuse_tool_observation_answers_the_models_call_once(tmp_path: Path) -> None:
    call = {
        "id": "call_A",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
    }
    trace = {
        "id": "lf-1",
        "input": "Weather in Oslo?",
        "output": "Cold: -3 C.",
        "observations": [
            {
                "id": "obs-gen-1",
                "type": "GENERATION",
                "startTime": "2025-01-01T00:00:01Z",
                "input": [{"role": "user", "content": "Weather in Oslo?"}],
                "output": {"role": "assistant", "content": "", "tool_calls": [call]},
            },
            {
                "id": "9f1c-observation-uuid",
                "type": "TOOL",
                "name": "weather",
                "startTime": "2025-01-01T00:00:02Z",
                "input": {"city": "Oslo"},
                "output": "-3 C",
            },
            {
                "id": "obs-gen-2",
                "type": "GENERATION",
                "startTime": "2025-01-01T00:00:03Z",
                "input": [
                    {"role": "user", "content": "Weather in Oslo?"},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "call_A", "content": "-3 C"},
                ],
                "output": {"role": "assistant", "content": "Cold: -3 C."},
            },
        ],
    }
    path = tmp_path / "lf.json"
    path.write_text(json.dumps(trace))
    got = one(path)
    assert calls(got) == [("tool_call", "call_A"), ("observation", "call_A")]
    assert got.steps[-1].text == "Cold: -3 C."


def test_a_langsmith_tool_run_answers_the_models_call_once(tmp_path: Path) -> None:
    ai = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": "",
            "type": "ai",
            "tool_calls": [{"id": "call_B", "name": "calc", "args": {"expr": "2+2"}}],
        },
    }
    runs = [
        {
            "id": "root-uuid",
            "run_type": "chain",
            "trace_id": "root-uuid",
            "dotted_order": "1",
            "inputs": {"input": "2+2?"},
            "outputs": {"output": "4"},
        },
        {
            "id": "llm-uuid",
            "run_type": "llm",
            "trace_id": "root-uuid",
            "parent_run_id": "root-uuid",
            "dotted_order": "1.1",
            "inputs": {"messages": [[{"role": "user", "content": "2+2?"}]]},
            "outputs": {"generations": [[{"text": "", "message": ai}]]},
        },
        {
            "id": "5d2e-tool-run-uuid",
            "name": "calc",
            "run_type": "tool",
            "trace_id": "root-uuid",
            "parent_run_id": "root-uuid",
            "dotted_order": "1.2",
            "inputs": {"input": '{"expr": "2+2"}'},
            "outputs": {"output": "4"},
        },
    ]
    path = tmp_path / "ls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    got = one(path)
    assert calls(got) == [("tool_call", "call_B"), ("observation", "call_B")]
    assert [s.text for s in got.steps if s.kind == StepKind.OBSERVATION] == ["4"]


def test_two_parallel_calls_of_one_tool_get_their_own_results(tmp_path: Path) -> None:
    """Matched by arguments: the second run answers the second call, not the first."""

    def call(i: str, city: str) -> dict:
        return {
            "id": i,
            "type": "function",
            "function": {"name": "weather", "arguments": json.dumps({"city": city})},
        }

    def tool(i: str, city: str, at: str, out: str) -> dict:
        return {
            "id": i,
            "type": "TOOL",
            "name": "weather",
            "startTime": at,
            "input": {"city": city},
            "output": out,
        }

    trace = {
        "id": "lf-2",
        "input": "Oslo and Rome?",
        "observations": [
            {
                "id": "g1",
                "type": "GENERATION",
                "startTime": "2025-01-01T00:00:01Z",
                "output": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [call("c1", "Oslo"), call("c2", "Rome")],
                },
            },
            tool("t-rome", "Rome", "2025-01-01T00:00:02Z", "20 C"),
            tool("t-oslo", "Oslo", "2025-01-01T00:00:03Z", "-3 C"),
        ],
    }
    path = tmp_path / "lf.json"
    path.write_text(json.dumps(trace))
    got = one(path)
    answers = {s.tool_call_id: s.text for s in got.steps if s.kind == StepKind.OBSERVATION}
    assert answers == {"c1": "-3 C", "c2": "20 C"}
    assert len([s for s in got.steps if s.kind == StepKind.TOOL_CALL]) == 2


def attr(key: str, value: object) -> dict:
    if isinstance(value, int) and not isinstance(value, bool):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def span(sid: str, parent: str, name: str, t: int, attrs: dict, **extra: object) -> dict:
    out = {
        "traceId": "t1",
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + t),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + t + 1),
        "attributes": [attr(k, v) for k, v in attrs.items()],
        **extra,
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def otlp_file(tmp_path: Path, spans: list[dict]) -> Path:
    path = tmp_path / "otlp.jsonl"
    record = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(record) + "\n")
    return path


def messages(*items: dict) -> str:
    return json.dumps(list(items))


USER = {"role": "user", "parts": [{"type": "text", "content": "Six times seven?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "mul", "arguments": {"a": 6, "b": 7}}],
}
RESULT = {
    "role": "user",
    "parts": [{"type": "tool_call_response", "id": "call_1", "response": "42"}],
}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "42"}]}


def test_a_tool_span_without_its_result_does_not_hide_the_result_the_model_saw(
    tmp_path: Path,
) -> None:
    """A tool span that records no result (pydantic-ai without content): the next model
    call's input holds it, and an empty observation must not take its place."""
    path = otlp_file(
        tmp_path,
        [
            span(
                "c1",
                "root",
                "chat",
                1,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": messages(USER),
                    "gen_ai.output.messages": messages(CALL),
                },
            ),
            span(
                "tool",
                "root",
                "running tool",
                2,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "mul",
                    "gen_ai.tool.call.id": "call_1",
                    "tool_arguments": '{"a": 6, "b": 7}',
                },
            ),
            span(
                "c2",
                "root",
                "chat",
                3,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": messages(USER, CALL, RESULT),
                    "gen_ai.output.messages": messages(ANSWER),
                },
            ),
            span("root", "", "agent run", 0, {}),
        ],
    )
    got = one(path)
    assert [(s.kind.value, s.text) for s in got.steps if s.kind == StepKind.OBSERVATION] == [
        ("observation", "42")
    ]


def test_pydantic_ai_format_2_tool_attributes_are_read(tmp_path: Path) -> None:
    path = otlp_file(
        tmp_path,
        [
            span(
                "c1",
                "root",
                "chat",
                1,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": messages(USER),
                    "gen_ai.output.messages": messages(CALL),
                },
            ),
            span(
                "tool",
                "root",
                "running tool",
                2,
                {
                    "gen_ai.tool.name": "mul",
                    "gen_ai.tool.call.id": "call_1",
                    "tool_arguments": '{"a": 6, "b": 7}',
                    "tool_response": "42",
                },
            ),
            span("root", "", "agent run", 0, {}),
        ],
    )
    got = one(path)
    call, result = (s for s in got.steps if s.kind != StepKind.MESSAGE)
    assert (call.arguments, result.text) == ('{"a": 6, "b": 7}', "42")


def test_infinity_and_nan_in_counts_are_not_recorded_numbers(tmp_path: Path) -> None:
    """json.loads reads the literals Infinity and NaN; int(inf) raised a 42-line traceback."""
    inf, nan = float("inf"), float("nan")
    path = otlp_file(
        tmp_path,
        [
            span(
                "c1",
                "",
                "chat",
                1,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": messages(USER),
                    "gen_ai.output.messages": messages(ANSWER),
                    "gen_ai.usage.input_tokens": inf,
                    "gen_ai.usage.output_tokens": 7,
                    "gen_ai.usage.cost": nan,
                },
            )
        ],
    )
    got = one(path)
    assert (got.tokens_in, got.tokens_out, got.cost_usd) == (0, 7, 0.0)
    langfuse = tmp_path / "lf.json"
    langfuse.write_text(
        json.dumps(
            {
                "id": "lf",
                "input": "q",
                "output": "a",
                "latency": inf,
                "observations": [
                    {"id": "g", "type": "GENERATION", "usage": {"input": inf, "output": 1e300}}
                ],
            }
        )
    )
    got = one(langfuse)
    assert (got.tokens_in, got.tokens_out, got.latency_s) == (0, 0, 0.0)


def test_a_trace_that_ends_on_a_tool_call_is_partial_and_gives_no_reference(
    tmp_path: Path,
) -> None:
    """`--reference final` took "Let me check." (said before the call) as the answer."""
    from core.traces import FeedbackKind, ReferenceMode, reference_answer, with_derived_feedback

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    record = {
        "id": "cut",
        "messages": [
            {"role": "user", "content": "When does the shop open?"},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
        ],
    }
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(record) + "\n")
    trace = with_derived_feedback(one(path))
    assert trace.partial and trace.final_answer == ""
    assert reference_answer(trace, ReferenceMode.FINAL) == (
        "",
        "partial trace (it ends on a tool call)",
    )
    assert all(f.kind != FeedbackKind.ABANDONED for f in trace.feedback)  # cut, not left
    record["messages"].append({"role": "tool", "tool_call_id": "c1", "content": "9am"})
    record["messages"].append({"role": "assistant", "content": "At 9am."})
    path.write_text(json.dumps(record) + "\n")
    whole = one(path)
    assert not whole.partial
    assert reference_answer(whole, ReferenceMode.FINAL) == ("At 9am.", "final answer")


def test_a_secret_split_across_two_message_parts_is_redacted(tmp_path: Path) -> None:
    from app import api
    from app.cli import main

    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    parts = [{"type": "text", "text": "key AKIAIOSF"}, {"type": "text", "text": "ODNN7EXAMPLE ok"}]
    record = {
        "id": "split",
        "messages": [
            {"role": "user", "content": parts},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Line one."},
                    {"type": "text", "text": "Line two."},
                ],
            },
        ],
    }
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(record) + "\n")
    api.ingest(ws, path)
    import sqlite3

    with sqlite3.connect(ws / "harness.db") as conn:
        (stored,) = conn.execute("SELECT trace_json FROM ingested_traces").fetchone()
    assert "AKIAIOSF" not in stored and "ODNN7EXAMPLE" not in stored
    assert "Line one.\\nLine two." in stored  # parts without a secret keep their line break


def test_a_failed_tool_span_keeps_the_exception_type(tmp_path: Path) -> None:
    event = {
        "name": "exception",
        "attributes": [attr("exception.type", "ValueError"), attr("exception.message", "bad date")],
    }
    path = otlp_file(
        tmp_path,
        [
            span(
                "tool",
                "root",
                "execute_tool parse",
                1,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "parse"},
                events=[event],
                status={"code": 2},
            ),
            span("root", "", "agent", 0, {"input.value": "Parse it"}),
        ],
    )
    (observation,) = [s for s in one(path).steps if s.kind == StepKind.OBSERVATION]
    assert (observation.text, observation.is_error) == ("ValueError: bad date", True)


def test_inspect_tokens_are_the_samples_totals_not_the_last_calls(tmp_path: Path) -> None:
    sample = {
        "id": 1,
        "epoch": 1,
        "input": "q",
        "target": "a",
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "output": {"model": "m", "usage": {"input_tokens": 40, "output_tokens": 5}},
        "model_usage": {
            "m": {"input_tokens": 100, "output_tokens": 12, "input_tokens_cache_read": 20},
            "grader": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"eval": {"model": "m"}, "samples": [sample]}))
    got = one(path)
    assert (got.tokens_in, got.tokens_out) == (130, 13)
    del sample["model_usage"]
    path.write_text(json.dumps({"eval": {"model": "m"}, "samples": [sample]}))
    assert (one(path).tokens_in, one(path).tokens_out) == (40, 5)


def test_an_inspect_target_scored_by_includes_is_checked_by_inclusion(tmp_path: Path) -> None:
    from app import api
    from app.harness.workspace.store import load_benchmark
    from core.checkers import check

    def sample(i: int, scorer: str) -> dict:
        return {
            "id": i,
            "epoch": 1,
            "input": f"Capital of France? ({i})",
            "target": "Paris",
            "messages": [
                {"role": "user", "content": f"Capital of France? ({i})"},
                {"role": "assistant", "content": "It is Paris."},
            ],
            "scores": {scorer: {"value": "C"}},
        }

    path = tmp_path / "log.json"
    path.write_text(
        json.dumps({"eval": {"model": "m"}, "samples": [sample(1, "includes"), sample(2, "exact")]})
    )
    store = tmp_path / "store"
    api.ingest(tmp_path / "none", path, to_benchmark="caps", store=store)
    questions = {q.question: q for q in load_benchmark(store / "questions" / "caps").questions}
    included, exact = questions["Capital of France? (1)"], questions["Capital of France? (2)"]
    assert included.checker == "regex" and check(included, "It is paris.")
    assert not check(included, "Lyon")
    assert exact.checker == "exact" and not check(exact, "It is Paris.")


def test_the_system_prompt_comes_before_the_users_message(tmp_path: Path) -> None:
    """The trace's input is read before the first model call, whose input holds the system
    prompt: it was stored after the user's message."""
    trace = {
        "id": "lf-sys",
        "input": "Capital of Peru?",
        "output": "Lima",
        "observations": [
            {
                "id": "g",
                "type": "GENERATION",
                "input": [
                    {"role": "system", "content": "Answer in one word."},
                    {"role": "user", "content": "Capital of Peru?"},
                ],
                "output": {"role": "assistant", "content": "Lima"},
            }
        ],
    }
    path = tmp_path / "lf.json"
    path.write_text(json.dumps(trace))
    got = one(path)
    assert [(s.role.value, s.text) for s in got.steps] == [
        ("system", "Answer in one word."),
        ("user", "Capital of Peru?"),
        ("assistant", "Lima"),
    ]


def test_the_recorded_start_time_is_kept_outside_the_content_id(tmp_path: Path) -> None:
    import sqlite3
    from dataclasses import replace

    from app import api
    from app.cli import main
    from core.traces import content_id

    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    path = otlp_file(
        tmp_path,
        [
            span(
                "c1",
                "",
                "chat",
                0,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": messages(USER),
                    "gen_ai.output.messages": messages(ANSWER),
                },
            )
        ],
    )
    got = one(path)
    assert got.started_at == "2023-11-14T22:13:20.000000+00:00"  # 1_700_000_000 s
    assert content_id(got) == content_id(replace(got, started_at=""))
    api.ingest(ws, path)
    with sqlite3.connect(ws / "harness.db") as conn:
        (stored,) = conn.execute("SELECT trace_json FROM ingested_traces").fetchone()
        (created,) = conn.execute(
            "SELECT created_at FROM predictions WHERE run_id LIKE 'ingest-%'"
        ).fetchone()
    assert json.loads(stored)["started_at"] == got.started_at
    assert created.startswith("2023-11-14T22:13:20")  # the recording's time, not today's


def test_an_ingest_run_exports_as_recorded_not_as_the_workspaces_agent(tmp_path: Path) -> None:
    """`export --format otlp|inspect` of an ingest run wrote the workspace's model
    (`sim/basic`) and system prompt, and dropped the trace's scores."""
    from app import api
    from app.cli import main

    trace = json.loads((DATA / "langfuse_trace.json").read_text())
    generation = trace["observations"][0]
    generation["input"] = [
        {"role": "system", "content": "Answer with a number."},
        *generation["input"],
    ]
    export = tmp_path / "lf.json"
    export.write_text(json.dumps(trace))
    store, ws = tmp_path / "store", tmp_path / "ws"
    api.ingest(tmp_path / "x", export, to_benchmark="lf", store=store)
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "lf"]
    assert main([*init, "--store", str(store)]) == 0
    run_id = api.ingest(ws, export).run_id
    out = tmp_path / "out"
    for fmt in ("inspect", "otlp"):
        args = ["export", "-w", str(ws), "--format", fmt, "--out", str(out / fmt), run_id]
        assert main([*args, "--include-test"]) == 0
    (sample,) = json.loads((out / "inspect" / f"inspect-{run_id}.json").read_text())["samples"]
    assert sample["output"]["model"] == "claude-3-haiku"
    assert [m["role"] for m in sample["messages"]][:2] == ["system", "user"]
    assert sample["messages"][0]["content"] == "Answer with a number."
    assert sample["scores"]["user-feedback"]["value"] == 1.0
    again = one(out / "otlp" / "otlp.json")
    assert again.model == "claude-3-haiku"
    assert [(f.name, f.score) for f in again.feedback] == [("user-feedback", 1.0)]
    assert [(s.role.value, s.text) for s in again.steps][:2] == [
        ("system", "Answer with a number."),
        ("user", "How many days are in a leap year?"),
    ]
