"""scorecard: is a ranked fork's curated data any good? (docs/scorecard.md)

Reads a rollout that `rank` has ranked and gives, each with a one-line basis:
- yield eta = accepted / generated (accepted: objective 1, every verifier passed);
- flakiness R_flake: the verifiers re-run K times on every branch (called afresh, nothing
  stored); the share of (branch, verifier) verdicts that change;
- the leak rate of planted canaries: one synthetic secret per branch record, planted in a
  copy of the record as the export builds it, then the export's redaction (`scrub_json`,
  app/secrets.py) run over it; a canary is leaked when it (or the middle of a long one)
  survives;
- cost per clean trajectory: the fork's model cost and the stored verdicts' cost over the
  clean (pristine or recovery) branches, and the same in tokens;
- held-out test accuracy with this rollout's memories vs without: the test pool (never
  forked for memories, never remembered: app/harness/data/rank.py) answered twice, paired by
  unit, exact McNemar p and whether the comparison is powered (core/ranking.py);
- loop health (core/scorecard.py): per question p-hat, the chance a branch set is
  informative, the distinct tool sequences.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import UserError
from app.harness.data.fork import held_out_question_ids
from app.harness.data.loop_health import health_rows, previous_fork, summary
from app.harness.data.verifiers import load_verifier, run_verifier
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.memory import with_memories
from app.harness.rollouts.question_units import build_units, unit_correctness_view
from app.harness.rollouts.session import Session
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.forks import BranchRecord
from app.secrets import scrub_json
from core import ranking
from core.scorecard import (
    collapse_warning,
    flake_rate,
    fork_summary,
    lax_warning,
    loop_health,
    yield_rate,
)
from core.types import QuestionUnit

CLEAN_CLASSES = ("pristine", "recovery")
MAX_CANARY_RECORDS = 500
_B62 = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Figure:
    name: str
    value: float | None
    unit: str
    basis: str


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# kind -> (canary, the text it is planted as); the kinds of bench/redaction.py that a model
# or a tool result is most likely to echo
CANARY_KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "aws_key_id": lambda g: (s := "AKIA" + _r(g, string.ascii_uppercase + string.digits, 16), f"aws_access_key_id={s}"),
    "github": lambda g: (s := "ghp_" + _r(g, _B62, 36), f"git clone https://x-access-token:{s}@github.com/acme/app"),
    "password": lambda g: (s := _r(g, string.ascii_letters, 6) + _r(g, string.digits, 3) + "#", f'{{"db_password": "{s}"}}'),
    "email": lambda g: (s := f"{_r(g, string.ascii_lowercase, 5)}.{_r(g, string.ascii_lowercase, 7)}@acme.com", f"forward it to {s} today"),
    "private_ipv4": lambda g: (s := f"10.{g.randrange(256)}.{g.randrange(256)}.{g.randrange(1, 255)}", f"connect to {s}:6379 failed"),
    "entropy": lambda g: (s := _r(g, _B62, 40), f"use {s} as the webhook signing value"),
}  # fmt: skip


def _leaked(canary: str, text: str) -> bool:
    if canary in text:
        return True
    if len(canary) >= 24:  # a partial leak: the middle of a long canary left in place
        mid = len(canary) // 2
        return canary[mid - 6 : mid + 6] in text
    return False


def canary_leaks(branches: Sequence[dict[str, Any]], seed: int = 0) -> tuple[int, int]:
    """(leaked, planted): one canary per branch record (up to MAX_CANARY_RECORDS), in turn of
    CANARY_KINDS, planted in the final text and in the first tool call's arguments."""
    rng = random.Random(seed)
    kinds = list(CANARY_KINDS.values())
    leaked = planted = 0
    for i, b in enumerate(branches[:MAX_CANARY_RECORDS]):
        canary, text = kinds[i % len(kinds)](rng)
        try:
            calls = json.loads(b.get("tool_calls_json") or "[]")
        except ValueError:
            calls = []
        if isinstance(calls, list) and calls and isinstance(calls[0], dict):
            calls[0] = {**calls[0], "arguments": {"note": text}}
        record = {"final_text": f"{b.get('final_text') or ''}\n{text}", "tool_calls": calls}
        out = json.dumps(scrub_json(record), ensure_ascii=False)
        planted += 1
        leaked += int(_leaked(canary, out))
    return leaked, planted


