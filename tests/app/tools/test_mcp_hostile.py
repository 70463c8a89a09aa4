"""Hostile MCP servers (app/harness/tools/mcp_stdio.py): one that never answers `initialize`
and ignores SIGTERM is killed with its group; stdout garbage is one warning per cause, not a
traceback per line; a reply over the message bound fails its call at once. The servers are
written by each test into tmp_path: a few lines of JSON-RPC without the mcp package, so they
start in milliseconds."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from loguru import logger

from app.harness.tools import mcp_stdio
from app.harness.tools.mcp_tools import McpServer
from app.harness.tools.result import ToolUnavailable
from app.harness.tools.spec import McpTool
from tests.app.tools.conftest import processes_with

SERVER = """
    import json, sys

    GARBAGE = {garbage}
    BIG = {big}

    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        for i in range(GARBAGE):
            sys.stdout.write(f"debug: not json {{i}}\\x1b[31m\\n")
        if msg["method"] == "initialize":
            result = {{
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {{"tools": {{}}}},
                "serverInfo": {{"name": "raw", "version": "1"}},
            }}
        elif msg["method"] == "tools/list":
            schema = {{"type": "object", "properties": {{}}}}
            result = {{"tools": [{{"name": "big", "description": "A big reply.", "inputSchema": schema}}]}}
        elif msg["method"] == "tools/call":
            result = {{"content": [{{"type": "text", "text": "x" * BIG}}], "isError": False}}
        else:
            result = {{}}
        send({{"jsonrpc": "2.0", "id": msg["id"], "result": result}})
"""


def server(tmp_path: Path, *, garbage: int = 0, big: int = 3, timeout_s: float = 5.0) -> McpServer:
    script = tmp_path / "raw_server.py"
    script.write_text(textwrap.dedent(SERVER.format(garbage=garbage, big=big)))
    decl = McpTool(
        name="raw",
        kind="mcp",
        command=[sys.executable, str(script)],
        timeout_s=timeout_s,
        start_timeout_s=10,
    )
    return McpServer(decl, tmp_path / "cwd")


def call(srv: McpServer, timeout_s: float):
    return anyio.run(lambda: srv.call("big", {}, timeout_s))


def test_a_server_that_never_answers_initialize_is_killed_with_its_group(
    tmp_path: Path, marker: str
) -> None:
    script = tmp_path / f"{marker}.py"
    script.write_text(
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'])\n"
        "sys.stdin.close()\n"  # reads nothing, answers nothing
        "time.sleep(600)\n"
    )
    decl = McpTool(
        name="mute", kind="mcp", command=[sys.executable, str(script)], start_timeout_s=1.0
    )
    srv = McpServer(decl, tmp_path / "cwd")
    started = time.monotonic()
    with pytest.raises(ToolUnavailable, match="did not start in time"):
        srv.start()
    assert time.monotonic() - started < 8
    assert processes_with(marker) == []


def test_stdout_garbage_is_one_warning_per_cause_not_a_traceback_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warnings: list[str] = []
    sink = logger.add(lambda m: warnings.append(str(m)), level="WARNING")
    srv = server(tmp_path, garbage=2000)
    try:
        srv.start()
        assert call(srv, 5.0).output == "xxx"
    finally:
        srv.close()
        logger.remove(sink)
    assert "Traceback" not in capsys.readouterr().err
    assert len(warnings) == 2, warnings
    assert "text that is not JSON-RPC on stdout" in warnings[0]
    assert "\x1b" not in warnings[0]  # the garbage's control characters are escaped
    assert "6000 lines of text that is not JSON-RPC dropped" in warnings[1]


def test_a_reply_over_the_bound_fails_its_call_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_stdio, "MAX_MESSAGE_BYTES", 1 << 20)
    srv = server(tmp_path, big=50_000_000, timeout_s=30.0)
    try:
        srv.start()
        started = time.monotonic()
        result = call(srv, 30.0)
        assert not result.ok and "larger than 1048576 bytes" in result.error
        assert time.monotonic() - started < 10
    finally:
        srv.close()


def test_lines_are_split_and_bounded() -> None:
    async def collect(chunks: list[bytes], limit: int) -> list[object]:
        send, receive = anyio.create_memory_object_stream[bytes](len(chunks))
        for c in chunks:
            send.send_nowait(c)
        send.close()

        class Stream:
            async def receive(self, n: int) -> bytes:
                try:
                    return await receive.receive()
                except anyio.EndOfStream:
                    raise anyio.EndOfStream from None

        return [x async for x in mcp_stdio.lines(Stream(), limit)]  # type: ignore[arg-type]

    got = anyio.run(collect, [b"ab", b"c\nde", b"f\n" + b"y" * 30, b"y" * 30 + b"\nz"], 20)
    assert got[:2] == [b"abc", b"def"]
    assert isinstance(got[2], mcp_stdio.Oversize) and got[2].head.startswith(b"y")
    assert got[3:] == [b"z"]
