"""Fan-out: one coroutine per item, run concurrently, results in item order."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TypeVar

import anyio

T = TypeVar("T")
R = TypeVar("R")


async def fan_out(
    work: Callable[[T], Awaitable[R]],
    items: Iterable[T],
    *,
    limiter: anyio.CapacityLimiter | None = None,
) -> list[R]:
    """`work(item)` for every item in one task group; the results in the order of `items`.

    Tasks start in item order and, with a `limiter` (which several fan-outs may share), each
    holds a slot for its whole run, so which item gets a slot first is the same on every run.
    The first exception cancels the other tasks and propagates itself, not wrapped in the
    task group's ExceptionGroup, so callers catch what a task raised (`except BudgetExceeded`).
    Model calls inside inherit the caller's context (its run id).
    """
    items = list(items)
    results: dict[int, R] = {}

    async def run(index: int, item: T) -> None:
        async with limiter if limiter is not None else contextlib.nullcontext():
            results[index] = await work(item)

    try:
        async with anyio.create_task_group() as tg:
            for index, item in enumerate(items):
                tg.start_soon(run, index, item)
    except BaseExceptionGroup as group:
        raise first_failure(group) from None
    return [results[index] for index in range(len(items))]


def first_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception to raise for a failed task group: a stop (Ctrl-C, SystemExit) before any
    error, since the caller must record a stop as a stop; else the first error; a cancellation
    only when nothing else is there. Nested groups (a fan-out inside a task) are searched."""
    leaves = list(_leaves(group))
    cancelled = anyio.get_cancelled_exc_class()
    stops = [e for e in leaves if not isinstance(e, Exception | cancelled)]
    errors = [e for e in leaves if isinstance(e, Exception)]
    return next(iter(stops + errors + leaves), group)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
