"""Fan-out: one coroutine per item, run concurrently, results in item order."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable
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
    The first exception cancels the other tasks and propagates as anyio raises it (in an
    ExceptionGroup). Model calls inside inherit the caller's context (its run id).
    """
    items = list(items)
    results: dict[int, R] = {}

    async def run(index: int, item: T) -> None:
        async with limiter if limiter is not None else contextlib.nullcontext():
            results[index] = await work(item)

    async with anyio.create_task_group() as tg:
        for index, item in enumerate(items):
            tg.start_soon(run, index, item)
    return [results[index] for index in range(len(items))]
