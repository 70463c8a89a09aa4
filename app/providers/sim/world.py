"""The simulated world: hidden rules per task type and the benchmark generated from them.

A world is a pure function of (name, seed). Its rule tables live only here, never in the
store's skills or prompts: the agent can know a rule only from text it is actually sent.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.providers.sim import tool_world
from app.providers.sim.cases import CaseSpec, Rule
from app.providers.sim.tool_world import TOOL_WORLDS

__all__ = ["TOOL_WORLDS", "CaseSpec", "Rule", "World", "build_world", "normalise"]

TASK_TYPES = ("ledger", "units", "dates", "routing", "tagging", "pricing")
CHECKER_BY_TYPE = {
    "ledger": "numeric",
    "units": "numeric",
    "dates": "exact",
    "routing": "choice",
    "tagging": "exact",
    "pricing": "regex",
}
RULES_PER_TYPE = 5
TRIGGERS = (
    "VOID",
    "REFUND",
    "carryover",
    "leap-day",
    "overtime",
    "backorder",
    "duplicate",
    "pending",
    "legacy",
    "priority",
    "split",
    "reversal",
    "holiday",
    "bulk",
    "escrow",
    "rollover",
    "overflow",
    "manual",
    "foreign",
    "draft",
    "expired",
    "partial",
    "tiered",
    "capped",
    "offset",
    "shadow",
    "merged",
    "archived",
    "flagged",
    "interim",
    "deferred",
    "seasonal",
    "bundled",
    "prorated",
    "disputed",
    "frozen",
)
ACTIONS = (
    "leave that entry out entirely",
    "count that entry twice",
    "use the earlier of the two values",
    "use the later of the two values",
    "round the result down to a whole number",
    "round the result up to a whole number",
    "subtract the fee before anything else",
    "apply the figure before the discount",
    "treat the value as zero",
    "take the larger value",
    "take the smaller value",
    "swap the first two items",
)
SYSTEM_RULES = (
    ("FORMAT", "Write every answer with no thousands separators and no units."),
    ("SCOPE", "Answer only the final quantity that the case asks for."),
)
TOOL_RULE = (
    'Call read_context with section="full": the default section returns only the '
    "summary line, which never holds the facts a case needs."
)
FACT_MARKER = "FACT:"
# Words in a question that say which task type it is (its tag and its ask). In skill_mode
# "progressive" the simulated agent opens the skill whose description names the most of the
# cues present in the question (app/providers/sim/agent.py choose_skill).
CUES = {
    "ledger": ("ledger", "total"),
    "units": ("units", "converted quantity"),
    "dates": ("dates", "due"),
    "routing": ("routing", "queue"),
    "tagging": ("tagging", "tag"),
    "pricing": ("pricing", "price code"),
}

_WS = re.compile(r"\s+")


@lru_cache(maxsize=8192)  # rule statements and prompts repeat across thousands of calls
def normalise(text: str) -> str:
    return _WS.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class World:
    name: str
    seed: int
    rules: dict[str, Rule]
    cases: dict[str, CaseSpec]  # keyed by normalised question text

    def rules_for(self, task_type: str) -> list[Rule]:
        return [r for r in self.rules.values() if r.task_type == task_type]

    def case_for_text(self, question_text: str) -> CaseSpec | None:
        return self.cases.get(normalise(question_text))

    @property
    def system_rules(self) -> dict[str, str]:
        return dict(SYSTEM_RULES)


@lru_cache(maxsize=8)
def build_world(name: str = "basic", seed: int = 7, units_per_type: int = 72) -> World:
    if name in TOOL_WORLDS:  # its own rules and cases; every other world is as it was
        tool_cases = tool_world.build_cases(name, seed, units_per_type)
        return World(name, seed, tool_world.rules(), {normalise(c.question): c for c in tool_cases})
    rng = random.Random(f"world:{name}:{seed}")
    rules = _make_rules(rng)
    cases: dict[str, CaseSpec] = {}
    for task_type in TASK_TYPES:
        for spec in _make_cases(rng, task_type, rules, units_per_type):
            cases[normalise(spec.question)] = spec
    return World(name=name, seed=seed, rules=rules, cases=cases)


def _make_rules(rng: random.Random) -> dict[str, Rule]:
    triggers = list(TRIGGERS)
    rng.shuffle(triggers)
    rules = {}
    for t_index, task_type in enumerate(TASK_TYPES):
        for k in range(RULES_PER_TYPE):
            trigger = triggers[(t_index * RULES_PER_TYPE + k) % len(triggers)]
            action, other = rng.sample(ACTIONS, 2)
            rule_id = f"{task_type}.r{k + 1}"
            rules[rule_id] = Rule(
                rule_id=rule_id,
                task_type=task_type,
                trigger=trigger,
                statement=f"In {task_type} cases marked {trigger}, {action}.",
                decoy=f"In {task_type} cases marked {trigger}, {other}.",
            )
    return rules


def _make_cases(
    rng: random.Random, task_type: str, rules: dict[str, Rule], n_units: int
) -> list[CaseSpec]:
    type_rules = [r for r in rules.values() if r.task_type == task_type]
    specs: list[CaseSpec] = []
    for u in range(n_units):
        rule = type_rules[u % len(type_rules)]
        family = f"{task_type}-fam{u // 3:02d}"
        members = 2 if rng.random() < 0.2 else 1
        unit_id = f"{task_type}-u{u:03d}"
        system_rule = rng.choice(SYSTEM_RULES)[0] if rng.random() < 0.2 else None
        needs_context = rng.random() < 0.25
        for m in range(members):
            qid = unit_id if members == 1 else f"{unit_id}{'ab'[m]}"
            specs.append(
                _make_case(
                    rng,
                    task_type,
                    rule,
                    qid,
                    unit_id,
                    family,
                    system_rule,
                    needs_context,
                    part="" if members == 1 else "AB"[m],
                )
            )
    return specs


def _make_case(
    rng: random.Random,
    task_type: str,
    rule: Rule,
    qid: str,
    unit_id: str,
    family: str,
    system_rule: str | None,
    needs_context: bool,
    part: str,
) -> CaseSpec:
    answer, wrong, checker_args = _answer(rng, task_type)
    part_text = f" (part {part})" if part else ""
    client = f"client {rng.randint(100, 999)}"
    if needs_context:
        body = (
            f"The file for {client} has one entry marked {rule.trigger}; "
            "read the attached context for the figures."
        )
        context = (
            f"Summary: {task_type} file for {client}.\n"
            + "\n".join(
                f"note {i}: routine line {rng.randint(1, 99)}" for i in range(rng.randint(2, 6))
            )
            + f"\n{FACT_MARKER} the figures for case {qid} are on record."
        )
    else:
        figures = ", ".join(str(rng.randint(2, 400)) for _ in range(rng.randint(3, 6)))
        body = f"For {client} the figures are {figures}; one entry is marked {rule.trigger}."
        context = ""
    ask = _ask(task_type)
    question = f"[{task_type}] Case {qid}{part_text}. {body} {ask}"
    return CaseSpec(
        question_id=qid,
        task_type=task_type,
        question=question,
        answer=answer,
        wrong_answers=wrong,
        rule_id=rule.rule_id,
        system_rule=system_rule,
        needs_context=needs_context,
        unit_id=unit_id,
        family=family,
        context=context,
        checker=CHECKER_BY_TYPE[task_type],
        checker_args=checker_args,
    )


def _ask(task_type: str) -> str:
    return {
        "ledger": "What is the total?",
        "units": "What is the converted quantity?",
        "dates": "On which date (YYYY-MM-DD) is it due?",
        "routing": "Which queue should it go to: A, B, C or D?",
        "tagging": "Which tag applies?",
        "pricing": "What is the price code?",
    }[task_type]


def _answer(rng: random.Random, task_type: str) -> tuple[str, tuple[str, ...], dict[str, Any]]:
    if task_type in ("ledger", "units"):
        value = rng.randint(10, 5000)
        wrong = tuple(str(value + d) for d in (rng.randint(3, 90), -rng.randint(3, 9), 1000))
        return str(value), wrong, {"abs_tol": 0.5}
    if task_type == "dates":
        y, m, d = rng.randint(2019, 2027), rng.randint(1, 12), rng.randint(1, 28)
        wrong = tuple(f"{y}-{m:02d}-{(d + k) % 28 + 1:02d}" for k in (1, 5, 11))
        return f"{y}-{m:02d}-{d:02d}", wrong, {}
    if task_type == "routing":
        letters = ["A", "B", "C", "D"]
        rng.shuffle(letters)
        return letters[0], tuple(letters[1:]), {"options": ["A", "B", "C", "D"]}
    if task_type == "tagging":
        tags = rng.sample(["urgent", "review", "archive", "escalate", "hold", "close"], 4)
        return tags[0], tuple(tags[1:]), {}
    code = rng.randint(1000, 9999)
    wrong = tuple(f"PX-{code + d}" for d in (7, 13, 101))
    return f"PX-{code}", wrong, {"pattern": rf"PX-?{code}"}
