"""Each export format read into the normalised trace model (core/traces.py), from fixtures
written after the public specifications (tests/app/data/traces/; docs/ingest.md lists which
specification each parser was checked against)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from app.errors import UserError
from app.harness.ingest import records
from app.harness.ingest.parse import Detected, traces
from core.traces import FeedbackKind, Role, Source, StepKind, Trace

DATA = Path(__file__).parents[1] / "data" / "traces"


def read(name: str, source: str = "auto") -> tuple[list[Trace], Detected]:
    found = Detected()
    return [t for t, _ in traces(DATA / name, source, found)], found


def kinds(trace: Trace) -> list[str]:
    return [f"{s.kind.value}:{s.role.value}" for s in trace.steps]


def test_otlp_genai_current_names_merge_model_calls_and_tool_spans() -> None:
    (trace,), found = read("otlp_genai.json")
    assert found.family == "OTLP JSON"
    assert trace.source == Source.OTLP
    # history re-sent with the second call and the tool span both land once
    assert kinds(trace) == [
        "message:system",
        "message:user",
        "tool_call:assistant",
        "observation:tool",
        "message:assistant",
    ]
    call, obs = trace.steps[2], trace.steps[3]
    assert (call.tool_name, call.tool_call_id, json.loads(call.arguments)) == (
        "get_balance",
        "call_1",
        {"account": "1234"},
    )
    assert obs.tool_call_id == "call_1" and "42.10 EUR" in obs.text and not obs.is_error
    assert trace.task == "What is the balance of account 1234?"
    assert trace.final_answer == "The balance of account 1234 is 42.10 EUR."
    assert (trace.model, trace.tokens_in, trace.tokens_out) == ("gpt-4o", 280, 27)
    assert trace.session_id == "conv-42"
    assert trace.latency_s == pytest.approx(2.1)
    assert not trace.failed


def test_otlp_deprecated_names_indexed_literal_and_event_api() -> None:
    found_traces, _ = read("otlp_genai_deprecated.jsonl")
    indexed, literal, events = found_traces
    assert [s.text for s in indexed.steps] == ["Answer in one word.", "Capital of France?", "Paris"]
    assert (indexed.tokens_in, indexed.tokens_out) == (20, 1)  # gen_ai.usage.prompt_tokens
    assert (literal.task, literal.final_answer) == ("Convert 3 km to miles.", "1.86 miles")
    assert kinds(events) == [
        "message:user",
        "tool_call:assistant",
        "observation:tool",
        "message:assistant",
    ]
    assert events.steps[2].text == "order 77: shipped"  # the gen_ai.tool.message event
    assert events.final_answer == "Order 77 has shipped."  # gen_ai.choice


def test_openinference_on_otlp_flattened_messages_and_failed_tool() -> None:
    (trace,), _ = read("openinference_otlp.jsonl", source="openinference")
    assert trace.source == Source.OPENINFERENCE
    assert trace.session_id == "sess-7"
    assert (trace.tokens_in, trace.tokens_out, trace.model) == (50, 10, "gpt-4o-mini")
    calls = [s for s in trace.steps if s.kind == StepKind.TOOL_CALL]
    assert len(calls) == 1 and calls[0].tool_call_id == "call_abc123"
    obs = [s for s in trace.steps if s.kind == StepKind.OBSERVATION]
    # the TOOL span records no call id: it lands on the open call of the same tool
    assert len(obs) == 1 and obs[0].is_error and obs[0].tool_call_id == "call_abc123"
    assert trace.failed  # kept for triage, never a reference
    assert trace.final_answer == "I could not get the weather."


def test_phoenix_span_export_with_nested_attributes() -> None:
    (trace,), found = read("phoenix_spans.json")
    assert found.family == "Phoenix span export" and found.spans == 2
    assert trace.source == Source.PHOENIX
    assert (trace.task, trace.final_answer) == ("Translate 'bonjour' to English.", "hello")
    assert trace.session_id == "tr-session-1" and trace.model == "gpt-4o"
    assert trace.latency_s == pytest.approx(1.1)


def test_phoenix_span_export_compact_on_one_line(tmp_path: Path) -> None:
    """Phoenix's REST API returns the page compact: one line, read as JSON Lines, whose
    `data` items are the spans (once refused as an unknown record)."""
    page = json.loads((DATA / "phoenix_spans.json").read_text())
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(page))
    (trace,) = [t for t, _ in traces(path)]
    assert trace.source == Source.PHOENIX and trace.session_id == "tr-session-1"
    assert (trace.task, trace.final_answer) == ("Translate 'bonjour' to English.", "hello")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"data": [{"what": 1}], "next_cursor": None}))
    with pytest.raises(
        UserError, match=r"bad\.json:1: unknown record: an object with keys \[what\]"
    ):
        list(traces(bad))


def test_langfuse_trace_with_observations_and_scores() -> None:
    (trace,), _ = read("langfuse_trace.json")
    assert trace.source == Source.LANGFUSE
    assert (trace.task, trace.final_answer) == ("How many days are in a leap year?", "366")
    assert (trace.model, trace.tokens_in, trace.tokens_out) == ("claude-3-haiku", 14, 2)
    assert trace.session_id == "lf-session-9"
    (score,) = trace.feedback
    assert (score.kind, score.name, score.score) == (FeedbackKind.SCORE, "user-feedback", 1.0)


def test_langfuse_list_page_of_observation_ids_is_refused() -> None:
    with pytest.raises(UserError) as e:
        read("langfuse_list_page.json")
    message = str(e.value)
    assert "langfuse_list_page.json:" in message
    assert "export each trace with its observations" in message


def test_langsmith_runs_with_tool_calls_in_message_kwargs_and_feedback() -> None:
    (trace,), found = read("langsmith_runs.jsonl")
    assert found.kinds == {"langsmith": 3, "langsmith-feedback": 2}
    assert kinds(trace) == [
        "message:user",
        "tool_call:assistant",
        "observation:tool",
        "message:assistant",
    ]
    assert trace.steps[1].tool_name == "calculator" and trace.steps[2].text == "51"
    assert trace.session_id == "th-1" and trace.model == "gpt-4o"
    assert trace.latency_s == pytest.approx(2.0)
    edited = [f for f in trace.feedback if f.kind == FeedbackKind.EDITED]
    assert [f.text for f in edited] == ["51"]


def test_chat_json_one_conversation_per_line() -> None:
    first, second = read("chat.jsonl")[0]
    assert first.source == Source.CHAT_JSON and first.final_answer == "tac"
    assert second.session_id == "conv-b"
    assert kinds(second)[1:3] == ["tool_call:assistant", "observation:tool"]


def test_inspect_eval_log_json_written_by_inspect_ai() -> None:
    right, wrong = read("inspect_log.json")[0]
    assert right.target == "42" and right.feedback[0].score == 1.0
    assert right.steps[0].role == Role.SYSTEM
    assert [s.tool_name for s in right.steps if s.kind == StepKind.TOOL_CALL] == ["calc"]
    assert wrong.target == "Lima" and wrong.feedback[0].score == 0.0
    assert right.model == "mockllm/model"


def test_inspect_round_trip_through_inspect_ai(tmp_path: Path) -> None:
    """Logs the installed inspect_ai writes (the .json log and the zipped .eval) read back
    with the same steps."""
    log_api = pytest.importorskip("inspect_ai.log")
    written = log_api.read_eval_log(str(DATA / "inspect_log.json"))
    for name in ("log.json", "log.eval"):
        log_api.write_eval_log(written, str(tmp_path / name))
        got = [t for t, _ in traces(tmp_path / name)]
        assert [kinds(t) for t in got] == [kinds(t) for t in read("inspect_log.json")[0]]
        assert [t.target for t in got] == ["42", "Lima"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [\n', ":2: truncated"),
        ('{"messages": []}\n{"nope": 1}\n', ":2: unknown record"),
        ('{"messages": []}\n' + json.dumps({"resourceSpans": []}) + "\n", ":2: mixed file"),
        ("hello\n", ":1: not JSON"),
        ("", ":1: empty file"),
    ],
)
def test_bad_files_give_one_line_with_file_and_line(
    tmp_path: Path, content: str, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(UserError) as e:
        list(traces(path))
    assert f"bad.jsonl{reason}" in str(e.value)
    assert "\n" not in str(e.value)


def test_truncated_document_names_its_file_and_line(tmp_path: Path) -> None:
    text = (DATA / "otlp_genai.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(UserError, match=r"cut\.json:\d+.*truncated"):
        list(traces(path))


def test_enormous_line_is_refused_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "big.jsonl"
    path.write_text(
        '{"messages": []}\n'
        + json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]})
        + "\n"
    )
    with pytest.raises(UserError, match=r"big\.jsonl:2: line longer than"):
        list(traces(path))


def test_source_mismatch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match=r"chat\.jsonl:1: this record is chat-json, not --source langfuse"
    ):
        list(traces(DATA / "chat.jsonl", "langfuse"))


def test_auto_detection_says_what_it_found() -> None:
    assert read("langsmith_runs.jsonl")[1].text() == (
        "LangSmith runs (langsmith 3, langsmith-feedback 2)"
    )


@pytest.mark.parametrize("depth", [900, 990, 5000])
def test_deeply_nested_record_is_read_or_refused_in_one_line(tmp_path: Path, depth: int) -> None:
    """Nesting near the interpreter's limit is read or refused with file:line, never a crash."""
    deep = '{"a": ' * depth + '"leaf"' + "}" * depth
    path = tmp_path / "deep.jsonl"
    path.write_text(
        '{"name": "s", "context": {"trace_id": "t", "span_id": "s"}, "attributes": ' + deep + "}\n"
    )
    try:
        assert len(list(traces(path))) == 1
    except UserError as e:
        assert re.fullmatch(r".*deep\.jsonl:1: .*nested too deeply.*", str(e))
        assert depth > 900


