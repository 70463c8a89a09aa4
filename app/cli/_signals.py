"""SIGTERM stops a command the way Ctrl-C does (runs marked stopped, locks released), and the
process's signal state is put back afterwards (`signals_stop_the_command`)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from app.errors import STOP_SIGNAL, Stopped


@contextlib.contextmanager
def signals_stop_the_command() -> Iterator[None]:
    """SIGTERM stops the command like Ctrl-C; the process's signal state is restored after."""
    sigint = signal.getsignal(signal.SIGINT)
    previous = _stop_on_sigterm()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if sigint is signal.SIG_IGN:  # ignored again before unblocking: a pending Ctrl-C is dropped
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


Handler = Callable[[int, FrameType | None], Any] | int | None


def _stop_on_sigterm() -> Handler:
    """SIGTERM stops a command the way Ctrl-C does: runs marked stopped, locks released."""
    sigint_ignored = _keep_sigint_ignored_but_raisable()

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        STOP_SIGNAL["reason"] = "SIGTERM"
        if sigint_ignored:
            _drop_pending_sigint()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            # inside an event loop: its own SIGINT handler cancels the main task and raises
            # KeyboardInterrupt once every task has unwound (raising here would leave a task
            # holding an exception nobody retrieves, and a traceback on stderr)
            signal.raise_signal(signal.SIGINT)
            return
        raise Stopped("SIGTERM")

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding): leave signals alone
        return signal.getsignal(signal.SIGTERM)


def _keep_sigint_ignored_but_raisable() -> bool:
    """A shell script's `cmd &` starts the command with SIGINT ignored, and then the event
    loop installs no SIGINT handler, so the SIGTERM handler's raise_signal(SIGINT) would do
    nothing and the run would go on. Give SIGINT its default handler (the loop then installs
    its own) but keep it blocked, so Ctrl-C at the terminal still does nothing; the SIGTERM
    handler unblocks it just before raising it. Returns whether SIGINT was ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread (an embedding): leave signals alone
        return False
    return True


def _drop_pending_sigint() -> None:
    """A Ctrl-C that arrived while SIGINT was blocked waits to be delivered on unblocking;
    with the one the SIGTERM handler raises, the loop would see two interrupts, and its
    second raises KeyboardInterrupt inside whatever task runs (a traceback at exit).
    Setting SIGINT to SIG_IGN discards a pending one (POSIX); the handler is then put back."""
    if signal.SIGINT in signal.sigpending():
        current = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGINT, current)
