"""ToolRuntime: the declared tools of one benchmark for one session (docs/tools.md).

Started lazily by the first rollout that needs it (Python tool schemas read in children,
MCP servers started and listed), then shared by every rollout of the session; `close()` stops
the servers and kills whatever still runs. Per rollout (question, branch) it keeps a private
working folder (a fresh fixture copy when the question has one), which tools the rollout has
called (faults hit first calls only) and the sealed files' hashes; `finish` judges the final
state and removes the folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from loguru import logger

from app.harness.tools import faults as fault_mod
from app.harness.tools import fixtures, python_tools, replay
from app.harness.tools.mcp_tools import McpServer
from app.harness.tools.result import ToolResult, ToolUnavailable, argument_error, checked_spec
from app.harness.tools.sandbox import Limits, SandboxPool
from app.harness.tools.spec import (
    BUILT_IN,
    McpTool,
    PythonTool,
    ReplayTool,
    ToolDecl,
    ToolTables,
    check_questions,
    declared_for,
    inside,
    parse_tables,
    with_python,
)
from app.secrets import scrub
from core.types import Question, ToolSpec


@dataclass
class _Rollout:
    workdir: Path
    called: set[str] = field(default_factory=set)
    fixture_hash: str = ""
    sealed_before: dict[str, str] = field(default_factory=dict)
    reset_ms: float = 0.0
    reset: str = ""  # "copy" (a new copy) or "restore" (a used copy with its changes undone)
    fresh: fixtures.FreshCopy | None = None  # the copy's entries when it was handed out


class ToolRuntime:
    def __init__(
        self,
        tables: ToolTables,
        bench_root: Path,
        root: Path,
        *,
        concurrency: int = 4,
        limits: Limits = Limits(),
        reset_method: fixtures.ResetMethod = fixtures.ResetMethod.COPY,
    ) -> None:
        if reset_method not in fixtures.SAFE_METHODS:
            raise ValueError(f"reset method {reset_method} shares bytes with the fixture")
        self.tables = tables
        self.bench_root = bench_root
        self.root = root
        self.pool = SandboxPool(root / "sandbox", concurrency=concurrency, limits=limits)
        self.reset_method = reset_method
        self.unavailable: dict[str, str] = {}  # declared entry -> why it is not offered
        self._specs: dict[str, list[ToolSpec]] = {}  # declared entry -> its agent tools
        self._route: dict[str, tuple[ToolDecl, ToolSpec]] = {}  # agent tool -> entry, spec
        self._servers: dict[str, McpServer] = {}
        self._recordings: dict[str, replay.Recording] = {}  # replay entry -> its answers
        self._masters: dict[str, tuple[str, Path]] = {}
        # used fixture copies waiting to be restored for the next rollout, per fixture
        self._spare: dict[str, list[tuple[Path, fixtures.FreshCopy | None]]] = {}
        self._slots = 0
        self._seals: dict[str, dict[str, str]] = {}  # fixture -> its sealed files' hashes
        self._started = False
        self._lock: anyio.Lock | None = None

    @classmethod
    def for_benchmark(
        cls,
        tool_tables: dict[str, Any],
        questions: Sequence[Question],
        bench_root: Path,
        root: Path,
        **kwargs: Any,
    ) -> ToolRuntime | None:
        """None when the benchmark declares no tools and no fixtures."""
        if not tool_tables:
            return None
        tables = parse_tables(tool_tables, bench_root)
        check_questions(tables, tuple(questions), bench_root / "questions.jsonl")
        if not tables.tools and not tables.fixtures:
            return None
        return cls(tables, bench_root, root, **kwargs)

    # --- start and stop ---

    async def ready(self) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if not self._started:
                await self._start()
                self._started = True

    async def _start(self) -> None:
        """Read every entry's tools at once (children and servers start in parallel), then
        route them in declaration order, so which duplicate wins does not depend on timing."""
        found: dict[str, list[ToolSpec] | str] = {}

        async def describe(decl: ToolDecl) -> None:
            try:
                found[decl.name] = await self._describe(decl)
            except ToolUnavailable as e:
                found[decl.name] = str(e)

        async with anyio.create_task_group() as tg:
            for decl in self.tables.tools:
                tg.start_soon(describe, decl)
        for decl in self.tables.tools:
            specs = found[decl.name]
            if isinstance(specs, str):
                self.unavailable[decl.name] = specs
                logger.warning("tool not offered: {}", specs)
                continue
            kept = []
            for spec in specs:
                if spec.name in self._route or spec.name in BUILT_IN:
                    self.unavailable[decl.name] = f"tool name {spec.name!r} is offered twice"
                    continue
                self._route[spec.name] = (decl, spec)
                kept.append(spec)
            self._specs[decl.name] = kept

    async def _describe(self, decl: ToolDecl) -> list[ToolSpec]:
        if isinstance(decl, ReplayTool):
            path = inside(self.bench_root, decl.recordings)
            self._recordings[decl.name] = await anyio.to_thread.run_sync(
                replay.load, path, {decl.name}
            )
            description = decl.description or f"Tool {decl.name} (answers recorded earlier)."
            schema = decl.parameters or {"type": "object"}
            return [checked_spec(decl.name, description, schema)]
        if isinstance(decl, PythonTool):
            scratch = self.pool.workdir("schemas")
            return [await python_tools.describe(decl, self.bench_root, self.pool, scratch)]
        server = McpServer(self._resolved(decl), self.pool.workdir(f"mcp-{decl.name}"))
        self._servers[decl.name] = server
        specs: list[ToolSpec] = await anyio.to_thread.run_sync(server.start)
        return specs

    def _resolved(self, decl: McpTool) -> McpTool:
        """Arguments naming a file of the benchmark folder become absolute paths (the server
        runs in its own folder)."""
        # not resolve(): a virtual environment's python is a link that must stay one
        command = [
            str(self.bench_root.absolute() / a)
            if not Path(a).is_absolute() and (self.bench_root / a).is_file()
            else a
            for a in with_python(decl.command)
        ]
        return decl.model_copy(update={"command": command})

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self.pool.stop()
        shutil.rmtree(self.pool.root, ignore_errors=True)

    # --- what a question gets ---

    def specs_for(self, question: Question) -> list[ToolSpec]:
        return [s for d in declared_for(self.tables, question) for s in self._specs.get(d.name, [])]

    def specs_blocking(self, question: Question) -> list[ToolSpec]:
        """`specs_for` from outside an event loop (an export): starts the runtime first."""
        if not self._started:
            anyio.run(self.ready)
        return self.specs_for(question)

    def offered(self, entry: str) -> list[ToolSpec]:
        """The agent tools a declared entry offers (none when it is unavailable)."""
        return list(self._specs.get(entry, []))

    def owns(self, name: str) -> bool:
        return name in self._route

    def rollout(self, question: Question, branch: int) -> ToolRollout:
        """One rollout's view of the tools: its own folder, first calls and seal. Two
        rollouts of the same question and branch (a gate's baseline and candidate) running at
        once get two of these, so they never share a folder."""
        return ToolRollout(self, question, branch)

    async def _open(self, question: Question) -> _Rollout:
        spare = self._spare.get(question.fixture) if question.fixture else None
        if spare:  # a used copy of the same fixture: only its changes are undone
            workdir, fresh = spare.pop()
        else:
            self._slots += 1
            workdir, fresh = self.pool.root / "rollouts" / str(self._slots), None
        state = _Rollout(workdir, fresh=fresh)
        # copies and hashes are file I/O: off the event loop, so other rollouts go on
        await anyio.to_thread.run_sync(self._prepare, question, state)
        return state

    def _prepare(self, question: Question, state: _Rollout) -> None:
        if not question.fixture:
            state.workdir.mkdir(parents=True, exist_ok=True)
            return
        fixture = self.tables.fixtures[question.fixture]
        address, master = self._master(question.fixture)
        state.fixture_hash = address
        state.sealed_before = self._sealed(question.fixture, master, fixture.sealed)
        if state.fresh is not None:
            try:
                state.reset_ms, state.fresh, _ = fixtures.restore(
                    master, state.workdir, state.fresh
                )
                state.reset = "restore"
                return
            except OSError:  # e.g. a folder the tool made unreadable: copy anew
                pass
        state.reset_ms, state.fresh = fixtures.fresh_copy(master, state.workdir, self.reset_method)
        state.reset = "copy"

    def _sealed(self, name: str, master: Path, patterns: list[str]) -> dict[str, str]:
        if name not in self._seals:
            self._seals[name] = fixtures.file_hashes(master, patterns)
        return self._seals[name]

    def _master(self, name: str) -> tuple[str, Path]:
        if name not in self._masters:
            source = inside(self.bench_root, self.tables.fixtures[name].dir)
            self._masters[name] = fixtures.materialize(source, self.root / "fixtures")
        return self._masters[name]

    async def _run(
        self,
        decl: ToolDecl,
        name: str,
        arguments: dict[str, Any],
        workdir: Path,
        question_id: str = "",
    ) -> ToolResult:
        if isinstance(decl, ReplayTool):
            return self._recordings[decl.name].answer(question_id, name, arguments)
        if isinstance(decl, PythonTool):
            return await python_tools.call(decl, self.bench_root, self.pool, arguments, workdir)
        return await self._servers[decl.name].call(name, arguments, decl.timeout_s)

    async def _close_rollout(self, question: Question, state: _Rollout) -> None:
        if question.fixture:  # kept, to be restored for the next rollout of the fixture
            self._spare.setdefault(question.fixture, []).append((state.workdir, state.fresh))
        else:
            await anyio.to_thread.run_sync(_remove, state.workdir)


class ToolRollout:
    """The declared tools as one rollout (question, branch) sees them."""

    def __init__(self, runtime: ToolRuntime, question: Question, branch: int) -> None:
        self.runtime = runtime
        self.question = question
        self.branch = branch
        self._state: _Rollout | None = None
        self._finished = False

    async def _ensure(self) -> _Rollout:
        if self._state is None:
            self._state = await self.runtime._open(self.question)
        return self._state

    async def call(self, turn: int, name: str, arguments: Any) -> ToolResult:
        rt, q = self.runtime, self.question
        if name not in {s.name for s in rt.specs_for(q)}:
            return ToolResult(False, f"error: unknown tool {name[:80]!r}", "not declared")
        decl, spec = rt._route[name]
        problem = argument_error(spec, arguments)
        if problem:
            return ToolResult(False, f"error: {problem}", problem)
        state = await self._ensure()
        first = name not in state.called
        state.called.add(name)
        kind = (
            fault_mod.draw(rt.tables.faults, q.question_id, self.branch, turn, name)
            if first
            else None
        )
        if kind is not None and kind not in fault_mod.RUNS_THE_TOOL:
            return fault_mod.without_running(kind, decl.timeout_s)
        result = scrubbed(await rt._run(decl, name, arguments, state.workdir, q.question_id))
        return result if kind is None else fault_mod.spoil(kind, result)

    async def finish(self) -> dict[str, Any]:
        """What the verdict records: unavailable tools, and for a fixture the oracle's and the
        seal's decision on the final state (`fixture_passed`). Call once, at the end."""
        rt, q = self.runtime, self.question
        out: dict[str, Any] = {}
        missing = {
            d.name: rt.unavailable[d.name]
            for d in declared_for(rt.tables, q)
            if d.name in rt.unavailable
        }
        if missing:
            out["tools_unavailable"] = missing
        out["tools_offered"] = [s.name for s in rt.specs_for(q)]
        if q.fixture:
            state = await self._ensure()  # never called: the untouched copy is judged
            fixture = rt.tables.fixtures[q.fixture]
            changed = await anyio.to_thread.run_sync(
                fixtures.tampered, state.sealed_before, state.workdir, fixture.sealed
            )
            verdict = await fixtures.oracle(fixture, rt.bench_root, state.workdir, rt.pool)
            out["fixture"] = {
                "name": q.fixture,
                "hash": state.fixture_hash,
                "reset": state.reset,
                "reset_ms": round(state.reset_ms, 2),
                "oracle_passed": verdict.passed,
                "oracle": verdict.reason,
                "tampered": changed,
            }
            out["fixture_passed"] = verdict.passed and not changed
            if changed:
                out["fixture"]["reason"] = "tampered"
        if self._state is not None and not self._finished:
            self._finished = True
            await rt._close_rollout(q, self._state)
        return out

    @property
    def workdir(self) -> Path | None:
        return self._state.workdir if self._state is not None else None


def scrubbed(result: ToolResult) -> ToolResult:
    """The harness's secret values taken out of what a tool returns, before the model sees it
    or the log stores it: a tool can read the harness's environment through /proc/<ppid>/environ
    (docs/checkers.md#what-user-code-can-reach)."""
    output, error = scrub(result.output), scrub(result.error)
    if output == result.output and error == result.error:
        return result
    return replace(result, output=output, error=error)


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
