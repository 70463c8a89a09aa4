"""What a simulated world is made of: hidden rules and the cases (questions) that need them.

Shared by app/providers/sim/world.py and app/providers/sim/tool_world.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    rule_id: str
    task_type: str
    trigger: str
    statement: str
    decoy: str


@dataclass(frozen=True)
class CaseSpec:
    """What the world knows about one question: the rules it needs and its answer."""

    question_id: str
    task_type: str
    question: str
    answer: str
    wrong_answers: tuple[str, ...]
    rule_id: str
    system_rule: str | None  # key into SYSTEM_RULES or None
    needs_context: bool
    unit_id: str
    family: str
    context: str
    checker: str
    checker_args: dict[str, Any]
    # the tool world only (app/providers/sim/tool_world.py); empty in every other world
    tools: tuple[str, ...] = ()
    record_id: str = ""
    fixture: str = ""
    fixture_field: str = ""
