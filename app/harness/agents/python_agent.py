"""A Python function as the agent: `module:function`, loaded as custom checkers load theirs
(app/harness/rollouts/custom_checkers.py `load_user_function`), or `path/to/agent.py:function`,
a file loaded by its path (a folder such as `examples/agents/openai-agents-sdk/` is no
importable package). The config makes a relative file path absolute when it is read
(app/harness/workspace/config.py `anchor_agent_file`).

The function receives the typed task, skills version and endpoint
(app/harness/agents/protocol.py) and returns the answer as a string, or an `AgentOutput`
with the answer and, optionally, its own trajectory (a `core.traces.Trace`); it may be a
coroutine function. It runs in this process: it is the user's own code, trusted like a
checker's import, and unlike a command agent it is not isolated (it can see this process's
environment). An exception, a time-out or a return value that is no answer is one
`AgentResult` with its `Failure`. A synchronous function runs in a worker thread, which a
time-out abandons rather than kills (Python cannot kill a thread): for hard isolation run it
as a command agent (`python -m ...`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from app.errors import UserError
from app.harness.agents.protocol import (
    AgentResult,
    AgentTask,
    FailureKind,
    ModelEndpoint,
    SkillsVersion,
    clean_answer,
    empty_trace,
    failed,
)
from app.harness.rollouts.custom_checkers import load_user_function
from app.sanitize import visible
from app.secrets import scrub
from core.traces import Trace

DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class AgentOutput:
    """What an agent function may return instead of a bare answer."""

    answer: str
    trace: Trace | None = None


class PythonAgent:
    """`Agent` for `module:function` (raises `UserError` at once if it cannot be loaded)."""

    def __init__(self, target: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.target = target
        self.function = load_agent_function(target)
        self.timeout_s = timeout_s

    async def run(
        self, task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint
    ) -> AgentResult:
        started = time.perf_counter()
        value: Any = None
        with anyio.move_on_after(self.timeout_s) as scope:
            try:
                value = await self._call(task, skills, endpoint)
            except Exception as e:  # the agent's own failure is its result, never the run's
                detail = f"{type(e).__name__}: {visible(scrub(str(e)))}"
                return failed(FailureKind.CRASH, detail, latency_s=_since(started))
        if scope.cancelled_caught:
            detail = f"timed out after {self.timeout_s:g} s"
            return failed(FailureKind.TIMEOUT, detail, latency_s=_since(started))
        return interpret(value, _since(started))

    async def _call(self, task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint) -> Any:
        if inspect.iscoroutinefunction(self.function):
            return await self.function(task, skills, endpoint)
        call = functools.partial(self.function, task, skills, endpoint)
        value = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        # a plain function may hand back a coroutine (a partial of an async one, a decorator)
        return await value if inspect.isawaitable(value) else value


def is_file_target(target: str) -> bool:
    """`path/to/agent.py:function` rather than `module:function`."""
    return target.rpartition(":")[0].endswith(".py")


def load_agent_function(target: str) -> Callable[..., Any]:
    """The agent's function: `module:function` imported, or `file.py:function` loaded from
    that file under a module name of its own (one per path, so two agents named `agent.py`
    do not collide). A bad one is one `UserError` naming the key and the file."""
    if not is_file_target(target):
        return load_user_function(target, "agent_function")
    file_name, _, attr = target.rpartition(":")
    path = Path(file_name)
    where = f"agent_function {target!r}"
    if not path.is_absolute():  # the config anchors it; a caller that did not gets the cwd
        path = Path.cwd() / path
    if not path.is_file():
        raise UserError(f"{where}: no file {path}")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    module_name = f"skill_trainer_agent_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise UserError(f"{where}: {path} cannot be loaded as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # before running it, as an import does
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # an error in user code names the file, one line
            del sys.modules[module_name]
            detail = visible(scrub(str(e)))[:300]
            raise UserError(f"{where}: cannot load {path} ({type(e).__name__}: {detail})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"{where}: {path} has no function {attr!r}")
    function: Callable[..., Any] = fn
    return function


def interpret(value: Any, latency_s: float) -> AgentResult:
    """The function's return value as a result: a string or an `AgentOutput`, else garbage."""
    trace: Trace | None = None
    if isinstance(value, AgentOutput):
        value, trace = value.answer, value.trace
    if not isinstance(value, str):
        detail = f"returned {type(value).__name__}, not a string or AgentOutput"
        return failed(FailureKind.GARBAGE, detail, latency_s=latency_s)
    if trace is not None and not isinstance(trace, Trace):
        detail = f"AgentOutput.trace is {type(trace).__name__}, not a core.traces.Trace"
        return failed(FailureKind.GARBAGE, detail, latency_s=latency_s)
    answer, why = clean_answer(value)
    if answer is None:
        return failed(FailureKind.GARBAGE, why, latency_s=latency_s, trace=trace)
    return AgentResult(answer, trace or empty_trace(), latency_s=latency_s)


def _since(started: float) -> float:
    return time.perf_counter() - started
