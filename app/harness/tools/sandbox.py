"""The sandbox pool: tool and oracle processes under limits (docs/tools.md#the-sandbox).

What it does for every child: at most `concurrency` run at once; a wall-clock timeout; CPU,
address-space, file-size (and, when set, process-count) limits applied by `child.py` before
the tool's code runs; a private working folder as its cwd, HOME and TMPDIR; an environment
built from an allow-list (nothing else of the parent's, so no API keys); its own session and
process group, killed as a group on timeout, on too much output, on `stop()` and after a
normal exit too (a tool's forgotten background child dies with it); the group is swept until
no process of it is left.

What it does not do: it is no security boundary against hostile code. A child runs as the
same user with the same filesystem view, so it can read and write anything that user can
(an absolute path escapes its folder); it has the network; a process that calls setsid()
leaves the group and escapes the sweep; RLIMIT_NPROC counts every process of the user and is
not enforced for root. `wrap` is the seam for a real boundary: a function that turns the argv
into one run by a container runtime (bwrap, nsjail, docker exec).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

CHILD = Path(__file__).with_name("child.py")
DEFAULT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
SWEEP_TRIES = 100


@dataclass(frozen=True)
class Limits:
    """Per-call bounds. `processes` 0 leaves RLIMIT_NPROC alone: it counts all of the user's
    processes, so a small value would stop a busy user's tool from starting at all."""

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_bytes: int = 1 << 30
    file_bytes: int = 64 << 20
    processes: int = 0
    output_bytes: int = 1 << 20

    def for_child(self, path: Sequence[str] = ()) -> str:
        return json.dumps(
            {
                "cpu_s": self.cpu_s,
                "memory_bytes": self.memory_bytes,
                "file_bytes": self.file_bytes,
                "processes": self.processes,
                "path": list(path),
                "parent": os.getpid(),
            }
        )


class Outcome(StrEnum):
    OK = "ok"
    EXIT = "exit"  # ran to the end with a non-zero exit code
    TIMEOUT = "timeout"
    OUTPUT_LIMIT = "output_limit"
    STOPPED = "stopped"
    SPAWN_ERROR = "spawn_error"


@dataclass(frozen=True)
class RunResult:
    outcome: Outcome
    exit_code: int | None
    stdout: str
    stderr: str
    latency_ms: float
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK


@dataclass
class _Capture:
    limit: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    over: bool = False

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


