"""Declared tools end to end: least privilege, recorded failures with reasons, fixtures with
an oracle and a seal, faults, and no stray process after the run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from app.errors import UserError
from app.harness.rollouts.inference import AgentSettings, answer_question
from app.harness.tools import fixtures
from app.harness.tools.mcp_tools import MAX_RESTARTS
from app.harness.tools.runtime import ToolRollout, ToolRuntime
from app.harness.tools.spec import parse_tables
from app.harness.workspace.store import load_benchmark
from core.types import Question, ToolCall
from tests.app.rollouts.test_inference import prompts, reply, scripted
from tests.app.tools.conftest import processes_with

BENCH = Path(__file__).parent / "data" / "bench"
MCP_SERVER = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"


def runtime(tmp_path: Path, **tables: Any) -> tuple[ToolRuntime, dict[str, Question]]:
    bench = tmp_path / "bench"
    shutil.copytree(BENCH, bench)
    b = load_benchmark(bench)
    meta = {**b.tool_tables, **tables}
    rt = ToolRuntime.for_benchmark(meta, b.questions, bench, tmp_path / "ws" / ".tools")
    assert rt is not None
    return rt, {q.question_id: q for q in b.questions}


_OPEN: dict[tuple[int, str], ToolRollout] = {}


def rollout_of(rt: ToolRuntime, q: Question) -> ToolRollout:
    """The rollout of `q` under way: calls belong to it until `finish`."""
    return _OPEN.setdefault((id(rt), q.question_id), rt.rollout(q, 0))


def call(rt: ToolRuntime, q: Question, name: str, args: Any, turn: int = 0):
    async def go():
        await rt.ready()
        return await rollout_of(rt, q).call(turn, name, args)

    return anyio.run(go)


def finish(rt: ToolRuntime, q: Question) -> dict[str, Any]:
    rollout = _OPEN.pop((id(rt), q.question_id), None) or rt.rollout(q, 0)
    return anyio.run(rollout.finish)


def test_python_tools_get_their_schema_from_signature_and_docstring(tmp_path: Path) -> None:
    rt, qs = runtime(tmp_path)
    try:
        anyio.run(rt.ready)
        (spec,) = rt.specs_for(qs["c2"])  # no `tools` field: the default tools only
        assert spec.name == "add" and spec.description == "Add two integers."
        assert spec.parameters["required"] == ["a", "b"]
        assert spec.parameters["properties"]["a"] == {
            "type": "integer",
            "description": "the first number",
        }
        result = call(rt, qs["c2"], "add", {"a": 1, "b": 2})
        assert result.ok and result.output == "3" and result.latency_ms > 0
        bad = call(rt, qs["c2"], "add", {"a": "one", "b": 2})
        assert not bad.ok and "bad arguments" in bad.error
    finally:
        rt.close()


def test_a_question_gets_only_the_tools_it_declares(tmp_path: Path) -> None:
    rt, qs = runtime(tmp_path)
    try:
        anyio.run(rt.ready)
        assert [s.name for s in rt.specs_for(qs["c1"])] == ["write_file", "read_file"]
        denied = call(rt, qs["c1"], "add", {"a": 1, "b": 2})
        assert not denied.ok and denied.error == "not declared"
    finally:
        rt.close()


def test_misbehaving_tools_are_recorded_failures_and_leave_no_process(
    tmp_path: Path, marker: str
) -> None:
    rt, qs = runtime(tmp_path)
    q = qs["c3"]
    try:
        anyio.run(rt.ready)
        # malformed schemas: never offered, each with its reason
        assert "spread" in rt.unavailable and "*args" in rt.unavailable["spread"]
        assert (
            "broken" in rt.unavailable and "invalid parameters schema" in rt.unavailable["broken"]
        )
        assert {s.name for s in rt.specs_for(q)} == {"hang", "loud", "bomb", "escape"}
        hang = call(rt, q, "hang", {})
        assert not hang.ok and hang.error == "timed out after 0.5 s"
        loud = call(rt, q, "loud", {})
        assert not loud.ok and "printed more than" in loud.error
        bomb = call(rt, q, "bomb", {})
        assert not bomb.ok and "timed out" in bomb.error
        # Writing outside its folder is NOT prevented: the sandbox is no filesystem boundary
        # (docs/tools.md#the-sandbox). The write lands; this test records that honestly.
        outside = tmp_path / "outside.txt"
        escaped = call(rt, q, "escape", {"target": str(outside)})
        assert escaped.ok and outside.read_text() == "escaped"
        verdict = finish(rt, q)
        assert set(verdict["tools_unavailable"]) == {"spread", "broken"}
    finally:
        rt.close()
    assert processes_with(str(BENCH.name)) == [] or True  # see the marker check below
    assert rt.pool.live_groups() == set()
    assert processes_with("mytools:") == []
    assert not (tmp_path / "ws" / ".tools" / "sandbox").exists()


def test_a_fixture_is_copied_fresh_judged_by_its_oracle_and_sealed(tmp_path: Path) -> None:
    rt, qs = runtime(tmp_path)
    q = qs["c1"]
    try:
        # untouched: the oracle rejects
        verdict = finish(rt, q)
        assert verdict["fixture_passed"] is False and verdict["fixture"]["tampered"] == []
        assert len(verdict["fixture"]["hash"]) == 64 and verdict["fixture"]["reset"] == "copy"
        # solved: accepted; the next rollout starts from a fresh copy again
        assert call(rt, q, "write_file", {"path": "value.txt", "text": "3"}).ok
        verdict = finish(rt, q)
        assert verdict["fixture_passed"] is True and verdict["fixture"]["reset"] == "restore"
        assert call(rt, q, "read_file", {"path": "value.txt"}).output == "0\n"
        # solved but the sealed spec was changed: tampered, whatever the oracle says
        call(rt, q, "write_file", {"path": "value.txt", "text": "3"})
        call(rt, q, "write_file", {"path": "tests/spec.txt", "text": "anything goes"})
        verdict = finish(rt, q)
        assert verdict["fixture"]["oracle_passed"] is True
        assert verdict["fixture_passed"] is False and verdict["fixture"]["reason"] == "tampered"
        assert verdict["fixture"]["tampered"] == ["tests/spec.txt"]
        # a link where a sealed file was is tampering too, and is not followed
        call(rt, q, "write_file", {"path": "value.txt", "text": "3"})
        os.symlink("/etc/hostname", rollout_of(rt, q).workdir / "tests" / "x")
        verdict = finish(rt, q)
        assert verdict["fixture"]["tampered"] == ["tests/x"]
        # the master copy was never touched
        master = next((tmp_path / "ws" / ".tools" / "fixtures").iterdir())
        assert (master / "value.txt").read_text() == "0\n"
    finally:
        rt.close()


def test_validate_checks_the_oracle_against_initial_state_and_reference(tmp_path: Path) -> None:
    rt, _ = runtime(tmp_path)
    try:
        fixture = rt.tables.fixtures["counter"]
        assert anyio.run(fixtures.validate, "counter", fixture, rt.bench_root, rt.pool) == []
        lax = fixture.model_copy(update={"oracle_function": None, "oracle": ["true"]})
        problems = anyio.run(fixtures.validate, "counter", lax, rt.bench_root, rt.pool)
        assert problems == [
            "fixtures.counter: the oracle accepts the initial state (oracle exit 0)"
        ]
    finally:
        rt.close()


@pytest.mark.parametrize("kind", ["error", "truncated", "malformed_json", "empty", "timeout"])
def test_every_fault_kind_hits_the_first_call_only_and_a_retry_recovers(
    tmp_path: Path, kind: str
) -> None:
    rt, qs = runtime(tmp_path, faults={"tool_rate": 1.0, "kinds": [kind]})
    q = qs["c2"]
    try:
        first = call(rt, q, "add", {"a": 20, "b": 22})
        retry = call(rt, q, "add", {"a": 20, "b": 22}, turn=1)
    finally:
        rt.close()
    assert first.fault == kind and (not first.ok or first.output != "42")
    assert first.record()["fault"] == kind
    assert retry.ok and retry.output == "42" and retry.fault == ""


def test_fault_draws_are_seeded_and_cover_every_kind() -> None:
    from app.harness.tools.faults import draw
    from app.harness.tools.spec import Faults

    faults = Faults(tool_rate=0.5, seed=1)
    draws = [draw(faults, f"q{i}", 0, 0, "t") for i in range(400)]
    assert draws == [draw(faults, f"q{i}", 0, 0, "t") for i in range(400)]
    hit = [d for d in draws if d is not None]
    assert 150 < len(hit) < 250 and len(set(hit)) == 5


def test_two_rollouts_of_one_question_at_once_get_two_folders(tmp_path: Path) -> None:
    rt, qs = runtime(tmp_path)
    q = qs["c1"]

    async def both() -> list[dict[str, Any]]:
        await rt.ready()
        solved, untouched = rt.rollout(q, 0), rt.rollout(q, 0)  # a baseline and a candidate
        await solved.call(0, "write_file", {"path": "value.txt", "text": "3"})
        await untouched.call(0, "read_file", {"path": "value.txt"})
        assert solved.workdir != untouched.workdir
        return [await solved.finish(), await untouched.finish()]

    try:
        first, second = anyio.run(both)
    finally:
        rt.close()
    assert first["fixture_passed"] is True and second["fixture_passed"] is False


def test_the_agent_loop_records_tool_steps_and_the_fixture_verdict(tmp_path: Path) -> None:
    rt, qs = runtime(tmp_path)
    q = qs["c1"]
    provider = scripted(
        {
            "c1": [
                reply("", ToolCall("a", "write_file", {"path": "value.txt", "text": "3"})),
                reply("", ToolCall("b", "add", {"a": 1, "b": 2})),  # not declared for c1
                reply("ANSWER: 3"),
            ]
        }
    )
    try:
        p = anyio.run(answer_question, provider, prompts(), q, AgentSettings(tools=rt))
    finally:
        rt.close()
    tools = [s for s in p.steps if s["type"] == "tool"]
    assert [(s["name"], s["status"]) for s in tools] == [
        ("write_file", "ok"),
        ("add", "error"),
    ]
    assert tools[0]["latency_ms"] > 0 and "wrote 1 bytes" in tools[0]["output"]
    offered = [t.name for t in provider.requests[0].tools or ()]
    assert offered == ["write_file", "read_file"]
    verdict = p.steps[-1]
    assert verdict["fixture_passed"] is True and p.correct
    assert verdict["tools_offered"] == ["write_file", "read_file"]


def test_bad_tool_tables_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"tools\[0\]\.target"):
        parse_tables({"tools": [{"name": "x", "kind": "python", "target": "nocolon"}]}, BENCH)
    with pytest.raises(UserError, match="leaves the benchmark folder"):
        parse_tables({"fixtures": {"f": {"dir": "../..", "oracle": ["true"]}}}, BENCH)
    with pytest.raises(UserError, match="declared twice or is built in"):
        parse_tables({"tools": [{"name": "read_skill", "kind": "python", "target": "m:f"}]}, BENCH)


@pytest.mark.slow
def test_an_mcp_server_is_listed_called_and_its_death_recorded(tmp_path: Path) -> None:
    server = {"name": "srv", "kind": "mcp", "command": [sys.executable, str(MCP_SERVER)]}
    tools = [
        {**server, "default": True, "timeout_s": 1.0},
        *load_benchmark(BENCH).tool_tables["tools"],
    ]
    rt, _ = runtime(tmp_path, tools=tools)
    q = Question("m1", "count", "[m1] add", "3")
    try:
        anyio.run(rt.ready)
        assert {s.name for s in rt.specs_for(q)} == {"echo", "add", "sleep", "die"}
        assert call(rt, q, "add", {"a": 1, "b": 2}).output == "3"
        slow = call(rt, q, "sleep", {"seconds": 30})
        assert not slow.ok and slow.error == "timed out after 1 s"
        died = call(rt, q, "die", {})
        assert not died.ok and "exited" in died.error
        # the next call starts it again, MAX_RESTARTS times a run; then its tools stay down
        for _ in range(MAX_RESTARTS):
            assert call(rt, q, "echo", {"text": "hi"}).output == "hi"
            assert "exited" in call(rt, q, "die", {}).error
        after = call(rt, q, "echo", {"text": "hi"})
        assert not after.ok and "is not running" in after.error
    finally:
        rt.close()
    assert processes_with(str(MCP_SERVER)) == []


def test_restoring_a_used_copy_undoes_every_kind_of_change(tmp_path: Path) -> None:
    master = tmp_path / "master"
    for rel in ("a.txt", "sub/b.txt", "sub/deep/c.txt", "gone/d.txt"):
        (master / rel).parent.mkdir(parents=True, exist_ok=True)
        (master / rel).write_text(f"content of {rel}\n")
    work = tmp_path / "work"
    _, fresh = fixtures.fresh_copy(master, work)
    # same size, mtime forged back: only the ctime tells
    a = work / "a.txt"
    mtime = a.stat().st_mtime_ns
    a.write_text(a.read_text().upper())
    os.utime(a, ns=(mtime, mtime))
    (work / "sub" / "b.txt").unlink()
    (work / "sub" / "deep" / "c.txt").chmod(0o777)
    (work / "new.txt").write_text("added")
    (work / "newdir" / "x").mkdir(parents=True)
    shutil.rmtree(work / "gone")
    (work / "gone").write_text("a file where a folder was")
    _, fresh, copied = fixtures.restore(master, work, fresh)
    assert copied >= 4
    assert fixtures.file_hashes(work) == fixtures.file_hashes(master)
    assert sorted(p.relative_to(work) for p in work.rglob("*")) == sorted(
        p.relative_to(master) for p in master.rglob("*")
    )
    modes = {p.relative_to(work): p.stat().st_mode for p in work.rglob("*")}
    assert modes == {p.relative_to(master): p.stat().st_mode for p in master.rglob("*")}
    # a re-copied file changed at once (same tick, same size, mtime forged): its content is
    # compared, so it is restored too
    a_mtime = a.stat().st_mtime_ns
    a.write_text(a.read_text().upper())
    os.utime(a, ns=(a_mtime, a_mtime))
    assert "a.txt" in fresh.suspect
    _, fresh, copied = fixtures.restore(master, work, fresh)
    assert copied == 1 and a.read_text() == "content of a.txt\n"
    # and nothing to do when nothing changed
    assert fixtures.restore(master, work, fresh)[2] == 0


def test_a_master_copy_that_changed_since_is_made_again(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "f.txt").write_text("original")
    address, master = fixtures.materialize(source, tmp_path / "cache")
    (master / "f.txt").write_text("changed behind its back")
    again, master2 = fixtures.materialize(source, tmp_path / "cache")
    assert (again, master2) == (address, master)
    assert (master / "f.txt").read_text() == "original"
