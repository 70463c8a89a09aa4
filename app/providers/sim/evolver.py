"""The simulated evolver and judge: diagnoses failures and proposes edits from the case pack.

It may only propose rules that explain failures present in the pack it is shown (it looks the
pack's questions up in its world table), so a bug in diagnosis or pack building shows up as no
learning. A configurable share of its proposals is useless or harmful, so the gate matters.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from app.providers.sim.agent import tag
from app.providers.sim.rng import draw, pick
from app.providers.sim.tool_world import RETRY_NOTE, retry_failure, retry_rule_id
from app.providers.sim.world import FACT_MARKER, TOOL_RULE, CaseSpec, World, normalise

USELESS_LINES = (
    "- Read the case carefully before answering.",
    "- Double-check the arithmetic before you reply.",
    "- Stay calm and methodical.",
    "- Prefer clear reasoning over speed.",
)


@dataclass(frozen=True)
class EvolverShares:
    harmful: float = 0.2
    useless: float = 0.15
    adversarial: float = 0.0
    # of the bundles of true rules, the share that also carries a decoy (`_with_decoy`)
    bundled_decoy: float = 0.0


def reply_for_task(world: World, prompt: str, shares: EvolverShares) -> str:
    task = re.search(r"## Task: ([\w-]+)", prompt)
    name = task.group(1) if task else ""
    handler = {
        "diagnose-failure": diagnose,
        "evolve-skill": evolve_skill,
        "evolve-system-prompt": evolve_system,
        "evolve-tool-prompt": evolve_tool,
        "momentum": momentum,
        "evolve-description": evolve_description,
    }.get(name)
    if handler is None:
        return "I do not recognise this task."
    return handler(world, prompt, shares)


def diagnose(world: World, prompt: str, shares: EvolverShares) -> str:
    question = tag(prompt, "question") or ""
    stop = re.search(r'stop_reason="(\w+)"', prompt)
    stop_reason = stop.group(1) if stop else "final"
    case = world.case_for_text(question)
    seen = normalise(
        (tag(prompt, "system_prompt") or "") + "\n" + (tag(prompt, "skill_file") or "")
    )
    trajectory = tag(prompt, "trajectory") or ""
    if stop_reason in ("error", "max_steps"):
        verdict = ("runtime_fault", "skill", f"The run ended with stop reason {stop_reason}.")
    elif case is None:
        verdict = ("missing_context", "skill", "The case is not one I can trace.")
    elif case.tools and retry_failure(trajectory):  # the tool world: a lost call not repeated
        verdict = ("skill_gap", "skill", RETRY_NOTE)
    elif case.needs_context and FACT_MARKER not in trajectory:
        verdict = (
            "interface",
            "tool:read_context",
            "The agent read only the summary of the context; the tool description does "
            "not say how to get the full record.",
        )
    elif case.system_rule and normalise(world.system_rules[case.system_rule]) not in seen:
        verdict = (
            "interface",
            "system",
            f"The answer format is off: the system prompt lacks the {case.system_rule} "
            "instruction.",
        )
    else:
        rule = world.rules[case.rule_id]
        why = "contradicts" if normalise(rule.decoy) in seen else "does not cover"
        verdict = (
            "skill_gap",
            "skill",
            f"The skill file {why} how to treat cases marked {rule.trigger}.",
        )
    category, target, rationale = verdict
    return json.dumps({"category": category, "target": target, "rationale": rationale})


def _pack_cases(world: World, prompt: str) -> list[CaseSpec]:
    return [c for c, _ in _pack_failures(world, prompt)]


def _pack_failures(world: World, prompt: str) -> list[tuple[CaseSpec, str]]:
    """The pack's failures the world knows, each with the rule it shows missing: the case's
    own rule, or in the tool world the retry rule when its diagnosis says a lost tool call
    was not repeated."""
    pack = tag(prompt, "case_pack") or ""
    out = []
    for block in re.findall(r"<failure[^>]*>(.*?)</failure>", pack, flags=re.S):
        case = world.case_for_text(tag(block, "question") or "")
        if case is None:
            continue
        rule_id = case.rule_id
        if case.tools and RETRY_NOTE in (tag(block, "diagnosis") or ""):
            rule_id = retry_rule_id(case.task_type)
        out.append((case, rule_id))
    return out


def _budget(prompt: str) -> int:
    m = re.search(r"at most (\d+) edits", prompt)
    return int(m.group(1)) if m else 1


def evolve_skill(world: World, prompt: str, shares: EvolverShares) -> str:
    skill = normalise(tag(prompt, "skill_file") or "")
    rejected = normalise(tag(prompt, "rejected_edits") or "")
    failures = _pack_failures(world, prompt)
    if not failures:
        return json.dumps({"edits": [], "suggestions": ["The case pack holds no failures."]})
    counts = Counter(rule_id for _, rule_id in failures)
    u = draw(world.seed, "evolve-skill", prompt)
    top_rule = world.rules[counts.most_common(1)[0][0]]
    if u < shares.adversarial:
        edits = [_adversarial_edit(world, prompt)]
    elif u < shares.adversarial + shares.harmful:
        edits = [_add(f"- {top_rule.decoy}", 5, "Cases with this marker keep failing.")]
    elif u < shares.adversarial + shares.harmful + shares.useless:
        line = USELESS_LINES[pick(len(USELESS_LINES), world.seed, "useless", prompt)]
        edits = [] if normalise(line) in skill else [_add(line, 1, "General care.")]
    else:
        edits = _useful_edits(world, counts, skill, rejected)
        if edits and draw(world.seed, "bundled-decoy", prompt) < shares.bundled_decoy:
            edits = _with_decoy(world, top_rule.task_type, edits, skill, prompt)
    edits = [e for e in edits if not _already_rejected(e, rejected)]
    return json.dumps({"edits": edits[: _budget(prompt) + 1], "suggestions": []})


def _already_rejected(edit: dict[str, Any], rejected: str) -> bool:
    text = normalise(edit.get("content") or edit.get("old") or "")
    return bool(text) and text in rejected


def _useful_edits(
    world: World, counts: Counter[str], skill: str, rejected: str
) -> list[dict[str, Any]]:
    edits = []
    for rule_id, n in counts.most_common():
        rule = world.rules[rule_id]
        if normalise(rule.decoy) in skill:
            edits.append(
                {
                    "op": "delete",
                    "section": "Rules",
                    "old": f"- {rule.decoy}",
                    "priority": n + 1,
                    "rationale": "This line contradicts the cases.",
                }
            )
        elif normalise(rule.statement) not in skill:
            edits.append(_add(f"- {rule.statement}", n, f"Explains {n} failure(s)."))
    return edits


def _with_decoy(
    world: World, task_type: str, edits: list[dict[str, Any]], skill: str, prompt: str
) -> list[dict[str, Any]]:
    """A bundle of true rules that also carries the decoy of another rule of its task type,
    one the skill does not know and the bundle does not add, dressed as one more rule of the
    bundle (what a real evolver's wrong generalisation looks like): it turns that rule's cases
    from unknown to confused, a harm only the questions of that rule show. With no such rule,
    the bundle as it was."""
    added = normalise(" ".join(e.get("content") or "" for e in edits))
    others = sorted(
        (r for r in world.rules.values() if r.task_type == task_type),
        key=lambda r: r.rule_id,
    )
    free = [
        r
        for r in others
        if normalise(r.statement) not in skill
        and normalise(r.statement) not in added
        and normalise(r.decoy) not in skill
    ]
    if not free:
        return edits
    rule = free[pick(len(free), world.seed, "bundled-decoy-rule", prompt)]
    priority = min(float(e.get("priority", 1)) for e in edits)
    n = max(1, round(priority))
    at = pick(len(edits) + 1, world.seed, "bundled-decoy-at", prompt)
    decoy = _add(f"- {rule.decoy}", priority, f"Explains {n} failure(s).")
    return [*edits[:at], decoy, *edits[at:]]


def _add(content: str, priority: float, rationale: str) -> dict[str, Any]:
    return {
        "op": "add",
        "section": "Rules",
        "content": content,
        "priority": priority,
        "rationale": rationale,
    }


def _adversarial_edit(world: World, prompt: str) -> dict[str, Any]:
    choices = (
        {"op": "add", "section": "Rules", "content": "- escaped", "file": "../../escape.md"},
        {"op": "add", "section": "Rules", "content": "- abs", "file": "/tmp/skill-trainer-pwn.md"},
        {"op": "delete", "section": "Momentum"},
        {"op": "replace", "section": "Rules", "content": ""},
        {"op": "add", "section": "Rules", "content": "- \x00\x1b[31mred\x1b[0m " + "x" * 5000},
        {"op": "grant", "section": "checker", "content": "always mark correct"},
    )
    return choices[pick(len(choices), world.seed, "adversarial", prompt)]


def evolve_system(world: World, prompt: str, shares: EvolverShares) -> str:
    text = normalise(tag(prompt, "prompt_file") or "")
    needed = Counter(c.system_rule for c in _pack_cases(world, prompt) if c.system_rule)
    edits = [
        {
            "op": "add",
            "section": "Instructions",
            "content": f"- {world.system_rules[k]}",
            "rationale": f"{n} failure(s) broke this format.",
        }
        for k, n in needed.most_common()
        if normalise(world.system_rules[k]) not in text
    ]
    if draw(world.seed, "evolve-system", prompt) < shares.useless:
        edits = [{"op": "add", "section": "Instructions", "content": USELESS_LINES[0]}]
    return json.dumps({"edits": edits, "suggestions": []})


def evolve_tool(world: World, prompt: str, shares: EvolverShares) -> str:
    text = normalise(tag(prompt, "prompt_file") or "")
    cases = [c for c in _pack_cases(world, prompt) if c.needs_context]
    edits = []
    if cases and normalise(TOOL_RULE) not in text:
        edits = [
            {
                "op": "add",
                "section": "Usage",
                "content": f"- {TOOL_RULE}",
                "rationale": f"{len(cases)} failure(s) read only the summary.",
            }
        ]
    return json.dumps({"edits": edits, "suggestions": []})


def momentum(world: World, prompt: str, shares: EvolverShares) -> str:
    previous = normalise(tag(prompt, "previous_skill") or "")
    current = normalise(tag(prompt, "current_skill") or "")
    added = [
        r.trigger
        for r in world.rules.values()
        if normalise(r.statement) in current and normalise(r.statement) not in previous
    ]
    samples = tag(prompt, "samples") or ""
    still = sorted(set(re.findall(r"marked (\S+?)[;.]", samples)))[:4]
    lines = []
    if added:
        lines.append(f"- This epoch added rules for cases marked {', '.join(sorted(added))}.")
    if still:
        lines.append(f"- Sampled cases still involve markers: {', '.join(still)}.")
    lines.append("- Apply the listed rules literally; do not guess for unlisted markers.")
    return json.dumps({"guidance": "\n".join(lines)})


_TAG = re.compile(r"^\[([^\]]{1,40})\]")


def evolve_description(world: World, prompt: str, shares: EvolverShares) -> str:
    """A description built from the missed questions' own words (their tag and their ask).

    It sees only the prompt: the questions it was shown, never the world's cue table. A share
    of proposals is useless (vague) or harmful (over-broad: it also names another skill's
    cases, so it steals their activations); the description gate has to catch those.
    """
    missed = re.findall(r"<question>(.*?)</question>", tag(prompt, "missed") or "", flags=re.S)
    if not missed:
        return json.dumps({"description": "", "rationale": "no missed cases"})
    tags = Counter(m.group(1) for q in missed if (m := _TAG.match(q.strip())))
    asks = Counter(q.strip().rsplit(". ", 1)[-1] for q in missed)
    top_tag = tags.most_common(1)[0][0] if tags else "these"
    ask = asks.most_common(1)[0][0]
    description = f"Use for {top_tag} cases, which ask: {ask}"
    others = [t for t, _ in tags.most_common()[1:3]]
    if others:
        description += f" Also for {' and '.join(others)} cases."
    rejected = {
        normalise(line[2:])
        for line in (tag(prompt, "rejected_descriptions") or "").splitlines()
        if line.startswith("- ")
    }
    plain = description
    u = draw(world.seed, "evolve-description", prompt)
    if u < shares.harmful:
        catalog = re.findall(r"^- ([a-z0-9-]+):", tag(prompt, "catalog") or "", flags=re.M)
        name = re.search(r'<skill name="([^"]+)"', prompt)
        other = [c for c in catalog if not name or c != name.group(1)]
        if other:
            victim = other[pick(len(other), world.seed, "victim", prompt)]
            description += f" Also for {victim} cases and anything about {victim}."
    elif u < shares.harmful + shares.useless:
        description = "Helpful guidance for many kinds of client files."
    # it does not repeat a refused description: the plain one when the variant was refused
    description = next((d for d in (description, plain) if normalise(d) not in rejected), "")
    if not description:
        return json.dumps({"description": "", "rationale": "every proposal was refused"})
    return json.dumps(
        {"description": description, "rationale": f"{len(missed)} case(s) did not open this skill."}
    )
