"""A user verifier named `tests.app.scorecard_plugins:flaky` by tests/app/data/test_scorecard.py:
on branch 0 of every question its verdict flips on each call; elsewhere it always passes."""

from __future__ import annotations

import itertools

_calls = itertools.count()


def flaky(question, branch):
    if branch["branch_index"] == 0:
        ok = next(_calls) % 2 == 0
    else:
        ok = True
    return {"ok": ok, "reason": "flaky on branch 0", "cost_usd": 0.01}
