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
- the worker's stdout/stderr go to /dev/null and the value is coerced to a verdict inside the
  worker (reason cut to core.checkers.REASON_MAX), so what comes back over the pipe is a few
  hundred bytes whatever the checker printed or returned;
- a worker that dies mid-call (exit, crash) is a verdict naming its exit code.
Why a persistent worker rather than a process per call: measured on a 2-core machine
(bench/judged.py prints `checker.call_ms` and `checker.spawn_call_ms`), a call to a warm
worker costs 0.07-0.25 ms, a fresh `spawn` interpreter per call 0.46-0.91 s: a benchmark of a
few hundred questions checked several times per step would spend minutes starting them.
Workers use the `spawn` start method: the training process runs threads (anyio, sqlite), and
`fork` from a threaded process can deadlock in the child.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable
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
    return fn


# --------------------------------------------------------------------------- the worker


def _serve(conn: Connection, spec: str, cwd_path: list[str]) -> None:
    """The worker's loop: load `spec`, then answer (question, prediction) requests until the
    pipe closes. Runs in the child process."""
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # a checker that prints megabytes prints them nowhere
    os.dup2(devnull, 2)
    sys.path[:0] = [p for p in cwd_path if p not in sys.path]
    try:
        fn = load_user_function(spec, "checker")
    except Exception as e:
        conn.send(("load_error", str(e)[:REASON_MAX]))
        return
    conn.send(("ready", ""))
    while True:
        try:
            question, prediction = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = coerce_check_value(fn(question, prediction))
        except BaseException as e:  # user code: its failure is a verdict (SystemExit too)
            result = CheckResult.error(f"raised {type(e).__name__}: {str(e)[:300]}")
        conn.send(("result", result))


class _Worker:
    def __init__(self, spec: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_serve, args=(child, spec, [os.getcwd()]), daemon=True, name="checker"
        )
        self.proc.start()
        child.close()
        if not self.conn.poll(START_TIMEOUT_S):
            self.kill()
            raise UserError(f"checker {spec}: its worker did not start in {START_TIMEOUT_S:.0f}s")
        try:
            kind, text = self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            raise UserError(f"checker {spec}: its worker died while loading it") from None
        if kind != "ready":
            self.kill()
            raise UserError(text)

    def call(self, question: Question, prediction: str, timeout_s: float) -> CheckResult:
        try:
            self.conn.send((question, prediction))
            if not self.conn.poll(timeout_s):
                self.kill()
                return CheckResult.error(f"timed out after {timeout_s:g}s")
            kind, result = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.proc.join(1.0)
            code = self.proc.exitcode
            self.kill()
            return CheckResult.error(f"checker process died (exit code {code})")
        if kind != "result" or not isinstance(result, CheckResult):
            self.kill()
            return CheckResult.error("checker process sent no verdict")
        return result

    @property
    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5.0)


class CheckerPool:
    """Up to `workers` worker processes per checker name, started lazily, reused across
    calls, replaced when one is killed. Thread-safe: calls come from worker threads."""

    def __init__(self, workers: int = 2, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.size = max(1, workers)
        self.timeout_s = timeout_s
        self._idle: dict[str, queue.SimpleQueue[_Worker]] = {}
        self._started: dict[str, int] = {}
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots: dict[str, threading.Semaphore] = {}
        self.closed = False

    def check(self, spec: str, question: Question, prediction: str) -> CheckResult:
        """One verdict; a load error of the checker itself is a UserError (bad input)."""
        with self._lock:
            if self.closed:
                raise RuntimeError("checker pool closed")
            slots = self._slots.setdefault(spec, threading.Semaphore(self.size))
            idle = self._idle.setdefault(spec, queue.SimpleQueue())
        with slots:
            try:
                worker = idle.get_nowait()
            except queue.Empty:
                worker = self._start(spec)
            result = worker.call(question, prediction, self.timeout_s)
            if worker.alive:
                idle.put(worker)
            return result

    def _start(self, spec: str) -> _Worker:
        worker = _Worker(spec)
        with self._lock:
            self._all.append(worker)
            self._all = [w for w in self._all if w.alive]
            self._started[spec] = self._started.get(spec, 0) + 1
        return worker

    def close(self) -> None:
        with self._lock:
            self.closed = True
            workers, self._all = self._all, []
        for worker in workers:
            worker.kill()


def check_status_counts(results: list[CheckResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


__all__ = ["CheckResult", "CheckStatus", "CheckerPool", "load_user_function"]
