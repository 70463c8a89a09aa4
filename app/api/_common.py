"""What every domain module of the API shares: running an async twin from sync code, the
workspace and name-list arguments checked and normalised, and a spent budget reported as
RunFailed. Private to app/api/; callers use the functions the package re-exports."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import anyio

from app import paths
from app.api_args import bad as _bad
from app.errors import RunFailed, UserError
from app.providers.errors import BudgetExceeded

P = ParamSpec("P")
R = TypeVar("R")


def _run_sync(run: Callable[P, Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs) -> R:
    """`run` in an event loop of its own. Inside a running loop none can be started (anyio
    would say only "Already running asyncio"), so the caller is told which twin to await."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running: the normal case
        return anyio.run(functools.partial(run, *args, **kwargs))
    name = run.__name__.removesuffix("_async")
    raise UserError(
        f"{name}() was called inside a running event loop; await {name}_async() instead"
    )


# Argument checks: one line naming the argument, before anything is read or written.
def _workspace(workspace: object) -> Path:
    if isinstance(workspace, str | Path):
        return paths.absolute(workspace)
    raise _bad("workspace", workspace, "a folder's path (str or Path)")


def _task_types(task_types: object) -> list[str] | None:
    """One name may come as a str; names match whole, never as substrings of a str."""
    if task_types is None or isinstance(task_types, str):
        return None if task_types is None else [task_types]
    if isinstance(task_types, list | tuple) and all(isinstance(t, str) for t in task_types):
        return [str(t) for t in task_types]
    raise _bad("task_types", task_types, 'a list of names, e.g. ["dates"]')


@contextlib.contextmanager
def _budget_is_run_failed() -> Iterator[None]:
    """A spent budget ends eval/infer as RunFailed, as it ends train (the runner maps it)."""
    try:
        yield
    except BudgetExceeded as e:
        raise RunFailed(
            f"{e}. The answers so far are logged: raise max_cost_usd and rerun."
        ) from None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _names(label: str, names: object) -> list[str] | None:
    """Ids as a list; one may come as a str (matched whole, never as a substring)."""
    if names is None or isinstance(names, str):
        return None if names is None else [names]
    if isinstance(names, list | tuple) and all(isinstance(n, str) for n in names):
        return [str(n) for n in names]
    raise _bad(label, names, "a list of ids")