def rerun_flakiness(
    session: Session, branches: Sequence[dict[str, Any]], verifiers: Sequence[str], k: int
) -> tuple[float, int]:
    """(R_flake, items): every verifier re-run k times on every branch, nothing stored."""
    fns = [(name, load_verifier(name)) for name in verifiers]
    items: list[list[str]] = []
    for b in branches:
        question = session.questions_by_id.get(b["question_id"])
        if question is None:
            continue
        for _name, fn in fns:
            items.append([run_verifier(fn, question, b).status for _ in range(k)])
    return flake_rate(items), len(items)


def _unit_correct(log: HarnessLog, run_id: str, units: list[QuestionUnit]) -> dict[str, bool]:
    """unit id -> right (every member right), from a run's predictions."""
    return unit_correctness_view(units, log.correctness(run_id))


async def heldout_with_memories(
    session: Session, rollout_id: str, memory_k: int, run_ids: tuple[str, str]
) -> dict[str, Any]:
    """The test pool answered with the rollout's memories (k per question) and without."""
    log = session.log
    memories = log.memory_count(rollout_id)
    test_ids = held_out_question_ids(session.benchmark, session.config.holdout_task_types)
    questions = [q for q in session.benchmark.questions if q.question_id in test_ids]
    report: dict[str, Any] = {"memories": memories, "test_questions": len(questions)}
    if not questions or not memories or memory_k <= 0:
        return {**report, "paired": None, "run_ids": None}
    base = AgentPrompts.load(
        session.paths.skills_dir, session.paths.prompts_dir, session.config.skill_mode
    )
    with_id, without_id = run_ids
    await session.infer(
        questions,
        with_id,
        "eval",
        prompts=with_memories(
            base,
            log,
            memory_k,
            run_id=rollout_id,
            dedupe=session.config.memory_dedupe,
            retire_after=session.config.memory_retire_after_versions,
        ),
        label="test with memories",
    )
    await session.infer(questions, without_id, "eval", prompts=base, label="test without")
    units = build_units(questions)
    a, b = _unit_correct(log, with_id, units), _unit_correct(log, without_id, units)
    keys = sorted(set(a) & set(b))
    paired = ranking.paired_report([a[u] for u in keys], [b[u] for u in keys])
    return {**report, "paired": paired, "run_ids": [with_id, without_id]}


def _rollout_rows(log: HarnessLog, rollout_id: str) -> list[BranchRecord]:
    branches = log.branches(rollout_id)
    if not branches:
        raise UserError(f"rollout {rollout_id!r}: no branches (fork it first)")
    return branches


