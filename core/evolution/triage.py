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
  answered without the facts (not for an outside agent, whose verdict step says
  `context_in_task`: it got the context with its task, app/harness/agents/training_seam.py);
- `rule:skill_unopened` -> activation: the rollout records which skill file its task type needs
  (`skill_expected`, skill modes "tool" and "progressive", app/harness/skills/activation.py)
  and it did not open it, so no edit of that file's text reached the agent.

A failure no rule decides goes to the judge. Each returned `Diagnosis` names its decider.

After the judge, one check overrules a verdict the log disproves (`overrule_judge`):

- `rule:answered_not_a_fault` -> skill_gap, target skill: the judge said runtime_fault (the run
  broke) on a rollout that ended normally with a non-empty answer the checker rejected. A small
  judge model does this when the answer's format is off (Qwen2.5-Coder-1.5B called all 20
  failures of its first real-conventions run runtime_fault, each rationale naming the format,
  bench/REAL_MODEL.md); a wrong answer from a run that did not break is the skill's to fix.
  The evolver is shown a note from the log (OVERRULED_NOTE), not the judge's rationale: a
  judge that got the category wrong misleads with its reason too (the same model as evolver,
  shown "the correct format should be `ANSWER: <answer>`", proposed that rule; shown this
  note with the same four dates failures, it proposed "the answer should be in the format
  YYYYMMDD"). The step's diagnoses record who overruled what (`decided_by`).

A `missing_context` verdict on a question without context is reported (app/learning_report.py)
but not overruled: "the question lacked the facts" is a judgement the log cannot disprove.

Skipping the judge (`diagnosis_judge`, app/harness/workspace/config.py). On an answered
failure (the run ended normally with a non-empty answer) the judge's verdict is either
overruled into a skill gap or stands; it adds something only when it stands. With
`diagnosis_judge = "unanswered"` the judge is not asked about answered failures at all: after
the rules above, `rule:answered` decides each one a skill gap (target skill, OVERRULED_NOTE),
and the judge sees only runs that broke or gave no answer. With "auto" (the default) the
judge is asked as before until it has given JUDGE_AUTO_AFTER verdicts in the training and the
log overruled every one of them (`judge_adds_nothing`); from then on answered failures are
decided by `rule:answered`. Qwen2.5-Coder-1.5B as judge was overruled on 61 of 61 failures
(690-765 s of model time a training); the simulated judges are never overruled (an honest
judge says runtime_fault only on a run that broke), so "auto" changes nothing there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evolution.diagnose import ACTIVATION, JUDGE, Diagnosis, Failure
from core.types import StopReason

RULE_STOP_ERROR = "rule:stop_error"
RULE_UNPARSED_ARGUMENTS = "rule:unparsed_tool_arguments"
RULE_CONTEXT_UNREAD = "rule:context_unread"
RULE_SKILL_UNOPENED = "rule:skill_unopened"
RULE_ANSWERED_NOT_A_FAULT = "rule:answered_not_a_fault"
RULE_ANSWERED = "rule:answered"
# "auto" stops asking the judge about answered failures once this many of its verdicts in the
# training were all overruled: a judge whose verdict stands on a share q of failures gets this
# far with probability (1 - q)^10 (0.35 at q = 0.1, 0.03 at q = 0.3)
JUDGE_AUTO_AFTER = 10
# Descriptive, no instruction in it: a small evolver copies an instruction-like note into the
# skill as a rule (measured: "compare the answer with the expected one ..." came back verbatim)
OVERRULED_NOTE = "the run ended normally with an answer the checker rejected"
CONTEXT_TOOL = "read_context"  # app/harness/rollouts/agent_prompts.py TOOL_PARAMETERS


@dataclass(frozen=True)
class Triage:
    """A batch's failures split: decided by a rule, or left for the judge (batch order)."""

    decided: tuple[Diagnosis, ...]
    for_judge: tuple[Failure, ...]


def triage_failures(failures: Sequence[Failure], *, judge_answered: bool = True) -> Triage:
    """Split the failures; with `judge_answered` False an answered failure no rule decides is
    decided by `rule:answered` (a skill gap) instead of being left for the judge."""
    decided, for_judge = [], []
    for f in failures:
        verdict = rule_diagnosis(f)
        if verdict is None and not judge_answered and answered(f):
            verdict = _answered_skill_gap(f, RULE_ANSWERED)
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
    verdict = next(iter(_steps(f, "verdict")[-1:]), {})
    if verdict.get("context_in_task"):
        return None  # an outside agent is handed the context with its task: no call to miss
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


def overrule_judge(failures: Sequence[Failure], judged: Sequence[Diagnosis]) -> list[Diagnosis]:
    """`judged` with each verdict the log disproves replaced (module docstring); the rest, and
    every diagnosis not the judge's own (a rule's, a degraded placeholder), unchanged."""
    by_id = {f.question.question_id: f for f in failures}
    return [_overruled(d, by_id.get(d.question_id)) for d in judged]


def answered(failure: Failure) -> bool:
    """The run ended normally with a non-empty answer (the checker rejected it)."""
    return failure.stop_reason == StopReason.FINAL and bool(failure.prediction.strip())


def judge_adds_nothing(stood: int, overruled: int, after: int = JUDGE_AUTO_AFTER) -> bool:
    """Whether "auto" stops asking the judge about answered failures: of the judge's parsed
    verdicts in the training so far, none stood and at least `after` were overruled."""
    return stood == 0 and overruled >= max(1, after)


def _overruled(d: Diagnosis, failure: Failure | None) -> Diagnosis:
    if failure is None or d.decided_by != JUDGE or d.degraded or d.category != "runtime_fault":
        return d
    if not answered(failure):
        return d  # the run did break, or gave nothing: the judge may be right
    return _answered_skill_gap(failure, RULE_ANSWERED_NOT_A_FAULT)


def _answered_skill_gap(failure: Failure, decided_by: str) -> Diagnosis:
    """An answered failure as a skill gap of its task type's skill, decided by a rule."""
    q = failure.question
    return Diagnosis(
        q.question_id,
        q.unit_id,
        q.task_type,
        "skill_gap",
        "skill",
        OVERRULED_NOTE,
        decided_by=decided_by,
    )


RULES = (_stop_error, _unparsed_arguments, _context_unread, _skill_unopened)
RULE_NAMES = (RULE_STOP_ERROR, RULE_UNPARSED_ARGUMENTS, RULE_CONTEXT_UNREAD, RULE_SKILL_UNOPENED)


def _steps(f: Failure, kind: str) -> list[Mapping[str, Any]]:
    return [s for s in f.steps if isinstance(s, Mapping) and s.get("type") == kind]


def _tool_name_ok(name: str) -> bool:
    """As core/evolution/diagnose.py parse_diagnosis accepts a `tool:<name>` target."""
    return 0 < len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)
