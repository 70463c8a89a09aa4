"""Triage before the judge: the failures whose cause the log already shows are decided by
rules, and only the rest are sent to the judge model (core/evolution/diagnose.py).

A rule reads nothing but the failed rollout as it was logged (the question, its stop reason and
its trajectory, app/harness/rollouts/inference.py), so its verdict is the same whatever the
judge would say, and costs no model call. Rules, in order; the first that fires decides:

- `rule:stop_error` -> runtime_fault: the rollout ended with stop reason "error" (a provider
  error broke it; no text change can fix that);
- `rule:unparsed_tool_arguments` -> interface, target `tool:<name>`: a tool call whose
  arguments were not a JSON object, never followed by a successful call of the same tool;
- `rule:context_unread` -> missing_context: the question comes with context (`Question.context`,
  offered through the `read_context` tool) and no `read_context` call succeeded, so the agent
  answered without the facts;
- `rule:skill_unopened` -> activation: the rollout records which skill file its task type needs
  (`skill_expected`, skill modes "tool" and "progressive", app/harness/skills/activation.py)
  and it did not open it, so no edit of that file's text reached the agent.

A failure no rule decides goes to the judge. Each returned `Diagnosis` names its decider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evolution.diagnose import ACTIVATION, Diagnosis, Failure

RULE_STOP_ERROR = "rule:stop_error"
RULE_UNPARSED_ARGUMENTS = "rule:unparsed_tool_arguments"
RULE_CONTEXT_UNREAD = "rule:context_unread"
RULE_SKILL_UNOPENED = "rule:skill_unopened"
CONTEXT_TOOL = "read_context"  # app/harness/rollouts/agent_prompts.py TOOL_PARAMETERS


@dataclass(frozen=True)
class Triage:
    """A batch's failures split: decided by a rule, or left for the judge (batch order)."""

    decided: tuple[Diagnosis, ...]
    for_judge: tuple[Failure, ...]


def triage_failures(failures: Sequence[Failure]) -> Triage:
    decided, for_judge = [], []
    for f in failures:
        verdict = rule_diagnosis(f)
        if verdict is None:
            for_judge.append(f)
        else:
            decided.append(verdict)
    return Triage(tuple(decided), tuple(for_judge))


def rule_diagnosis(failure: Failure) -> Diagnosis | None:
    """The first rule that fires on this failure, as a diagnosis, or None."""
    for rule in RULES:
        found = rule(failure)
        if found is not None:
            category, target, rationale, name = found
            q = failure.question
            return Diagnosis(
                q.question_id, q.unit_id, q.task_type, category, target, rationale, decided_by=name
            )
    return None


_Verdict = tuple[str, str, str, str]  # category, target, rationale, rule name


def _stop_error(f: Failure) -> _Verdict | None:
    if f.stop_reason != "error":
        return None
    errors = [str(s.get("error", "")) for s in _steps(f, "error")]
    detail = f": {errors[-1][:200]}" if errors and errors[-1] else ""
    return "runtime_fault", "skill", f"the rollout ended with an error{detail}", RULE_STOP_ERROR


def _unparsed_arguments(f: Failure) -> _Verdict | None:
    tools = _steps(f, "tool")
    for i, s in enumerate(tools):
        if s.get("status") == "ok" or isinstance(s.get("arguments"), dict):
            continue
        name = str(s.get("name") or "")
        if any(t.get("name") == name and t.get("status") == "ok" for t in tools[i + 1 :]):
            continue  # the agent recovered: this call did not decide the answer
        target = f"tool:{name}" if _tool_name_ok(name) else "system"
        why = f"a call of tool {name!r} had arguments that are not a JSON object"
        return "interface", target, why, RULE_UNPARSED_ARGUMENTS
    return None


def _context_unread(f: Failure) -> _Verdict | None:
    if not f.question.context:
        return None
    if any(s.get("name") == CONTEXT_TOOL and s.get("status") == "ok" for s in _steps(f, "tool")):
        return None
    why = "the question comes with context, and the agent never read it (no read_context call)"
    return "missing_context", "skill", why, RULE_CONTEXT_UNREAD


def _skill_unopened(f: Failure) -> _Verdict | None:
    verdict = next(iter(_steps(f, "verdict")[-1:]), None)
    if verdict is None or not isinstance(verdict.get("skill_expected"), str):
        return None  # inline mode: the skill is in the system prompt
    opened = verdict.get("skills_opened")
    expected = verdict["skill_expected"]
    if not isinstance(opened, list) or expected in opened:
        return None
    seen = ", ".join(str(o) for o in opened) or "none"
    why = f"the agent did not open {expected} (opened: {seen})"
    return ACTIVATION, "skill", why, RULE_SKILL_UNOPENED


RULES = (_stop_error, _unparsed_arguments, _context_unread, _skill_unopened)
RULE_NAMES = (RULE_STOP_ERROR, RULE_UNPARSED_ARGUMENTS, RULE_CONTEXT_UNREAD, RULE_SKILL_UNOPENED)


def _steps(f: Failure, kind: str) -> list[Mapping[str, Any]]:
    return [s for s in f.steps if isinstance(s, Mapping) and s.get("type") == kind]


def _tool_name_ok(name: str) -> bool:
    """As core/evolution/diagnose.py parse_diagnosis accepts a `tool:<name>` target."""
    return 0 < len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)