def test_langsmith_feedback_for_runs_not_in_the_file_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "ls.jsonl"
    path.write_text(
        (DATA / "langsmith_runs.jsonl").read_text()
        + json.dumps({"id": "f9", "run_id": "elsewhere", "key": "k", "score": 1})
        + "\n"
    )
    found = Detected()
    assert len([t for t, _ in traces(path, "auto", found)]) == 1
    assert found.orphan_feedback == 1 and "1 feedback records name runs not" in found.text()


@pytest.mark.parametrize("spans_per_trace", [1, 3])
def test_spans_waiting_for_a_root_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spans_per_trace: int
) -> None:
    """A partial export whose root spans never come: memory stays bounded, every span is
    still read, each trace is one trace however its spans interleave (spans past the bound
    wait on disk), and the summary says how many waited."""
    from app.harness.ingest import spans

    monkeypatch.setattr(spans, "MAX_PENDING_SPANS", 10)
    lines = []
    for k in range(spans_per_trace):  # round robin: trace i's spans are far apart
        for i in range(30):
            span = {
                "traceId": f"t{i}",
                "spanId": f"s{k + 2}",
                "parentSpanId": "s1",  # the root s1 is not in the file
                "name": "chat",
                "startTimeUnixNano": str(k),
                "attributes": [
                    {
                        "key": "gen_ai.input.messages",
                        "value": {
                            "stringValue": json.dumps(
                                [
                                    {
                                        "role": "user",
                                        "parts": [{"type": "text", "content": f"q{i} part {k}"}],
                                    }
                                ]
                            )
                        },
                    },
                ],
            }
            lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    path = tmp_path / "rootless.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = Detected()
    got = [t for t, _ in traces(path, "auto", found)]
    assert len(got) == 30
    assert sorted(tuple(s.text for s in t.steps) for t in got) == sorted(
        tuple(f"q{i} part {k}" for k in range(spans_per_trace)) for i in range(30)
    )
    # at most 10 spans wait in memory: every trace past the first 10 spans goes to disk
    assert 20 <= found.spilled <= 30
    assert f"{found.spilled} traces waited on disk for their root span" in found.text()


