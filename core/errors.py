"""Errors the pure core must recognise in exceptions raised by the application's providers.

The core never imports `app/`, yet some of its loops must tell "the run's budget is spent" (stop
everything) from "this one call failed" (degrade this item and go on). The application's
exceptions subclass these, so the core can catch them with `isinstance`.
"""

from __future__ import annotations


class BudgetExceeded(Exception):
    """The run-wide cost budget is spent: no further model calls may be made.

    Loops that otherwise absorb a failed call (a diagnosis, an evolution, a format downgrade)
    must re-raise this one.
    """
