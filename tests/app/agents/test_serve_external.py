"""`serve` with an outside agent (`[agent]`): each request is one rollout of that agent through
the gateway the server keeps running, logged as a serve-run prediction like the built-in
loop's (app/harness/serving/server.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.app.serving.test_serve import TOKEN, ask, init_ws, questions, start

AGENT = [
    "--set",
    "agent.kind=python",
    "--set",
    "agent.function=tests.app.agents.agent_plugins:reads_skills",
]


@pytest.mark.slow  # a serve process (about 2 s of imports)
def test_a_served_request_is_one_rollout_of_the_outside_agent(tmp_path: Path) -> None:
    ws = init_ws(tmp_path / "ws")
    server = start(ws, "--token", TOKEN, *AGENT)
    try:
        q = questions(ws)[0]
        reply = server.client().chat.completions.create(model=server.name, **ask(q))
        content = reply.choices[0].message.content or ""
        extra = (reply.model_extra or {})["skill_trainer"]
        assert "ANSWER:" in content and extra["run_id"] == server.run_id
    finally:
        code, _out, err = server.stop()
    assert code == 0, err
    con = sqlite3.connect(ws / "harness.db")
    try:
        (steps,) = con.execute(
            "SELECT steps_json FROM predictions WHERE run_id = ?", (server.run_id,)
        ).fetchone()
        (calls,) = con.execute(
            "SELECT COUNT(*) FROM llm_calls WHERE run_id = ? AND role = 'agent'", (server.run_id,)
        ).fetchone()
    finally:
        con.close()
    verdict = json.loads(steps)[-1]
    assert verdict["agent"]["calls"] == 1 and calls == 1  # the agent's call, under the serve run
    assert "ANSWER:" in next(s["text"] for s in json.loads(steps) if s["type"] == "model")