def test_one_enormous_object_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 1000)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"id": "x", "observations": [], "input": "y" * 5000}, indent=1))
    with pytest.raises(UserError, match=r"trace\.json:1: one JSON object of 0 MiB is one record"):
        list(traces(path))


def test_phoenix_span_kind_at_the_top_level(tmp_path: Path) -> None:
    """Phoenix's export names the kind beside the attributes (`span_kind`) as well."""
    span = {
        "name": "agent",
        "context": {"trace_id": "t1", "span_id": "s1"},
        "span_kind": "CHAIN",
        "parent_id": None,
        "status_code": "ERROR",
        "attributes": {"input": {"value": "Book a table"}, "output": {"value": "No tables left"}},
    }
    path = tmp_path / "phoenix.jsonl"
    path.write_text(json.dumps(span) + "\n")
    ((trace, _),) = traces(path)
    assert (trace.task, trace.final_answer, trace.failed) == (
        "Book a table",
        "No tables left",
        True,
    )


def test_a_zstd_eval_without_the_codec_names_the_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_api = pytest.importorskip("inspect_ai.log")
    path = tmp_path / "log.eval"
    log_api.write_eval_log(log_api.read_eval_log(str(DATA / "inspect_log.json")), str(path))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    with pytest.raises(UserError, match=r"log\.eval:1: a zstd-compressed Inspect \.eval"):
        list(traces(path))
