"""Objective verifiers of best-of-N rollouts (app/harness/data/fork.py): a pipeline of checks over
a fork's branches.

A verifier takes (question, branch) and returns a Verdict. Built in:
- `checker`: the question's own answer checker on the branch's answer: a built-in one
  (core/checkers.py) here; a custom `module:function` or `rubric` one as the fork checked it
  through training's path (app/harness/rollouts/checking.py), at the question's pass line;
- `completed`: the branch ended with an answer. A branch still going when it ran out of turns
  (`max_steps`) reports `running`; one that hit a provider error reports `unknown`;
- `trajectory`: the trajectory is well formed: every tool call the model made got exactly one
  result, in order, and no step is a provider error.
A user verifier is named `module:function`; it is called with the Question and the branch
row (a dict with the `branches` columns of app/harness/workspace/harness_log/schema.py) and returns a Verdict, a dict
{"status" | "ok", "reason", "score"?, "cost_usd"?} or a bool. Anything else, or an exception,
is recorded as `unknown` with the reason. It runs in the checker worker pool
(app/harness/rollouts/custom_checkers.py), never in this process: a verifier that hangs, exits,
prints or raises SystemExit is one `unknown` verdict with its reason.

Invariant: only `pass` passes. `running` and `unknown` (and `fail`, `error`) are failures, so
a branch's objective score is 1 only when every verifier says `pass`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import UserError
from app.harness.rollouts.custom_checkers import Opaque, PooledFunction, UserCodeError
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.forks import VerdictRecord
from app.secrets import scrub
from core.checkers import CheckStatus, check, pass_threshold
from core.types import CHECKERS, Question, StopReason

STATUSES = ("pass", "fail", "running", "unknown", "error")
REASON_MAX = 500


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str = ""
    score: float | None = None
    cost_usd: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def outcome(self) -> tuple[str, bool, float | None, str, float | None]:
        """(status, passed, score, reason, cost): what a verdict row records."""
        return self.status, self.passed, self.score, self.reason, self.cost_usd


def checker_verifier(question: Question, branch: dict[str, Any]) -> Verdict:
    if branch.get("stop_reason") != StopReason.FINAL:
        return Verdict("fail", f"no answer (stop reason {branch.get('stop_reason')})", 0.0)
    if question.checker not in CHECKERS:
        return recorded_check_verdict(question, branch)
    ok = check(question, branch.get("prediction") or "")
    reason = f"checker {question.checker}: answer {'matches' if ok else 'does not match'}"
    return Verdict("pass" if ok else "fail", reason, 1.0 if ok else 0.0)


def recorded_check_verdict(question: Question, branch: dict[str, Any]) -> Verdict:
    """A custom or rubric checker's verdict on a branch: the one the fork recorded when it
    checked the answer through training's own path (app/harness/rollouts/checking.py: user code
    isolated with a timeout, the rubric scored by the judge role k times). Checking again here
    would run user code in this process or pay the judge twice for the same answer.

    A score passes at the question's pass line (core.checkers.pass_threshold); a judge whose
    replies all failed to parse (`invalid`) says nothing about the answer, so it is `unknown`,
    never a fail with score 0; a checker that raised, hung or returned garbage is `error`."""
    status = branch.get("check_status")
    reason = scrub(str(branch.get("check_reason") or ""))[:REASON_MAX]
    score = _num(branch.get("score"))
    kind = question.checker
    if status == CheckStatus.OK and score is not None:
        line = pass_threshold(question)
        ok = score >= line
        return Verdict(
            "pass" if ok else "fail",
            f"checker {kind}: score {score:.3f} (pass line {line:g})"
            + (f"; {reason}" if reason else ""),
            score,
        )
    if status == CheckStatus.INVALID:
        return Verdict("unknown", f"checker {kind}: no verdict (invalid judge replies): {reason}")
    if status == CheckStatus.CHECK_ERROR:
        return Verdict("error", f"checker {kind} failed: {reason}")
    return Verdict(
        "unknown",
        f"checker {kind}: the fork recorded no check for this branch; fork it again to check it",
    )


def completed_verifier(question: Question, branch: dict[str, Any]) -> Verdict:
    stop = branch.get("stop_reason")
    if stop == StopReason.FINAL:
        return Verdict("pass", "ended with an answer", 1.0)
    if stop == StopReason.MAX_STEPS:
        return Verdict("running", "still going when it ran out of turns", 0.0)
    if stop == StopReason.ERROR:
        return Verdict("unknown", "a provider error ended it", 0.0)
    return Verdict("fail", f"ended without an answer ({stop})", 0.0)


def trajectory_verifier(question: Question, branch: dict[str, Any]) -> Verdict:
    try:
        steps = json.loads(branch.get("steps_json") or "[]")
    except json.JSONDecodeError as e:
        return Verdict("fail", f"steps are not JSON ({e.msg})", 0.0)
    if not isinstance(steps, list):
        return Verdict("fail", "steps are not a list", 0.0)
    calls: list[str] = []
    results: list[str] = []
    for s in steps:
        if not isinstance(s, dict):
            return Verdict("fail", "a step is not an object", 0.0)
        if s.get("type") == "error":
            return Verdict("fail", "a provider error ended a turn", 0.0)
        if s.get("type") == "model":
            calls += [str(c.get("name")) for c in s.get("tool_calls") or [] if isinstance(c, dict)]
        elif s.get("type") == "tool":
            results.append(str(s.get("name")))
    if calls != results:
        return Verdict("fail", f"{len(calls)} tool calls but {len(results)} results", 0.0)
    return Verdict("pass", f"{len(calls)} tool calls, each with its result", 1.0)


BUILTIN: dict[str, Callable[[Question, dict[str, Any]], Verdict]] = {
    "checker": checker_verifier,
    "completed": completed_verifier,
    "trajectory": trajectory_verifier,
}


def load_verifier(name: str) -> Callable[[Question, dict[str, Any]], Any]:
    if name in BUILTIN:
        return BUILTIN[name]
    if ":" not in name:
        raise UserError(
            f"--verifier {name!r}: use a built-in ({', '.join(BUILTIN)}) or module:function"
        )
    return load_user_code(name, "verifier", "--")


def load_user_code(name: str, what: str, prefix: str = "") -> PooledFunction:
    """A user `module:function` (a verifier, a rank reward) run in the checker worker pool,
    like a training checker: its own process with a timeout, output to /dev/null, an
    allow-listed environment (docs/checkers.md#what-user-code-can-reach). It is loaded now,
    so one that does not import is bad input before any work."""
    try:
        return PooledFunction(what, name).load()
    except UserError as e:  # `prefix` makes "verifier x: ..." name the option typed
        raise UserError(f"{prefix}{e}") from None


def coerce_verdict(value: Any) -> Verdict:
    """A verifier's return value as a Verdict; anything unreadable is `unknown`."""
    status: Any
    if isinstance(value, Verdict):
        status = value.status if value.status in STATUSES else "unknown"
        return Verdict(
            status, str(value.reason)[:REASON_MAX], _num(value.score), _num(value.cost_usd) or 0.0
        )
    if isinstance(value, bool):
        return Verdict("pass" if value else "fail", "", 1.0 if value else 0.0)
    if isinstance(value, dict):
        status = value.get("status")
        if status is None and isinstance(value.get("ok"), bool):
            status = "pass" if value["ok"] else "fail"
        if status not in STATUSES:
            return Verdict("unknown", f"unreadable status {str(status)[:40]!r}")
        return Verdict(
            status,
            str(value.get("reason", ""))[:REASON_MAX],
            _num(value.get("score")),
            _num(value.get("cost_usd")) or 0.0,
        )
    name = value.type_name if isinstance(value, Opaque) else type(value).__name__
    return Verdict("unknown", f"verifier returned {name}, not a verdict")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def run_verifier(
    fn: Callable[[Question, dict[str, Any]], object], question: Question, branch: dict[str, Any]
) -> Verdict:
    try:
        verdict = coerce_verdict(fn(question, branch))
    except UserCodeError as e:  # raised, hung, died in its worker
        verdict = Verdict("unknown", scrub(e.reason)[:REASON_MAX])
    except Exception as e:  # user code: its failure is a verdict, never a crash
        verdict = Verdict("unknown", f"raised {type(e).__name__}: {scrub(str(e))[:300]}")
    return verdict


def objective_score(verdicts: Sequence[Verdict]) -> int:
    """1 when every verifier passed; `running`/`unknown` never pass."""
    return int(bool(verdicts) and all(v.passed for v in verdicts))


def verify_rollout(
    log: HarnessLog, rollout_id: str, questions: dict[str, Question], names: Sequence[str]
) -> dict[tuple[str, int], int]:
    """Run the pipeline on every branch, store the verdicts (replacing earlier ones), and
    return each branch's objective score."""
    fns = [(name, load_verifier(name)) for name in names]
    rows = [b.as_dict() for b in log.branches(rollout_id)]  # a verifier takes a mapping
    scores: dict[tuple[str, int], int] = {}
    out: list[VerdictRecord] = []
    for branch in rows:
        question = questions.get(branch["question_id"])
        verdicts = []
        for name, fn in fns:
            v = (
                run_verifier(fn, question, branch)
                if question is not None
                else Verdict("unknown", "question no longer in the benchmark")
            )
            verdicts.append(v)
            out.append(VerdictRecord.build(rollout_id, branch_key(branch), name, v.outcome()))
        scores[(branch["question_id"], branch["branch_index"])] = objective_score(verdicts)
    log.replace_verdicts(rollout_id, out)
    return scores


def branch_key(branch: Mapping[str, Any]) -> tuple[str, int]:
    """(question id, branch index) of a branch row."""
    return branch["question_id"], branch["branch_index"]
