"""A sim provider behind a running gateway, for the agents tests."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from app.harness.agents.gateway import Gateway, running_gateway
from app.harness.workspace.config import RunConfig
from app.providers.factory import make_model
from app.providers.litellm_provider import CostBudget
from core.protocols import LLMProvider


def sim_provider(model: str = "sim/basic") -> LLMProvider:
    return make_model(model, RunConfig(), CostBudget(None))


def with_gateway(
    test: Callable[..., Awaitable[None]],
) -> Callable[..., Awaitable[None]]:
    """Runs an async test with a gateway in front of sim/basic as its first argument. (Not a
    fixture: an async fixture's setup and teardown run in different tasks, and the
    gateway's task group must be left in the task that entered it.)"""

    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        async with running_gateway(sim_provider(), model_name="sim/basic") as gateway:
            await test(gateway, *args, **kwargs)

    signature = inspect.signature(test)
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    return run


__all__ = ["Gateway", "sim_provider", "with_gateway"]
