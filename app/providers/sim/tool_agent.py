"""The simulated agent in the tool world (app/providers/sim/tool_world.py).

It acts through the declared tools, and knows what to do only from the text it is sent: the
rule "look the record up" makes it call `lookup` and answer with the balance the tool returned;
"read the schema before you write" makes it write the total into the field `read_schema`
names (else it guesses the field `total`); "call it again after an error" makes it repeat a
call whose result was an error or not readable (a fault hits a tool's first call only, so the
repeat gets through). The repair rule's decoy makes it edit the sealed expected file after a
failed `check`: the oracle would pass, the seal fails the rollout.
"""

from __future__ import annotations

import json
from typing import Any

from app.providers.sim.agent import P_CONFUSED, P_KNOWN, P_UNKNOWN, AgentView
from app.providers.sim.tool_world import EXPECTED_FILE, GUESSED_FIELD, readable, retry_rule_id
from app.providers.sim.world import CaseSpec, World, normalise
from core.types import ToolCall

Step = ToolCall | bool  # the next call, or the final answer's correctness


def next_step(world: World, view: AgentView, case: CaseSpec, turn: int, u: float) -> Step:
    """`u` is the agent's draw for this question and sample (app/providers/sim/provider.py)."""
    text = view.instruction_text
    rule = world.rules[case.rule_id]
    if normalise(rule.decoy) in text and case.task_type == "records":
        return u < P_CONFUSED
    retry = normalise(world.rules[retry_rule_id(case.task_type)].statement) in text
    if case.task_type == "records":
        if normalise(rule.statement) not in text:
            return u < P_UNKNOWN
        return _records(view, case, turn, u, retry)
    knows = normalise(rule.statement) in text
    return _repair(view, case, turn, u, retry, knows, normalise(rule.decoy) in text)


def _call(turn: int, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"call_{turn}_{name}", name=name, arguments=dict(arguments))


def _again(view: AgentView, name: str, retry: bool) -> bool:
    """Whether to call `name` again: its only result was lost and the rule says retry."""
    results = view.called.get(name, [])
    return retry and len(results) == 1 and not readable(results[0])


def _last(view: AgentView, name: str) -> dict[str, Any] | None:
    results = view.called.get(name, [])
    if not results or not readable(results[-1]):
        return None
    value = json.loads(results[-1])
    return value if isinstance(value, dict) else None


def _records(view: AgentView, case: CaseSpec, turn: int, u: float, retry: bool) -> Step:
    if "lookup" not in view.called or _again(view, "lookup", retry):
        return _call(turn, "lookup", record_id=case.record_id)
    row = _last(view, "lookup")
    if row is None:  # the answer was lost: back to guessing from the question
        return u < P_UNKNOWN
    return str(row.get("balance")) == case.answer and u < P_KNOWN


def _repair(
    view: AgentView,
    case: CaseSpec,
    turn: int,
    u: float,
    retry: bool,
    schema_rule: bool,
    tamper: bool,
) -> Step:
    lucky = u < P_UNKNOWN  # a blind guess of the field can be right
    field = case.fixture_field if lucky else GUESSED_FIELD
    if schema_rule:
        if "read_schema" not in view.called or _again(view, "read_schema", retry):
            return _call(turn, "read_schema")
        schema = _last(view, "read_schema")
        if schema is not None:
            field = str(schema.get("total_field", field))
    if "write_field" not in view.called or _again(view, "write_field", retry):
        return _call(turn, "write_field", field=field, value=int(case.answer))
    if tamper and "check" not in view.called:
        return _call(turn, "check")
    verdict = _last(view, "check")
    failed = verdict is not None and not verdict.get("passed")
    if tamper and failed and "write_file" not in view.called:
        content = json.dumps({"field": field, "value": int(case.answer)})
        return _call(turn, "write_file", path=EXPECTED_FILE, content=content)
    return True  # the fixture's oracle and seal decide; the answer text is the total
