"""Content ids survive the faster ingest path: the same traces get the same ids and the same
stored JSON as the former path (trace -> as_json -> redact_json -> trace_from_json ->
json.dumps), so a file ingested by an older version adds nothing when ingested again
(docs/ingest.md#figures)."""

from __future__ import annotations

import ast
import gc
import json
import shutil
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.harness.ingest import parse, service
from app.harness.ingest.messages import parse_json
from core.redact import redact_json
from core.traces import (
    Role,
    Source,
    Step,
    StepKind,
    Trace,
    content_id,
    family_key,
    redact_trace,
    trace_from_json,
    with_derived_feedback,
)

DATA = Path(__file__).parents[1] / "data" / "traces"
FIXTURES = sorted(p for p in DATA.iterdir() if p.name != "langfuse_list_page.json")

# The ids the version before the fast path (commit 454035c) gave these fixtures: a change of
# canonical JSON, of the JSON parser or of the redaction order would show here first.
FORMER_IDS = {
    "chat.jsonl": ["tr-234d73cb35c8c95f9cbbfc6a", "tr-fe7fadcf326f271cbb2ca256"],
    "inspect_log.json": ["tr-65c41f98cf74583f7381230d", "tr-a8aa313bc437ea97f199370c"],
    "langfuse_trace.json": ["tr-acc6c1298f91d3ae226a11b3"],
    "langsmith_runs.jsonl": ["tr-32e741cff2e8726fa43ff594"],
    "openinference_otlp.jsonl": ["tr-36efacf35630997ecac900a9"],
    "otlp_genai.json": ["tr-3fd52d8bcb606b9f748bcdb9"],
    "otlp_genai_deprecated.jsonl": [
        "tr-466e6a2092c27ece77720268",
        "tr-9bb4731e77f0e6a1693ec5c9",
        "tr-e146cec9b3b6084d894ed39a",
    ],
    "phoenix_spans.json": ["tr-305888291f6261fe491612fe"],
}
# a conversation with secrets and PII in a session id, a message, tool arguments and a result
SECRETS = {
    "id": "s1",
    "conversation_id": "ops@example.com",
    "model": "gpt-4o",
    "messages": [
        {
            "role": "user",
            "content": "Deploy with AKIAIOSFODNN7EXAMPLE to 10.0.0.12, mail ops@example.com",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "deploy",
                        "arguments": '{"token": "Authorization: Bearer abcdEFGH1234ijklMNOP5678"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "ok, session kP9xQ2mZ7vB4nR8tL3wY6cF1hJ5sD0gA",
        },
        {"role": "assistant", "content": "Done."},
    ],
}
SECRETS_FORMER_ID = "tr-75e407503ce36aef1e9d9925"


def former_redacted(stream: Iterator[tuple[Trace, int]]) -> Iterator[service.Clean]:
    """The former path, kept here as the reference the fast one must equal."""
    seen: set[str] = set()
    memo = service.ScrubMemo()
    for trace, line in stream:
        scrubbed = redact_json(with_derived_feedback(trace).as_json(), memo)
        clean = trace_from_json(scrubbed)
        canonical = json.dumps(scrubbed, ensure_ascii=False)
        tid = content_id(clean, canonical)
        if tid in seen:
            continue
        seen.add(tid)
        yield service.Clean(clean, tid, canonical, line, family_key(clean))


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.jsonl"
    path.write_text(json.dumps(SECRETS) + "\n")
    return path


def test_ids_are_the_former_versions(secrets_file: Path) -> None:
    got = {p.name: sorted(c.tid for c in service._redacted(parse.traces(p))) for p in FIXTURES}
    assert got == FORMER_IDS
    [clean] = service._redacted(parse.traces(secrets_file))
    assert clean.tid == SECRETS_FORMER_ID
    assert "AKIA" not in clean.json and "ops@example" not in clean.json
    assert "10.0.0.12" not in clean.json and "kP9xQ2mZ" not in clean.json


def _same_types(a: object, b: object) -> bool:
    return type(a) is type(b) and all(
        type(getattr(a, f.name)) is type(getattr(b, f.name))
        for f in fields(a)  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", [p.name for p in FIXTURES] + ["secrets"])
def test_the_fast_path_equals_the_json_round_trip(name: str, secrets_file: Path) -> None:
    path = secrets_file if name == "secrets" else DATA / name
    fast = list(service._redacted(parse.traces(path)))
    former = list(former_redacted(parse.traces(path)))
    assert [(c.tid, c.json, c.line, c.family) for c in fast] == [
        (c.tid, c.json, c.line, c.family) for c in former
    ]
    for a, b in zip(fast, former, strict=True):
        assert a.trace == b.trace and _same_types(a.trace, b.trace)
        assert all(_same_types(x, y) for x, y in zip(a.trace.steps, b.trace.steps, strict=True))


def test_an_unchanged_trace_comes_back_as_itself() -> None:
    trace = Trace(
        Source.CHAT_JSON,
        "c1",
        (Step(StepKind.MESSAGE, Role.USER, "What is the total of invoice 12?"),),
        session_id="conv-1",
    )
    assert redact_trace(trace, lambda text: text) is trace
    changed = redact_trace(trace, lambda text: text.replace("invoice", "[X]"))
    assert changed.steps[0].text == "What is the total of [X] 12?"
    assert changed.session_id == "conv-1" and trace.steps[0].text.startswith("What is")


def test_a_file_the_former_version_stored_adds_nothing_again(
    tmp_path: Path, secrets_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    files = [*FIXTURES, secrets_file]
    with monkeypatch.context() as m:
        m.setattr(service, "_redacted", former_redacted)
        first = [api.ingest(ws, f) for f in files]
    assert sum(r.new for r in first) == sum(len(ids) for ids in FORMER_IDS.values()) + 1
    for f in files:  # other bytes (so the file is parsed again), the same traces
        copy = tmp_path / "again" / f.name
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(f, copy)
        with open(copy, "a") as out:
            out.write("\n")
    threshold = gc.get_threshold()
    again = [api.ingest(ws, tmp_path / "again" / f.name) for f in files]
    assert gc.get_threshold() == threshold  # the collector is as it was (service.py)
    assert gc.get_freeze_count() == 0
    assert [r.new for r in again] == [0] * len(files)
    assert [r.traces for r in again] == [r.traces for r in first]


def _former_parse_json(value: object) -> object:
    """messages.parse_json as it was, with json.loads."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{":
        return value
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


@pytest.mark.parametrize(
    "value",
    [
        None,
        3,
        "",
        "plain text",
        ' [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}] ',
        '{"a": 1} {"b": 2}',  # extra data
        '{"a": 1}\n',
        "[1, 2,]",  # not JSON
        "{'role': 'user', 'content': 'hi'}",  # a Python literal
        "[NaN, Infinity, -0, 1e400, 123456789012345678901234567890]",
        '["\\ud800"]',  # a lone surrogate escape
        "[" * 5000 + "]" * 5000,  # too deep
        "{",
        '{"a": [1, {"b": null}], "c": "\\u00e9"}',
    ],
)
def test_parse_json_reads_as_json_loads_did(value: object) -> None:
    got, want = parse_json(value), _former_parse_json(value)
    assert repr(got) == repr(want)
