"""The loop closes: requests a `serve` process answered are exported as OTLP JSON
(`export --format otlp serve-N`) and `ingest` reads every step of them back into another
workspace (docs/serving.md#production-traffic-back-into-ingest)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx

from app import api
from app.cli import main
from app.harness.data.export_otel import load_trajectories
from app.harness.ingest import roundtrip
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from core.traces import trace_from_json
from tests.app.serving.test_serve import init_ws, questions, start


def test_served_requests_come_back_through_ingest(tmp_path: Path) -> None:
    ws = init_ws(tmp_path / "ws")
    server = start(ws, "--name", "trained")
    asked = questions(ws)[:3]
    try:
        for q in asked:
            body = {
                "model": "trained",
                "messages": [{"role": "user", "content": q["question"]}],
                "skill_trainer": {"task_type": q["task_type"]},
            }
            reply = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
            assert reply.status_code == 200, reply.text
    finally:
        code, _, err = server.stop()
    assert code == 0, err

    exported = api.export_traces(ws, [server.run_id], format="otlp", out=tmp_path / "otlp")
    assert exported.files["otlp.json"].count == 3
    with Session(ws, load_config(None)) as s:
        written = list(load_trajectories(s, server.run_id, set()))
    assert [t.question_id.startswith("chatcmpl-") for t in written] == [True] * 3

    other = tmp_path / "other"
    assert main(["init", str(other), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    summary = api.ingest(other, tmp_path / "otlp" / "otlp.json")
    assert (summary.new, summary.failed) == (3, 0)
    with sqlite3.connect(other / "harness.db") as conn:
        rows = conn.execute("SELECT trace_json FROM ingested_traces").fetchall()
    read = [trace_from_json(json.loads(r[0])) for r in rows]
    result = roundtrip.compare(written, read)
    assert result.first_difference == ""
    assert (result.equal, result.total) == (3, 3)
    # the user's task holds the request as the client sent it (in the agent's user prompt)
    for q in asked:
        assert sum(q["question"] in t.task for t in read) == 1
