"""export --format otlp | inspect (app/harness/data/export_otel.py) and the redaction of every
export: secrets planted in a fork's branches (as if a model had echoed what a tool read) never
reach a file, every line stays valid JSON, and one secret has one placeholder everywhere.

The OTLP file is checked against the OTLP protobuf schema (`opentelemetry-proto`, parsed with
the ids converted from the hex OTLP/JSON uses to the base64 of the plain protobuf JSON
mapping) and against the GenAI attribute names of the OpenTelemetry semantic conventions; the
Inspect file is read back with `inspect_ai.log.read_eval_log`."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.data.export import export_rollouts
from app.harness.data.fork import ForkSpec, held_out_question_ids, run_fork
from app.harness.data.rank import rank_rollout
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from core.redact import placeholder

SECRETS = {
    "openai": "sk-proj-Qw3rTy8uI0pAs5dF7gH9jK2lZx4cV6bN1mQ",
    "github": "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ",
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "email": "ops.lead@acme-corp.example",
    "ip": "10.42.7.19",
    "entropy": "Zq8Lm2Xv9Rt4Wp7Kd3Hs6Jn1Bf5Gc0Ya",
}
# the GenAI names this export writes, as the conventions spell them (semantic-conventions
# v1.56 docs/gen-ai/gen-ai-spans.md and gen-ai-agent-spans.md)
GENAI_NAMES = {
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "gen_ai.request.temperature",
    "gen_ai.request.seed",
    "gen_ai.conversation.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.name",
    "gen_ai.tool.type",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("otel") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    with Session(ws, load_config(None)) as s:
        test_ids = set(held_out_question_ids(s.benchmark))
        train = [q.question_id for q in s.benchmark.questions if q.question_id not in test_ids]
        spec = ForkSpec(tuple(train[:10] + sorted(test_ids)[:2]), (0.3, 1.0, 1.2), 3, "all")
        anyio.run(lambda: run_fork(s, spec, "f1"))
        anyio.run(lambda: rank_rollout(s, "f1"))
    assert main(["infer", "-w", str(ws), "--task-types", "ledger", "--no-progress"]) == 0
    _plant(ws / "harness.db")
    return ws


def _plant(db: Path) -> None:
    """Every secret into the final reply and the first model step of each branch of f1."""
    text = " ".join(f"{k}={v}" for k, v in SECRETS.items())
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, steps_json FROM branches WHERE run_id = 'f1'").fetchall()
        for row_id, steps_json in rows:
            steps = json.loads(steps_json)
            for step in steps:
                if step.get("type") == "model":
                    step["text"] = f"{step['text']}\nI found {text}"
                    break
            conn.execute(
                "UPDATE branches SET final_text = final_text || ?, steps_json = ? WHERE id = ?",
                (f"\n(my notes: {text})", json.dumps(steps), row_id),
            )


def _no_secret_in(text: str) -> None:
    for kind, secret in SECRETS.items():
        assert secret not in text, kind


def test_the_jsonl_export_is_redacted_and_valid(ws, tmp_path):
    with Session(ws, load_config(None)) as s:
        export_rollouts(s, ["f1"], tmp_path / "x")
    seen = set()
    for f in sorted((tmp_path / "x").glob("*.jsonl")):
        text = f.read_text(encoding="utf-8")
        _no_secret_in(text)
        for line in text.splitlines():
            json.loads(line)
        seen |= {p for p in (placeholder(v) for v in SECRETS.values()) if p in text}
    # one secret, one placeholder, in every file that holds it
    assert seen == {placeholder(v) for v in SECRETS.values()}


def _spans(doc: dict) -> list[dict]:
    return [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _attrs(span: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_otlp_follows_the_schema_and_the_genai_names(ws, tmp_path):
    result = api.export_traces(ws, ["f1", "infer-1"], format="otlp", out=tmp_path)
    text = (tmp_path / "otlp.json").read_text(encoding="utf-8")
    _no_secret_in(text)
    doc = json.loads(text)
    spans = _spans(doc)
    roots = [s for s in spans if "parentSpanId" not in s]
    assert len(roots) == result.files["otlp.json"].count > 0
    # the protobuf schema, with the ids as the plain protobuf JSON mapping wants them
    pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    json_format = pytest.importorskip("google.protobuf.json_format")
    for span in spans:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    request = json_format.Parse(json.dumps(doc), pb.ExportTraceServiceRequest())
    parsed = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len(parsed) == len(spans)
    assert all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in parsed)
    assert all(s.start_time_unix_nano <= s.end_time_unix_nano for s in parsed)
    names = {a.key for s in parsed for a in s.attributes if a.key.startswith("gen_ai.")}
    assert names <= GENAI_NAMES and {"gen_ai.tool.call.id", "gen_ai.input.messages"} <= names
    for s in parsed:
        ops = [a.value.string_value for a in s.attributes if a.key == "gen_ai.operation.name"]
        assert ops and ops[0] in {"invoke_agent", "chat", "execute_tool"}


def test_every_step_becomes_a_span_in_order(ws, tmp_path):
    api.export_traces(ws, ["f1"], format="otlp", out=tmp_path)
    spans = _spans(json.loads((tmp_path / "otlp.json").read_text(encoding="utf-8")))
    with sqlite3.connect(ws / "harness.db") as conn:
        rows = conn.execute(
            "SELECT question_id, branch_index, steps_json, correct FROM branches "
            "WHERE run_id = 'f1'"
        ).fetchall()
    with Session(ws, load_config(None)) as s:
        test_ids = held_out_question_ids(s.benchmark)
    by_trace: dict[str, list[dict]] = {}
    for span in spans:
        by_trace.setdefault(span["traceId"], []).append(span)
    roots = {
        (_attrs(r)["skill_trainer.question_id"], int(_attrs(r)["skill_trainer.branch_index"])): r
        for r in spans
        if "parentSpanId" not in r
    }
    tools = 0
    for qid, branch, steps_json, correct in rows:
        if qid in test_ids:
            assert (qid, branch) not in roots  # the test pool stays out unless asked
            continue
        root = roots[(qid, branch)]
        assert _attrs(root)["skill_trainer.correct"] == bool(correct)
        children = [s for s in by_trace[root["traceId"]] if s is not root]
        steps = [x for x in json.loads(steps_json) if x["type"] != "verdict"]
        assert [int(_attrs(c)["skill_trainer.step.index"]) for c in children] == list(
            range(len(steps))
        )
        calls = {}
        for step, child in zip(steps, children, strict=True):
            a = _attrs(child)
            if step["type"] == "model":
                assert a["gen_ai.operation.name"] == "chat"
                out = json.loads(a["gen_ai.output.messages"])
                assert [p["type"] for p in out[0]["parts"] if p["type"] == "tool_call"] == [
                    "tool_call"
                ] * len(step["tool_calls"])
                calls.update({c["id"]: c["name"] for c in step["tool_calls"]})
                history = json.loads(a["gen_ai.input.messages"])
                assert history[0]["role"] == "system" and history[1]["role"] == "user"
            elif step["type"] == "tool":
                tools += 1
                assert a["gen_ai.operation.name"] == "execute_tool"
                assert calls[a["gen_ai.tool.call.id"]] == a["gen_ai.tool.name"] == step["name"]
                assert json.loads(a["gen_ai.tool.call.arguments"]) == step["arguments"]
    assert tools > 0  # the sim's read_context calls were exported


def test_inspect_reads_the_eval_log(ws, tmp_path):
    log_module = pytest.importorskip("inspect_ai.log")
    result = api.export_traces(ws, ["f1", "infer-1"], format="inspect", out=tmp_path)
    assert set(result.files) == {"inspect-f1.json", "inspect-infer-1.json"}
    text = (tmp_path / "inspect-f1.json").read_text(encoding="utf-8")
    _no_secret_in(text)
    log = log_module.read_eval_log(str(tmp_path / "inspect-f1.json"))
    assert log.status == "success"
    assert len(log.samples) == result.files["inspect-f1.json"].count
    assert {s.epoch for s in log.samples} == {1, 2, 3}
    correct = sum(s.scores["skill_trainer"].value == "C" for s in log.samples)
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(
        correct / len(log.samples)
    )
    tool_messages = [m for s in log.samples for m in s.messages if m.role == "tool"]
    assert tool_messages and all(m.tool_call_id and m.function for m in tool_messages)
    infer = log_module.read_eval_log(str(tmp_path / "inspect-infer-1.json"))
    assert all(s.epoch == 1 for s in infer.samples) and infer.samples


def test_bad_runs_and_a_previous_export_are_refused(ws, tmp_path):
    with pytest.raises(UserError, match="no branches or predictions"):
        api.export_traces(ws, ["f1", "nope"], format="otlp", out=tmp_path / "a")
    assert not (tmp_path / "a").exists()
    api.export_traces(ws, ["f1"], format="otlp", out=tmp_path / "b")
    with pytest.raises(UserError, match="previous export"):
        api.export_traces(ws, ["f1"], format="otlp", out=tmp_path / "b")
    api.export_traces(ws, ["f1"], format="otlp", out=tmp_path / "b", overwrite=True)


def test_the_cli_writes_otlp(ws, tmp_path, capsys):
    assert main(["export", "-w", str(ws), "f1", "--format", "otlp", "--out", str(tmp_path)]) == 0
    assert "otlp.json" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "otlp.json.manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "otlp" and manifest["run_ids"] == ["f1"]
