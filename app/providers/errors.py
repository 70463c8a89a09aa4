"""Provider errors the harness can act on. Messages are one line, user-facing, secret-free."""

from __future__ import annotations

from core import errors as core_errors


class ProviderError(Exception):
    """A model call failed in a way the caller should report, not retry."""

    def __init__(self, message: str) -> None:
        # One line: the CLI prints it as-is, and multi-line provider dumps hide the point.
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        return str(self)


class ConfigurationError(ProviderError):
    """Unusable setup found before any call: missing API key, unknown model."""


class BudgetExceeded(ProviderError, core_errors.BudgetExceeded):
    """The run-wide cost budget is spent; no further calls are made.

    Also a `core.errors.BudgetExceeded`, so the core's loops re-raise it instead of absorbing it.
    """


class CallBudgetSpent(BudgetExceeded):
    """The training's `max_calls` is spent: training ends, and the best version is tested."""


class TransientError(ProviderError):
    """Rate limit, timeout, connection or 5xx errors that outlasted every retry."""
