"""The fan-out helper: results in item order, a shared limiter bounds every fan-out using it,
and the first failure cancels the rest."""

from __future__ import annotations

import anyio
import pytest

from core.concurrency import fan_out


def test_results_come_back_in_item_order_whatever_order_the_tasks_finish_in() -> None:
    finished: list[int] = []
    done = {n: anyio.Event() for n in range(6)}
    done[5].set()

    async def last_item_first(n: int) -> int:
        # each task waits for the next item's task to finish: the finish order is 4, 3, ..., 0
        # however the machine schedules them (timed sleeps reorder on a loaded machine)
        await done[n + 1].wait()
        finished.append(n)
        done[n].set()
        return n * n

    async def fan() -> list[int]:
        return await fan_out(last_item_first, range(5))

    results = anyio.run(fan)
    assert finished == [4, 3, 2, 1, 0]
    assert results == [0, 1, 4, 9, 16]


def test_a_shared_limiter_bounds_two_fan_outs_together() -> None:
    running = peak = 0

    async def work(_: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.005)
        running -= 1

    async def two_fan_outs() -> None:
        limiter = anyio.CapacityLimiter(3)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: fan_out(work, range(10), limiter=limiter))
            tg.start_soon(lambda: fan_out(work, range(10), limiter=limiter))

    anyio.run(two_fan_outs)
    assert peak == 3


def test_the_first_failure_cancels_the_other_tasks() -> None:
    finished: list[int] = []

    async def work(n: int) -> int:
        if n == 0:
            raise ValueError("item 0")
        await anyio.sleep(1)
        finished.append(n)
        return n

    with pytest.raises(ValueError, match="item 0"):  # itself, not in an ExceptionGroup
        anyio.run(lambda: fan_out(work, range(4)))
    assert finished == []


def test_a_failure_inside_a_nested_fan_out_arrives_unwrapped() -> None:
    async def inner(n: int) -> int:
        if n == 2:
            raise LookupError("deep")
        await anyio.sleep(1)
        return n

    async def outer(_: int) -> list[int]:
        return await fan_out(inner, range(3))

    with pytest.raises(LookupError, match="deep"):
        anyio.run(lambda: fan_out(outer, range(2)))


def test_a_stop_in_one_task_wins_over_an_error_in_another() -> None:
    """A Ctrl-C must be recorded as a stop even when another task failed at the same time."""

    async def work(n: int) -> None:
        raise (KeyboardInterrupt() if n == 1 else ValueError("error"))

    with pytest.raises(KeyboardInterrupt):
        anyio.run(lambda: fan_out(work, range(2)))


def test_no_items_no_tasks() -> None:
    async def never(_: int) -> int:
        raise AssertionError("called")

    assert anyio.run(lambda: fan_out(never, [])) == []
