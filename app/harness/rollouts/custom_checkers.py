"""User code that judges answers: `module:function` checkers in training, run isolated.

Loading (`load_user_function`) is shared with the fork verifiers
(app/harness/data/verifiers.py): the same `module:function` naming, the same one-line errors.

A training checker `f(question: Question, prediction: str)` returns a bool, a score in
[0, 1] or a dict {"score" | "ok", "reason"} (core.checkers.coerce_check_value). It runs in a
worker process (`CheckerPool`), never in the training process, because user code can do
anything: raise, hang, print megabytes, exit, segfault, return NaN or 7. Each of those is ONE
`check_error` verdict with its reason (the prediction is a failure, score 0), never a dead
run:
- a per-call timeout (`checker_timeout_s`): past it the worker is killed and a fresh one
  started for the next call;
- the worker's stdout/stderr go to /dev/null and the value comes back as bounded JSON
  (`plain`: strings cut, anything else reduced to its type's name; at most REPLY_MAX_BYTES),
  then is coerced to a verdict here (reason cut to core.checkers.REASON_MAX);
- a worker that loaded the checker once but takes more than `start_timeout_s` to start again
  is a check error of that one call;
- a worker that dies mid-call (exit, crash) is a verdict naming its exit code.
Why a persistent worker rather than a process per call: measured on a 2-core machine
(bench/judged.py prints `checker.call_ms` and `checker.spawn_call_ms`), a call to a warm
worker costs 0.05-0.25 ms, a fresh interpreter per call 0.13-0.17 s: a benchmark of a few
hundred questions checked several times per step would spend minutes starting them.
A worker is a fresh interpreter (`python -I`, never a fork of the threaded training process)
started in its own process group with an allow-listed environment (`ENV_ALLOW`, LC_* and the
config's `checker_env`: no API key of the harness's), so every kill (timeout, failed start,
`close`) is of its whole process group, and what the user's code started goes with it. The
same pool runs fork verifiers and rank rewards (app/harness/data/verifiers.py); what user
code can still reach is in docs/checkers.md#what-user-code-can-reach.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from app.errors import UserError
from app.secrets import scrub
from core.checkers import REASON_MAX, CheckResult, CheckStatus, coerce_check_value
from core.types import Question

DEFAULT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 60.0  # importing the user's module in a fresh interpreter


def load_user_function(name: str, what: str) -> Callable[..., Any]:
    """`module:function` imported and checked callable; `what` names the option in errors
    (`--verifier`, `checker`)."""
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"{what} {name!r}: name a function as module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # an import error in user code names the function, one line
        raise UserError(
            f"{what} {name}: cannot import {module_name} ({type(e).__name__}: "
            f"{scrub(str(e))[:300]})"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"{what} {name}: {module_name} has no function {attr!r}")
    function: Callable[..., Any] = fn
    return function


# --------------------------------------------------------------------------- the worker

# Who the worker is, for reasons and errors: a training checker, a fork verifier
# (app/harness/data/verifiers.py) or a rank reward (app/harness/data/rank.py).
KINDS = ("checker", "verifier", "reward")
# What the worker may send back: a verdict is a few hundred bytes; more is a hostile worker.
REPLY_MAX_BYTES = 1 << 20
# Strings inside a returned value are cut to this before they cross the pipe.
VALUE_TEXT_MAX = 2 * REASON_MAX
# The environment user code gets: these names, the user's `checker_env`, and nothing else of
# the harness's (its API keys stay out). LC_* names are kept too (`allowed_environment`).
ENV_ALLOW = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "SYSTEMROOT",
    "USER",
    "LOGNAME",
)
_BOOT = (
    "import json,sys;sys.path[:0]=json.loads(sys.argv[1]);"
    "from app.harness.rollouts.custom_checkers import serve;serve(int(sys.argv[2]))"
)


def allowed_environment(extra: Sequence[str] = ()) -> dict[str, str]:
    """The harness's environment cut to `ENV_ALLOW`, LC_* and `extra` names."""
    names = {*ENV_ALLOW, *extra}
    return {k: v for k, v in os.environ.items() if k in names or k.startswith("LC_")}


