"""MCP tools: one stdio server per `[[tools]] kind = "mcp"` entry, started once per run.

The client (the `mcp` package) runs in a thread with its own event loop, so the server's
life does not depend on which rollout task first needed it: rollouts hand calls over with
`asyncio.run_coroutine_threadsafe` and wait with a timeout. The server is started in its own
process group (app/harness/tools/mcp_stdio.py, which also bounds each message and drops stdout
noise) and the group is killed on `close()`, also when `initialize` never returned. A server that dies fails
its call with a recorded error ("server exited"), never a hang; the next call starts it again,
at most MAX_RESTARTS times a run (a run lasts days: one crash must not cost every later tool
call), after which its tools fail as "not running".
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loguru import logger

from app.harness.tools.mcp_stdio import stdio_server
from app.harness.tools.result import ToolResult, ToolUnavailable, as_text, checked_spec
from app.harness.tools.sandbox import kill_group, sweep_group
from app.harness.tools.spec import McpTool
from core.types import ToolSpec

if TYPE_CHECKING:
    from mcp import ClientSession

MAX_RESTARTS = 3


class McpServer:
    def __init__(self, decl: McpTool, cwd: Path) -> None:
        self.decl = decl
        self.cwd = cwd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._session: ClientSession | None = None
        self._listed: list[Any] = []
        self._error = ""
        self._dead = False
        self._errlog: TextIO | None = None
        self._restart_lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._pid: int | None = None
        self.restarts = 0
        self.calls = 0

    # --- life ---

    def start(self) -> list[ToolSpec]:
        """Start the server, list its tools (blocking, bounded); ToolUnavailable on failure."""
        self.cwd.mkdir(parents=True, exist_ok=True)
        # a restarted server's stderr follows the first's
        log_file = self.cwd / "server.stderr"
        self._errlog = log_file.open("a" if self.restarts else "w", encoding="utf-8")  # noqa: SIM115
        self._thread = threading.Thread(target=self._serve, name=f"mcp-{self.decl.name}")
        self._thread.daemon = True
        self._thread.start()
        if not self._ready.wait(self.decl.start_timeout_s):
            self.close()
            raise ToolUnavailable(f"mcp server {self.decl.name!r}: did not start in time")
        if self._error:
            self.close()
            raise ToolUnavailable(f"mcp server {self.decl.name!r}: {self._error}")
        return self._specs()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._main())
            loop.run_until_complete(self._task)
        except BaseException as e:  # noqa: BLE001 -- reported through _error, the thread ends
            self._error = self._error or _describe(e)
        finally:
            self._session = None
            self._ready.set()
            loop.close()

    async def _main(self) -> None:
        from mcp import ClientSession  # 0.3 s: when used
        from mcp.client.stdio import get_default_environment

        assert self._errlog is not None
        async with (
            stdio_server(
                list(self.decl.command),
                env=get_default_environment() | dict(self.decl.env),
                cwd=self.cwd,
                errlog=self._errlog,
                name=self.decl.name,
                on_start=self._started,
            ) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            self._listed = list(listed.tools)
            self._session = session
            self._ready.set()
            await asyncio.Event().wait()  # serve until close() cancels this task

    def _started(self, pid: int) -> None:
        self._pid = pid

    def close(self) -> None:
        """Stop the server and the thread: the task is cancelled wherever it waits (a server
        that never answered `initialize` too) and the transport kills the process group; if
        the thread does not end in time, the group is killed from here."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._pid is not None:
            kill_group(self._pid)
            sweep_group(self._pid)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _restart(self) -> None:
        """Start a dead server again (one thread at a time; a call that finds it running again
        does nothing); after MAX_RESTARTS it stays down."""
        with self._restart_lock:
            if self.alive or self.restarts >= MAX_RESTARTS:
                return
            self.close()
            self._ready = threading.Event()
            self._loop, self._session = None, None
            self._task, self._pid = None, None
            self._error, self._dead = "", False
            self.restarts += 1
            try:
                self.start()
            except ToolUnavailable as e:
                self._dead = True
                logger.warning("{} (restart {} of {})", e, self.restarts, MAX_RESTARTS)
                return
            logger.warning(
                "mcp server {!r} started again (restart {} of {})",
                self.decl.name,
                self.restarts,
                MAX_RESTARTS,
            )

    @property
    def alive(self) -> bool:
        live = self._thread is not None and self._thread.is_alive()
        return live and self._session is not None and not self._dead

    # --- tools ---

    def _specs(self) -> list[ToolSpec]:
        wanted = set(self.decl.tools) if self.decl.tools is not None else None
        specs = []
        for tool in self._listed:
            if wanted is not None and tool.name not in wanted:
                continue
            schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
            specs.append(checked_spec(tool.name, tool.description or "", schema))
        missing = (wanted or set()) - {s.name for s in specs}
        if missing:
            raise ToolUnavailable(
                f"mcp server {self.decl.name!r} has no tool {sorted(missing)[0]!r}"
            )
        return specs

    async def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> ToolResult:
        started = time.perf_counter()
        self.calls += 1
        if not self.alive and self._thread is not None and self.restarts < MAX_RESTARTS:
            await asyncio.to_thread(self._restart)  # started once, and died since
        session, loop = self._session, self._loop
        if session is None or loop is None or not self.alive:
            reason = f"mcp server {self.decl.name!r} is not running"
            return ToolResult(False, f"error: {reason}", reason)
        future = asyncio.run_coroutine_threadsafe(
            session.call_tool(name, arguments, read_timeout_seconds=timeout_s), loop
        )
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s + 1)
        except TimeoutError:
            reason = f"timed out after {timeout_s:g} s"
            return ToolResult(False, f"error: {reason}", reason, _ms(started))
        except Exception as e:  # noqa: BLE001 -- a dead server, a protocol error: recorded
            reason = _describe(e)
            if "timed out" in reason:
                reason = f"timed out after {timeout_s:g} s"
            elif "closed" in reason.lower():  # the pipe closed: the server is gone for good
                self._dead = True
                reason = f"mcp server {self.decl.name!r} exited ({reason})"
                logger.warning("{}; the next call starts it again", reason)
            return ToolResult(False, f"error: {reason}", reason, _ms(started))
        logger.debug("mcp {}.{}: {:.1f} ms", self.decl.name, name, _ms(started))
        text = "\n".join(
            getattr(block, "text", "") or as_text(_dump(block)) for block in result.content
        )
        if getattr(result, "is_error", getattr(result, "isError", False)):
            return ToolResult(False, f"error: {text}", text[:500] or "tool error", _ms(started))
        return ToolResult(True, text, latency_ms=_ms(started))


def _dump(block: Any) -> Any:
    return block.model_dump(mode="json") if hasattr(block, "model_dump") else str(block)


def _describe(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"[:500] if str(e) else type(e).__name__


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
