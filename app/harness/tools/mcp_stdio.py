"""The stdio transport of MCP tools (app/harness/tools/mcp_tools.py): the `mcp` package's
session over a server process this module starts, reads and stops.

Why not `mcp.client.stdio.stdio_client`: it assembles each line by concatenating strings (a
50 MB reply is quadratic and never arrives), sends every stdout line that is not JSON-RPC to
the session with a logged traceback (a chatty server prints tens of thousands), and the
process it starts is not reachable to kill when `initialize` never returns. Here:
- lines are split from one growing buffer (linear), and a message over MAX_MESSAGE_BYTES is
  never assembled: the request it answers fails at once with a JSON-RPC error saying so
  (its id is read from the message's first bytes), the rest of the line is discarded;
- a line that is not JSON-RPC is dropped and reported through loguru, one warning per
  cause, and a count at the end (`Noise`);
- the server runs in its own session; stopping it closes its stdin, waits STOP_GRACE_S, then
  SIGKILLs the whole process group and sweeps it (app/harness/tools/sandbox.py
  `sweep_group`). A process that called setsid() has left the group: that is the documented
  limit (docs/checkers.md#what-user-code-can-reach).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from anyio.abc import ByteReceiveStream, Process
from loguru import logger

from app.harness.tools.sandbox import close_transport, kill_group, sweep_group

MAX_MESSAGE_BYTES = 4 << 20
STOP_GRACE_S = 1.0
_HEAD_BYTES = 256
_ID_RE = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,100}"|-?\d{1,18})')


@dataclass
class Noise:
    """Stdout lines of a server that were not JSON-RPC: the first of each cause is logged,
    the rest counted (`summary` at the end)."""

    server: str
    counts: dict[str, int] = field(default_factory=dict)

    def report(self, cause: str, line: bytes) -> None:
        self.counts[cause] = self.counts.get(cause, 0) + 1
        if self.counts[cause] == 1:
            logger.warning(
                "mcp server {!r}: {} on stdout, dropped (first: {}); more are counted",
                self.server,
                cause,
                _excerpt(line),
            )

    def summary(self) -> None:
        for cause, n in self.counts.items():
            if n > 1:
                logger.warning("mcp server {!r}: {} lines of {} dropped", self.server, n, cause)


def _excerpt(line: bytes) -> str:
    """At most 80 characters, control characters escaped (repr)."""
    return repr(line[:80].decode("utf-8", "replace"))


@dataclass(frozen=True)
class Oversize:
    head: bytes
    limit: int


async def lines(stream: ByteReceiveStream, limit: int) -> AsyncIterator[bytes | Oversize]:
    """The stream's lines (without the newline); a line longer than `limit` is yielded once
    as Oversize as soon as it is, and the rest of it is skipped unread into memory."""
    buf = bytearray()
    skipping = False
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            chunk = await stream.receive(65536)
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                if end < 0:
                    break
                if skipping:
                    skipping = False
                else:
                    buf += chunk[start:end]
                    yield bytes(buf)
                buf.clear()
                start = end + 1
            if not skipping:
                buf += chunk[start:]
                if len(buf) > limit:
                    yield Oversize(bytes(buf[:_HEAD_BYTES]), limit)
                    buf.clear()
                    skipping = True
    if buf and not skipping:
        yield bytes(buf)


def _too_big(item: Oversize) -> Any | None:
    """A JSON-RPC error answering the request an oversized message answers (None: its id is
    not in its first bytes, the request then times out)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    m = _ID_RE.search(item.head)
    if m is None:
        return None
    raw = m.group(1).decode("utf-8", "replace")
    request_id: str | int = raw[1:-1] if raw.startswith('"') else int(raw)
    message = f"the server's reply is larger than {item.limit} bytes; it was dropped"
    error = JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=-32000, message=message)
    )
    return SessionMessage(error)


@asynccontextmanager
async def stdio_server(
    command: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    errlog: TextIO,
    name: str,
    on_start: Callable[[int], None] = lambda pid: None,
    max_message_bytes: int | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(read, write) streams for `mcp.ClientSession` over a server process; the process
    group is killed on the way out, whatever the way out (a cancel too)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    process = await anyio.open_process(
        command, env=env, cwd=cwd, stderr=errlog, start_new_session=True
    )
    on_start(process.pid)
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[Any](0)
    noise = Noise(name)
    limit = MAX_MESSAGE_BYTES if max_message_bytes is None else max_message_bytes

    async def read() -> None:
        assert process.stdout is not None
        async with read_in:
            async for line in lines(process.stdout, limit):
                if isinstance(line, Oversize):
                    message = _too_big(line)
                    if message is None:
                        noise.report(f"a message over {line.limit} bytes", line.head)
                        continue
                elif not line.strip():
                    continue
                else:
                    try:
                        message = SessionMessage(jsonrpc_message_adapter.validate_json(line))
                    except ValueError:
                        noise.report("text that is not JSON-RPC", line)
                        continue
                try:
                    await read_in.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def write() -> None:
        assert process.stdin is not None
        async with write_out:
            async for message in write_out:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await process.stdin.send(data.encode() + b"\n")
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    await read_in.aclose()  # the session sees the end, not a hang
                    return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
            try:
                yield read_out, write_in
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_process(process)
            for stream in (read_out, write_in):
                await stream.aclose()
        noise.summary()


async def stop_process(process: Process) -> None:
    """Close stdin, give the server STOP_GRACE_S to exit, then kill its whole group, sweep
    it, and close the pipes (an escaped grandchild may hold them open)."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(STOP_GRACE_S):
        while process.returncode is None:
            await anyio.sleep(0.01)
    kill_group(process.pid)
    with anyio.move_on_after(2.0):
        while process.returncode is None:
            await anyio.sleep(0.01)
    sweep_group(process.pid)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(Exception):
                await pipe.aclose()
    close_transport(process)
