"""User verifiers and rewards named `tests.app.fork_plugins:<function>` by tests/app/data/test_fork.py."""

from __future__ import annotations


def says_running(question, branch):
    return {"status": "running", "reason": "build still going", "cost_usd": 0.25}


def says_unknown(question, branch):
    return {"status": "unknown", "reason": "no result yet"}


def passes(question, branch):
    return {"ok": True, "reason": f"looked at {branch['question_id']}", "cost_usd": 0.01}


def raises(question, branch):
    raise RuntimeError("verifier crashed")


def returns_junk(question, branch):
    return ["not", "a", "verdict"]


def prefer_short(branch, components):
    return 1.0 if len(branch.get("final_text") or "") < 10_000 else 0.0