def plain(value: Any, depth: int = 0) -> Any:
    """A user function's return value as bounded JSON: numbers, bools, None, cut strings,
    small dicts and dataclasses of those; anything else becomes {"__type__": its type name},
    so the caller can say what came back without the value crossing the pipe."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value[:VALUE_TEXT_MAX]
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and depth == 0:
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict) and depth == 0:
        return {str(k)[:100]: plain(v, 1) for k, v in list(value.items())[:20]}
    return {"__type__": type(value).__name__}


def serve(fd: int) -> None:
    """The worker's loop (runs in the child, `python -I -c _BOOT`): load the function the
    parent names, then answer argument tuples until the socket closes. stdin, stdout and
    stderr are /dev/null; replies are JSON (the parent never unpickles what user code could
    have written)."""
    conn = Connection(fd)
    spec, what, cwd_path = conn.recv()
    sys.path[:0] = [p for p in cwd_path if p not in sys.path]
    try:
        fn = load_user_function(spec, what)
    except Exception as e:
        conn.send_bytes(_reply("load_error", str(e)[:REASON_MAX]))
        return
    # what the caller may read off the function without importing it: a declared cost
    # (app/harness/data/curation.py reads a verifier's `cost_s`)
    conn.send_bytes(_reply("ready", {"cost_s": plain(getattr(fn, "cost_s", None), 1)}))
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = _reply("value", plain(fn(*args)))
        except BaseException as e:  # user code: its failure is a verdict (SystemExit too)
            reply = _reply("raised", f"raised {type(e).__name__}: {str(e)[:300]}")
        conn.send_bytes(reply)


def _reply(kind: str, value: Any) -> bytes:
    return json.dumps([kind, value]).encode()


def _scrubbed(value: Any) -> Any:
    """`scrub` on every string of a plain value (`plain`: at most one level of dict)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    return value


class _StartTimeout(Exception):
    """The worker did not load the function in time (a slow import, a hang)."""


@dataclass(frozen=True)
class UserCall:
    """One call's outcome: `value` (plain JSON, see `plain`) or a `failure` reason."""

    value: Any = None
    failure: str = ""


