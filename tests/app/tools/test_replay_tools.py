"""Replay tools (app/harness/tools/replay.py): `ingest --to-benchmark` writes the recorded
tool calls of its traces as `kind = "replay"` tools, and the tool runtime answers a call from
the recording; an unrecorded call gets the fixed "not recorded" observation."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from app import api
from app.errors import UserError
from app.harness.tools import replay
from app.harness.tools.result import ToolResult
from app.harness.tools.runtime import ToolRuntime
from app.harness.workspace.store import load_benchmark

DATA = Path(__file__).parents[1] / "data" / "traces"


def _benchmark(tmp_path: Path, name: str = "rep") -> Path:
    store = tmp_path / "store"
    api.ingest(tmp_path / "x", DATA / "otlp_genai.json", to_benchmark=name, store=store)
    return store / "questions" / name


def test_to_benchmark_writes_replay_tools_that_answer_from_the_recording(tmp_path: Path) -> None:
    folder = _benchmark(tmp_path)
    bench = load_benchmark(folder)
    recorded = [json.loads(line) for line in (folder / "replay.jsonl").read_text().splitlines()]
    assert recorded and {t["kind"] for t in bench.tool_tables["tools"]} == {"replay"}
    first = recorded[0]
    question = next(q for q in bench.questions if q.question_id == first["question_id"])
    assert list(question.tools or ()) == [first["tool"]]

    async def calls() -> tuple[ToolResult, ToolResult, list[str]]:
        runtime = ToolRuntime.for_benchmark(
            bench.tool_tables, bench.questions, folder, tmp_path / "rt"
        )
        assert runtime is not None
        try:
            await runtime.ready()
            rollout = runtime.rollout(question, 0)
            # the same arguments in another key order and spacing are the same call
            args = json.loads(json.dumps(first["arguments"], sort_keys=False))
            hit = await rollout.call(0, first["tool"], args)
            miss = await rollout.call(1, first["tool"], {"not": "recorded"})
            offered = [s.name for s in runtime.specs_for(question)]
            await rollout.finish()
            return hit, miss, offered
        finally:
            runtime.close()

    hit, miss, offered = anyio.run(calls)
    assert offered == [first["tool"]]
    assert (hit.ok, hit.output) == (not first["error"], first["observation"])
    assert (miss.ok, miss.output) == (False, replay.NOT_RECORDED)


def test_a_bad_recording_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "replay.jsonl"
    path.write_text('{"question_id": "q", "tool": "t", "observation": "x"}\n{"tool": 3}\n')
    with pytest.raises(UserError, match=r"replay.jsonl:2: a recorded call needs"):
        replay.load(path, {"t"})


def test_a_missing_recording_is_refused_by_the_benchmark(tmp_path: Path) -> None:
    folder = _benchmark(tmp_path)
    (folder / "replay.jsonl").unlink()
    bench = load_benchmark(folder)
    with pytest.raises(UserError, match="recordings: no file 'replay.jsonl'"):
        ToolRuntime.for_benchmark(bench.tool_tables, bench.questions, folder, tmp_path / "rt")