async def build_scorecard(
    session: Session,
    rollout_id: str,
    *,
    reruns: int,
    memory_k: int,
    heldout_run_ids: tuple[str, str],
) -> dict[str, Any]:
    log = session.log
    branches = _rollout_rows(log, rollout_id)
    ranked = log.objectives(rollout_id)
    if not ranked:
        raise UserError(f"rollout {rollout_id!r}: not ranked (run `rank -w WS {rollout_id}`)")
    objective = {key: int(value == 1) for key, value in ranked.items()}
    verifiers = log.verifier_names(rollout_id)
    class_counts = log.class_counts(rollout_id)
    generated, accepted = len(branches), sum(objective.values())
    eta = yield_rate(accepted, generated)
    as_mappings = [b.as_dict() for b in branches]  # verifiers take a branch as a mapping
    flake, items = rerun_flakiness(session, as_mappings, verifiers, reruns)
    leaked, planted = canary_leaks(as_mappings)
    clean = sum(class_counts.get(c, 0) for c in CLEAN_CLASSES)
    model_cost = sum(float(b.cost_usd or 0.0) for b in branches)
    verdict_cost = log.verdict_cost(rollout_id)
    tokens = sum(int(b.tokens_in or 0) + int(b.tokens_out or 0) for b in branches)
    heldout = await heldout_with_memories(session, rollout_id, memory_k, heldout_run_ids)
    health = health_rows(branches, {k: v == 1 for k, v in objective.items()})
    before = previous_fork(log, rollout_id)
    collapse = (
        None
        if before is None
        else collapse_warning(summary(log, before), fork_summary(rollout_id, health))
    )
    figures = [
        Figure(
            "yield_eta",
            eta,
            "share",
            f"{accepted} accepted (every verifier of {', '.join(verifiers) or 'none'} passed) "
            f"of {generated} branches generated",
        ),
        Figure(
            "flakiness_r_flake",
            flake if items else None,
            "share",
            f"{items} (branch, verifier) verdicts re-run {reruns} times afresh, share that changed",
        ),
        Figure(
            "canary_leak_rate",
            leaked / planted if planted else None,
            "share",
            f"{leaked} of {planted} synthetic secrets ({len(CANARY_KINDS)} kinds) planted one "
            "per branch record survived the export's redaction (scrub_json)",
        ),
        Figure(
            "cost_per_clean_usd",
            (model_cost + verdict_cost) / clean if clean else None,
            "usd",
            f"model ${model_cost:.6f} + verifiers ${verdict_cost:.6f} over {clean} clean "
            "(pristine or recovery) trajectories",
        ),
        Figure(
            "tokens_per_clean",
            tokens / clean if clean else None,
            "tokens",
            f"{tokens} fork tokens (in + out) over {clean} clean trajectories",
        ),
        _heldout_figure(heldout, memory_k),
    ]
    lh = loop_health(health)
    warnings = [w for w in (lax_warning(eta), collapse) if w]
    if heldout["paired"] is not None and not heldout["paired"]["powered"]:
        warnings.append(
            f"held-out comparison not powered (n={heldout['paired']['n']} units): "
            "read the gain as a best-effort estimate"
        )
    return {
        "rollout_id": rollout_id,
        "figures": [f.__dict__ for f in figures],
        "warnings": warnings,
        "classes": class_counts,
        "heldout": heldout,
        "loop_health": {**lh.__dict__, **fork_summary(rollout_id, health).__dict__},
        "compared_with": before,
        "questions": [{**h.__dict__, "informative": h.informative} for h in health],
        "simulated_model": session.config.uses_sim,
    }


def _heldout_figure(heldout: dict[str, Any], memory_k: int) -> Figure:
    p = heldout["paired"]
    if p is None:
        why = (
            "no memories stored from this rollout (it was ranked with --no-memory, or none passed)"
            if not heldout["memories"]
            else "no test-pool questions"
            if not heldout["test_questions"]
            else "memory_k is 0"
        )
        return Figure("heldout_gain_pp", None, "pp", f"not measured: {why}")
    if not p["n"]:
        return Figure("heldout_gain_pp", None, "pp", "not measured: no paired test units")
    gain = 100.0 * (p["accuracy"] - p["baseline_accuracy"])
    return Figure(
        "heldout_gain_pp",
        gain,
        "pp",
        f"test pool, {p['n']} paired units: {p['accuracy']:.3f} with up to {memory_k} of "
        f"{heldout['memories']} memories of this rollout vs {p['baseline_accuracy']:.3f} "
        f"without; {p['wins']} won, {p['losses']} lost, exact McNemar p={p['mcnemar_p']:.4g}, "
        f"{'powered' if p['powered'] else 'not powered'}",
    )