class _Worker:
    """One worker process in its own process group: every kill is of the whole group, so
    what the user's code started (a subprocess, a pool) goes with it."""

    def __init__(self, spec: str, what: str, env: dict[str, str], start_timeout_s: float) -> None:
        self.what = what
        self.killed = False
        parent, child = socket.socketpair()
        try:
            self.proc = subprocess.Popen(  # noqa: S603 -- our interpreter, our boot line
                [
                    sys.executable,
                    "-I",
                    "-B",
                    "-c",
                    _BOOT,
                    json.dumps(sys.path),
                    str(child.fileno()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # a checker that prints megabytes prints them nowhere
                stderr=subprocess.DEVNULL,
                pass_fds=(child.fileno(),),
                env=env,
                # its own group, not its own session: with the kernel's scheduler
                # autogroups (one per session) a worker in a session of its own waits longer
                # to run on a busy machine: 0.25 ms a warm call instead of 0.06 ms, measured
                process_group=0,
            )
        except OSError as e:
            parent.close()
            raise UserError(f"{what} {spec}: cannot start its worker ({e})") from None
        finally:
            child.close()
        self.conn = Connection(parent.detach())
        try:
            self.conn.send((spec, what, [os.getcwd()]))
            if not self.conn.poll(start_timeout_s):
                raise _StartTimeout(f"its worker did not load it in {start_timeout_s:g}s")
            kind, text = self._recv()
        except (EOFError, OSError, ValueError):
            self.kill()
            raise UserError(f"{what} {spec}: its worker died while loading it") from None
        except BaseException:
            self.kill()
            raise
        if kind != "ready":
            self.kill()
            raise UserError(str(text))
        self.info: dict[str, Any] = text if isinstance(text, dict) else {}

    def _recv(self) -> tuple[str, Any]:
        kind, value = json.loads(self.conn.recv_bytes(REPLY_MAX_BYTES))
        return str(kind), value

    def call(self, args: tuple[Any, ...], timeout_s: float) -> UserCall:
        try:
            self.conn.send(args)
            if not self.conn.poll(timeout_s):
                self.kill()
                return UserCall(failure=f"timed out after {timeout_s:g}s")
            kind, value = self._recv()
        except (EOFError, OSError, ValueError):
            code = _exit_code(self.proc)
            self.kill()
            return UserCall(failure=f"{self.what} process died (exit code {code})")
        if kind == "raised":
            return UserCall(failure=str(value))
        if kind != "value":
            self.kill()
            return UserCall(failure=f"{self.what} process sent no verdict")
        return UserCall(value)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL to the worker's process group (also after it exited: its children may
        not have), then reap it."""
        self.killed = True
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5.0)


def _exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(1.0)
    return None


_POOLS: weakref.WeakSet[CheckerPool] = weakref.WeakSet()


@atexit.register
def _close_all_pools() -> None:
    """A run that ends without closing its pool (an error, Ctrl-C) leaves no worker behind."""
    for pool in list(_POOLS):
        pool.close()


class CheckerPool:
    """Up to `workers` worker processes per user function, started lazily, reused across
    calls, replaced when one is killed. Thread-safe: calls come from worker threads.

    A function that does not load (an import error, no such name) is a UserError (bad
    input). A worker that loaded it once but then takes longer than `start_timeout_s` to
    start again is a failure of that one call: the run goes on."""

    def __init__(
        self,
        workers: int = 2,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        *,
        start_timeout_s: float = START_TIMEOUT_S,
        env_allow: Sequence[str] = (),
    ) -> None:
        self.size = max(1, workers)
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.env = allowed_environment(env_allow)
        self._idle: dict[tuple[str, str], queue.SimpleQueue[_Worker]] = {}
        self._loaded: set[tuple[str, str]] = set()
        self._info: dict[tuple[str, str], dict[str, Any]] = {}
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots: dict[tuple[str, str], threading.Semaphore] = {}
        self.closed = False
        _POOLS.add(self)

    def check(self, spec: str, question: Question, prediction: str) -> CheckResult:
        """One verdict; a load error of the checker itself is a UserError (bad input)."""
        outcome = self.call("checker", spec, (question, prediction))
        if outcome.failure:
            return CheckResult.error(outcome.failure)
        return coerce_check_value(outcome.value)

    def load(self, what: str, spec: str) -> dict[str, Any]:
        """Start one worker for `spec` now, so a function that does not load is an error
        before any work (UserError); it is kept for the first call. A function loaded before
        is not loaded again (a second worker would split a stateful function's calls).
        Returns what the worker said of the function (`serve`: its `cost_s`)."""
        key = self._key(what, spec)
        with self._slot(key):
            if key in self._loaded:
                return self._info.get(key, {})
            try:
                worker = self._start(key)
            except _StartTimeout as e:
                raise UserError(f"{what} {spec}: {e}") from None
            self._idle[key].put(worker)
            return worker.info

    def call(self, what: str, spec: str, args: tuple[Any, ...]) -> UserCall:
        """`spec(*args)` in a worker, with the pool's timeout."""
        key = self._key(what, spec)
        with self._slot(key):
            try:
                worker = self._idle[key].get_nowait()
            except queue.Empty:
                try:
                    worker = self._start(key)
                except _StartTimeout as e:
                    if key not in self._loaded:  # never loaded: the function is bad input
                        raise UserError(f"{what} {spec}: {e}") from None
                    return UserCall(failure=f"{what} worker restart: {e}")
            outcome = worker.call(args, self.timeout_s)
            if worker.alive:
                self._idle[key].put(worker)
            else:  # gone on its own: what it started may not be
                worker.kill()
            # user code can read the harness's environment (/proc/<ppid>/environ): its
            # secret values leave what comes back here, before anyone shows or stores it
            return UserCall(_scrubbed(outcome.value), scrub(outcome.failure))

    def _key(self, what: str, spec: str) -> tuple[str, str]:
        with self._lock:
            if self.closed:
                raise RuntimeError("checker pool closed")
            key = (what, spec)
            self._slots.setdefault(key, threading.Semaphore(self.size))
            self._idle.setdefault(key, queue.SimpleQueue())
            return key

    def _slot(self, key: tuple[str, str]) -> threading.Semaphore:
        return self._slots[key]

    def _start(self, key: tuple[str, str]) -> _Worker:
        what, spec = key
        worker = _Worker(spec, what, self.env, self.start_timeout_s)
        with self._lock:
            self._loaded.add(key)
            self._info[key] = worker.info
            self._all = [w for w in self._all if not w.killed]
            self._all.append(worker)
            closed = self.closed
        if closed:  # closed while this one started
            worker.kill()
            raise RuntimeError("checker pool closed")
        return worker

    def live_pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._all if w.alive]

    def close(self) -> None:
        with self._lock:
            self.closed = True
            workers, self._all = self._all, []
        for worker in workers:
            worker.kill()


# --------------------------------------------------------------------------- verifiers, rewards


class UserCodeError(Exception):
    """A pooled user function failed (raised, hung, died): `reason` says how, one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Opaque:
    """What a user function returned when it was no plain value: only its type's name
    crossed the pipe (see `plain`)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


@dataclass(frozen=True)
class PoolSettings:
    workers: int = 2
    timeout_s: float = DEFAULT_TIMEOUT_S
    env_allow: tuple[str, ...] = ()


_shared: dict[str, Any] = {"settings": PoolSettings(), "pool": None}
_shared_lock = threading.Lock()


def configure_user_pool(settings: PoolSettings) -> None:
    """The settings of the pool fork verifiers and rank rewards run in (a Session sets them
    from its config: `checker_workers`, `checker_timeout_s`, `checker_env`)."""
    with _shared_lock:
        old = _shared["pool"]
        if _shared["settings"] == settings:
            return
        _shared["settings"], _shared["pool"] = settings, None
    if old is not None:
        old.close()


def user_pool() -> CheckerPool:
    with _shared_lock:
        pool: CheckerPool | None = _shared["pool"]
        if pool is None or pool.closed:
            s: PoolSettings = _shared["settings"]
            pool = CheckerPool(s.workers, s.timeout_s, env_allow=s.env_allow)
            _shared["pool"] = pool
        return pool


@dataclass(frozen=True)
class PooledFunction:
    """A user `module:function` called in the shared worker pool (`user_pool`): its value
    comes back plain (`plain`; an `Opaque` for anything else); a failure raises
    UserCodeError with its reason."""

    what: str
    spec: str
    cost_s: float | None = None  # the function's own `cost_s`, if a number

    def load(self) -> PooledFunction:
        cost = user_pool().load(self.what, self.spec).get("cost_s")
        if isinstance(cost, bool) or not isinstance(cost, int | float):
            cost = None
        return dataclasses.replace(self, cost_s=cost)

    def __call__(self, *args: Any) -> Any:
        outcome = user_pool().call(self.what, self.spec, args)
        if outcome.failure:
            raise UserCodeError(outcome.failure)
        value = outcome.value
        if isinstance(value, dict) and set(value) == {"__type__"}:
            return Opaque(str(value["__type__"]))
        return value


__all__ = [
    "CheckResult",
    "CheckStatus",
    "CheckerPool",
    "PooledFunction",
    "UserCall",
    "UserCodeError",
    "load_user_function",
]
