"""Real third-party agent frameworks as `[agent] kind = "python"` agents, offline on the
simulated model: examples/agents/openai-agents-sdk/agent.py (the OpenAI Agents SDK's `Runner`
on an `OpenAIChatCompletionsModel`) and examples/agents/langgraph/agent.py (a LangGraph
`StateGraph` calling langchain-openai's `ChatOpenAI`), each named by its file path
(`path/to/agent.py:run`, since a hyphenated folder is no module).

Both packages are in the `dev` extra, so these tests always run. Every test here runs with
a guard that records any connection (or name lookup) other than the loopback gateway, with
the frameworks' tracing switched on in the environment (LANGSMITH_TRACING,
LANGCHAIN_TRACING_V2, an OPENAI_API_KEY for the Agents SDK's exporter): the adapters must call
the gateway and no one else. The training run is the small one of test_train_external.py
(24-unit sim-basic world, one epoch, accept_all with a helpful evolver), which trains the
built-in-like one-call agents from about 0.31 to 0.81 held-out accuracy.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import api
from tests.app.agents.test_train_external import SMALL, rows, small_workspace

ROOT = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("openai-agents-sdk", "langgraph")
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def agent_config(framework: str) -> dict[str, Any]:
    # relative to the current directory, as a path given to the API is: anchor it here
    target = os.path.relpath(ROOT / "examples" / "agents" / framework / "agent.py")
    return {**SMALL, "agent_kind": "python", "agent_function": f"{target}:run"}


@pytest.fixture
def offline_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Tracing asked for by the environment, and every non-loopback connection or lookup
    recorded and refused. Yields the record; the test's end flushes both frameworks' trace
    exporters (which would connect, had they anything queued) and checks it is empty."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.setenv(name, "true")
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2-test-not-a-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    attempts: list[str] = []
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            attempts.append(f"connect {address!r}")
            raise OSError("tests/app/agents/test_frameworks.py: no network but the gateway")
        return connect(sock, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and str(host) not in LOOPBACK:
            attempts.append(f"getaddrinfo {host!r}")
            raise socket.gaierror("tests/app/agents/test_frameworks.py: no network")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield attempts
    from agents.tracing import get_trace_provider
    from langchain_core.tracers.langchain import wait_for_all_tracers

    get_trace_provider().force_flush()
    wait_for_all_tracers()
    assert attempts == []


def test_the_guard_sees_an_outside_connection(offline_only: list[str]) -> None:
    with pytest.raises(OSError):
        socket.create_connection(("api.openai.com", 443), timeout=1)
    assert offline_only == ["getaddrinfo 'api.openai.com'"]
    offline_only.clear()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_infer_logs_each_rollouts_model_call_under_its_run(
    framework: str, tmp_path: Path, offline_only: list[str]
) -> None:
    ws = small_workspace(tmp_path)
    result = api.infer(ws, overrides=agent_config(framework), task_types=["dates"], run_id="fw")
    assert result.samples[0].total > 0
    steps = [json.loads(s) for (s,) in rows(ws, "SELECT steps_json FROM predictions")]
    assert steps and all(s[-1]["type"] == "verdict" for s in steps)
    assert all(s[-1]["agent"] == {**s[-1]["agent"], "calls": 1, "failure": None} for s in steps)
    assert all(s[0]["type"] == "model" and "ANSWER:" in s[0]["text"] for s in steps)
    (calls,) = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = 'fw'")[0]
    assert calls == len(steps)  # each rollout's one model call, logged under its run
    assert rows(ws, "SELECT DISTINCT stop_reason FROM predictions") == [("final",)]


@pytest.mark.slow  # about 3-5 s of CPU each: init, a training epoch, report, export
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_train_report_and_export_the_frameworks_skills(
    framework: str, tmp_path: Path, offline_only: list[str]
) -> None:
    ws = small_workspace(tmp_path)  # api.init_workspace on a small sim-basic world
    result = api.train(ws, overrides=agent_config(framework))
    assert result.status == "done", result.reason
    assert result.best_skills_version != "v1"  # its skill files were edited
    assert result.test_accuracy > result.baseline_test_accuracy + 0.15, (
        result.baseline_test_accuracy,
        result.test_accuracy,
    )
    (calls,) = rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE run_id = 'train1-final-test'")[0]
    (n,) = rows(ws, "SELECT COUNT(*) FROM predictions WHERE run_id = 'train1-final-test'")[0]
    assert n > 0 and calls == n
    assert api.report(ws) is not None
    exported = api.export_skills(ws, out=tmp_path / "exported")
    skills = sorted((tmp_path / "exported" / ".agents" / "skills").glob("*/SKILL.md"))
    assert skills and sorted(exported.files) == skills