class SandboxPool:
    """Runs children under `Limits`; `stop()` kills every live one."""

    def __init__(
        self,
        root: Path,
        *,
        concurrency: int = 4,
        limits: Limits = Limits(),
        env_allow: Sequence[str] = DEFAULT_ENV_ALLOW,
        wrap: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        self.root = root
        self.concurrency = concurrency
        self.limits = limits
        self.env_allow = tuple(env_allow)
        self.wrap = wrap
        self._limiter: anyio.CapacityLimiter | None = None
        self._live: set[int] = set()  # process group ids of running children
        self._stopped = False

    def workdir(self, name: str) -> Path:
        """A private folder under the pool's root (created empty if new)."""
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def environment(self, cwd: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: os.environ[k] for k in self.env_allow if k in os.environ}
        env.update(HOME=str(cwd), TMPDIR=str(cwd), PYTHONDONTWRITEBYTECODE="1")
        env.update(extra or {})
        return env

    async def run_command(
        self,
        argv: Sequence[str],
        cwd: Path,
        *,
        limits: Limits | None = None,
        stdin: bytes = b"",
        env: dict[str, str] | None = None,
    ) -> RunResult:
        """Any program, after child.py applied the limits; `env` is added to the allow-listed
        environment (an agent's endpoint and its per-rollout key, app/harness/agents/)."""
        lim = limits or self.limits
        return await self._run(["exec", *argv], cwd, lim, stdin, (), env)

    async def run_python(
        self,
        mode: str,
        target: str,
        cwd: Path,
        *,
        path: Sequence[str] = (),
        limits: Limits | None = None,
        stdin: bytes = b"",
    ) -> RunResult:
        """child.py's `call` or `schema` mode for `module:function`."""
        return await self._run([mode, target], cwd, limits or self.limits, stdin, path)

    async def _run(
        self,
        tail: list[str],
        cwd: Path,
        lim: Limits,
        stdin: bytes,
        path: Sequence[str],
        env: dict[str, str] | None = None,
    ) -> RunResult:
        argv = [sys.executable, "-I", "-B", str(CHILD), lim.for_child(path), *tail]
        argv = self.wrap(argv) if self.wrap else argv
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.concurrency)
        async with self._limiter:
            return await self._spawn(argv, cwd, lim, stdin, env)

    async def _spawn(
        self,
        argv: list[str],
        cwd: Path,
        lim: Limits,
        stdin: bytes,
        env: dict[str, str] | None = None,
    ) -> RunResult:
        started = time.perf_counter()
        if self._stopped:
            return RunResult(Outcome.STOPPED, None, "", "", 0.0, "the sandbox pool was stopped")
        try:
            proc = await anyio.open_process(
                argv, cwd=cwd, env=self.environment(cwd, env), start_new_session=True
            )
        except OSError as e:
            return RunResult(Outcome.SPAWN_ERROR, None, "", "", 0.0, f"cannot start: {e}")
        self._live.add(proc.pid)
        out, err = _Capture(lim.output_bytes), _Capture(lim.output_bytes)
        outcome, reason = Outcome.OK, ""
        try:
            with anyio.move_on_after(lim.timeout_s) as scope:
                outcome, reason = await self._communicate(proc, stdin, out, err)
            if scope.cancelled_caught:
                outcome, reason = Outcome.TIMEOUT, f"timed out after {lim.timeout_s:g} s"
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish(proc)
        code = proc.returncode
        if self._stopped and outcome == Outcome.OK and code != 0:
            outcome, reason = Outcome.STOPPED, "the sandbox pool was stopped"
        elif outcome == Outcome.OK and code != 0:
            outcome, reason = Outcome.EXIT, _exit_reason(code)
        ms = (time.perf_counter() - started) * 1000
        return RunResult(outcome, code, out.text(), err.text(), ms, reason)

    async def _communicate(
        self, proc: Process, stdin: bytes, out: _Capture, err: _Capture
    ) -> tuple[Outcome, str]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_feed, proc, stdin)
            assert proc.stdout is not None and proc.stderr is not None
            tg.start_soon(_drain, proc.stdout, out, tg.cancel_scope)
            tg.start_soon(_drain, proc.stderr, err, tg.cancel_scope)
            await proc.wait()
            # the leader is done: a child it left behind would hold the pipes open forever
            kill_group(proc.pid)
        if out.over or err.over:
            return Outcome.OUTPUT_LIMIT, f"printed more than {out.limit} bytes"
        return Outcome.OK, ""

    async def _finish(self, proc: Process) -> None:
        """Kill the child's whole group (also after a normal exit), reap it, sweep the rest,
        then read the pipes to their end: asyncio closes a process's transport only once
        both pipes saw EOF, and one still open when the loop ends is an unraisable error."""
        kill_group(proc.pid)
        await proc.wait()
        sweep_group(proc.pid)
        with anyio.move_on_after(1.0):
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(Exception):
                        while await pipe.receive(65536):
                            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        close_transport(proc)
        await anyio.sleep(0)
        self._live.discard(proc.pid)

    def stop(self) -> None:
        """Kill every running child's group; later runs are refused."""
        self._stopped = True
        for pgid in list(self._live):
            kill_group(pgid)

    def live_groups(self) -> set[int]:
        return set(self._live)

    def with_limits(self, **changes: Any) -> Limits:
        return replace(self.limits, **changes)


async def _feed(proc: Process, data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        if data:
            await proc.stdin.send(data)
    with contextlib.suppress(Exception):
        await proc.stdin.aclose()


async def _drain(stream: ByteReceiveStream, capture: _Capture, scope: anyio.CancelScope) -> None:
    """Keep at most `limit` bytes; more than that cancels the run (the group is then killed)."""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            chunk = await stream.receive(65536)
            capture.size += len(chunk)
            if capture.size > capture.limit:
                capture.over = True
                scope.cancel()
                return
            capture.chunks.append(chunk)


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"killed by {name}" + (" (CPU limit)" if name == "SIGXCPU" else "")
    return f"exit code {code}"


def close_transport(proc: Process) -> None:
    """Close the asyncio subprocess transport now, while its loop runs. A grandchild that
    left the group with setsid() keeps a pipe end open, so the transport would stay open
    until garbage collection, after the loop closed: one "Event loop is closed" traceback
    per such call at exit. No-op on other backends."""
    transport = getattr(getattr(proc, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):  # PermissionError re-killing a setuid child
            close()


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def group_members(pgid: int) -> list[int]:
    """Pids whose process group is `pgid` (from /proc; empty where there is none)."""
    if not _group_exists(pgid):
        return []  # the common case, answered without reading every process's stat (25 ms)
    members = []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _group_exists(pgid: int) -> bool:
    """Whether any process (a zombie included) is in group `pgid`: signal 0 checks, sends
    nothing."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal: let /proc say
    return True


def sweep_group(pgid: int) -> None:
    """Kill until no live member is left: a fork bomb can fork between two kills."""
    for _ in range(SWEEP_TRIES):
        if not group_members(pgid):
            return
        kill_group(pgid)
        time.sleep(0.005)
