"""The core recognises the run's budget error by type, whatever the application calls it."""

from __future__ import annotations

import anyio
import pytest

from core.errors import BudgetExceeded
from core.structured import LEVELS, FormatLadder, structured_complete
from tests.fakes.scripted import ScriptedProvider


class AppBudgetError(BudgetExceeded):
    """An application's own budget error under another name: the core must still re-raise it."""


def complete(provider: ScriptedProvider, ladder: FormatLadder) -> None:
    async def call() -> None:
        await structured_complete(
            provider,
            [{"role": "user", "content": "?"}],
            parse=lambda text: (text, ""),
            ladder=ladder,
        )

    anyio.run(call)


def test_a_budget_error_naming_the_response_format_is_not_a_format_rejection() -> None:
    ladder = FormatLadder("m", level="json_schema")
    provider = ScriptedProvider(
        [AppBudgetError("budget spent before response_format json_schema call")]
    )
    with pytest.raises(AppBudgetError):
        complete(provider, ladder)
    assert provider.calls == 1 and ladder.level == "json_schema"


def test_a_format_rejection_still_downgrades_the_ladder() -> None:
    ladder = FormatLadder("m", level="json_schema")
    provider = ScriptedProvider([ValueError("unsupported response_format json_schema")])
    with pytest.raises(ValueError):
        complete(provider, ladder)
    assert ladder.level == "prompt" and provider.calls == len(LEVELS)
