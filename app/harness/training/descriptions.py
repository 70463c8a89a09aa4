"""Descriptions are trained text (slow update, skill_mode "progressive").

From the validation re-run R's activation failures (app/harness/skills/activation.py failures: the
skill not opened, another opened, or this one opened for other task types' cases) the evolver
proposes a new description per skill file. A proposal is parsed defensively (one JSON object,
a non-empty string, whitespace collapsed, control characters removed, at most 1,024
characters: the Agent Skills limit) and accepted only through the gate:

- activation: the sequential e-process of core/evolution/gate.py (SequentialGate, the run's own
  GateParams) on paired family outcomes "the right skill was opened", baseline = current
  description, candidate = proposed one, over the task type's gate ladder
  (app/harness/training/gate_ladder.py); it must accept;
- accuracy: the same e-process on the same rollouts' correctness must not stop for harm, and
  the candidate may not lose more families than it wins;
- precision: on validation questions of the other task types the candidate may not open this
  skill more often than R did.

An accepted description also lifts the blacklist of body edits the gate refused for the task
types this skill serves (they were measured on rollouts that never opened the skill).
An accepted description becomes a new skills version whose only change is the sidecar
`_skills.json` (app/harness/skills/agent_skills.py), so version diffs show it like a body diff.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from string import Template
from typing import Any

from loguru import logger

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import run_inference
from app.harness.rollouts.question_units import unit_correctness_view
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.skills.activation import failures, from_steps
from app.harness.skills.agent_skills import (
    MAX_DESCRIPTION,
    SIDECAR,
    default_name,
)
from app.harness.training.contamination_guard import refused_as_contamination
from app.harness.training.train_state import TrainContext, TrainState, new_test_params
from app.harness.training.vocabulary import Count
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.harness_log import RunStatus
from app.harness.workspace.store import read_sidecar, write_sidecar
from app.paths import read_prompt
from app.providers.errors import BudgetExceeded, ProviderError
from core.evolution.acceptance import chunks
from core.evolution.budget import resolve_skill_file
from core.evolution.edits import sanitize_text
from core.evolution.gate import GateAction, GateStopReason, SequentialGate
from core.jsonscan import find_json_object
from core.types import Question

MAX_SHOWN = 8
STEAL_SAMPLE = 48


def parse_description(raw: str) -> tuple[str | None, str]:
    """(description, error): the evolver's reply is untrusted."""
    obj = find_json_object(raw or "", ("description",))
    if obj is None:
        return None, "no JSON object in the reply"
    value = obj.get("description")
    if not isinstance(value, str):
        return None, "'description' is missing or not a string"
    text = " ".join(sanitize_text(value).split())
    if not text:
        return None, "'description' is empty"
    if len(text) > MAX_DESCRIPTION:
        return None, f"'description' is {len(text)} characters (max {MAX_DESCRIPTION})"
    return text, ""


def with_description(prompts: AgentPrompts, file: str, description: str) -> AgentPrompts:
    side = read_sidecar(prompts.skills)
    entry = dict(side.get(file) or {"name": default_name(file)})
    entry["description"] = description
    side[file] = entry
    return replace(
        prompts,
        skills={**prompts.skills, SIDECAR: write_sidecar(side)},
        skills_version=f"{prompts.skills_version}+desc",
    )


def _question_lines(questions: list[Question], ids: list[str]) -> str:
    by_id = {q.question_id: q for q in questions}
    shown = [by_id[i] for i in ids if i in by_id][:MAX_SHOWN]
    return "\n".join(f"<question>{q.question}</question>" for q in shown) or "(none)"


async def evolve_descriptions(
    ctx: TrainContext, state: TrainState, epoch: int, prefix: str, r_run_id: str
) -> list[dict[str, Any]]:
    """Phase 6b of the slow update; returns one record per skill file considered."""
    session = ctx.session
    found = failures(ctx.log, r_run_id)
    val = list(ctx.pools.validation)
    template = read_prompt("evolve_description.md")
    records = []
    rejected = _rejected_before(ctx, epoch)
    for file in sorted(found):
        prompts = session.agent_prompts()
        if file not in prompts.skills or not (found[file]["none"] or found[file]["wrong"]):
            continue
        record = await _one(
            ctx,
            state,
            epoch,
            prefix,
            prompts,
            file,
            found[file],
            val,
            Template(template).safe_substitute(
                rejected="\n".join(f"- {t}" for t in rejected.get(file, [])) or "(none)"
            ),
            r_run_id,
        )
        records.append(record)
    if records:
        write_json_atomic(
            ctx.root / "reports" / "epochs" / f"e{epoch}_descriptions.json",
            {"epoch": epoch, "run_id": state.train_id, "records": records},
        )
    return records


async def _one(
    ctx: TrainContext,
    state: TrainState,
    epoch: int,
    prefix: str,
    prompts: AgentPrompts,
    file: str,
    fails: dict[str, list[str]],
    val: list[Question],
    template: str,
    r_run_id: str,
) -> dict[str, Any]:
    entries = {f: (n, d) for f, n, d in prompts.catalog()}
    name, old = entries[file]
    prompt = Template(template).safe_substitute(
        name=name,
        description=old,
        max_chars=MAX_DESCRIPTION,
        catalog="\n".join(f"- {n}: {d}" for n, d in entries.values()),
        missed=_question_lines(val, fails["none"] + fails["wrong"]),
        stolen=_question_lines(val, fails["stolen"]),
    )
    record: dict[str, Any] = {
        "file": file,
        "name": name,
        "old": old,
        "new": None,
        "missed": len(fails["none"]) + len(fails["wrong"]),
        "stolen": len(fails["stolen"]),
        "action": "no_proposal",
    }
    try:
        with calls_logged_as(prefix + "describe"):
            reply = await ctx.session.providers["evolver"].complete(
                [{"role": "user", "content": prompt}],
                temperature=0.0,
                max_tokens=512,
                seed=epoch,
                role="evolver",
            )
        new, error = parse_description(reply.text)
    except BudgetExceeded:
        raise
    except ProviderError as e:
        new, error = None, f"provider error: {str(e)[:200]}"
    if new is None or new == old:
        record["reason"] = error or "unchanged"
        return record
    record["new"] = new
    if refused_as_contamination(ctx, state, f"description of {file}", new):
        record["action"] = "contamination"
        return record
    cand = with_description(prompts, file, new)
    verdict = await _gate(ctx, state, prefix, prompts, cand, file, val, r_run_id)
    record.update(verdict)
    if record["action"] == GateAction.ACCEPT:
        files = ctx.session.version_files("skills", ctx.session.paths.skills_version)
        files[SIDECAR] = cand.skills[SIDECAR]
        record["new_version"] = ctx.session.publish_version(
            "skills",
            files,
            source="slow_update:description",
            run_id=state.train_id,
            description=f"e{epoch} description of {file}: {old[:40]!r} -> {new[:60]!r}",
        )
        state.count(Count.DESCRIPTIONS_ACCEPTED)
        state.final_accepts += 1
        # Body edits refused while the skill was not being opened were measured on rollouts
        # that never read them: that evidence says nothing about them now, so they are no
        # longer blacklisted for the task types this skill serves.
        for task_type in ctx.task_types:
            if resolve_skill_file(task_type, files) == file:
                state.rejected.pop(task_type, None)
    else:
        state.count(Count.DESCRIPTIONS_REJECTED)
    logger.info(
        "e{} description {}: {} ({})", epoch, file, record["action"], record.get("reason", "")
    )
    return record


def _rejected_before(ctx: TrainContext, epoch: int) -> dict[str, list[str]]:
    """Descriptions the gate refused in earlier epochs, per file (from their reports)."""
    out: dict[str, list[str]] = {}
    for e in range(1, epoch):
        path = ctx.root / "reports" / "epochs" / f"e{e}_descriptions.json"
        try:
            records = json.loads(path.read_text(encoding="utf-8")).get("records", [])
        except (OSError, ValueError, AttributeError):
            continue
        for r in records if isinstance(records, list) else []:
            if (
                isinstance(r, dict)
                and r.get("action") == GateAction.REJECT
                and isinstance(r.get("new"), str)
                and isinstance(r.get("file"), str)
            ):
                out.setdefault(r["file"], []).append(r["new"])
    return out


def _task_type_for(ctx: TrainContext, prompts: AgentPrompts, file: str) -> str | None:
    owners = [t for t in ctx.task_types if resolve_skill_file(t, prompts.skills) == file]
    return owners[0] if owners else None


async def _rollout(
    ctx: TrainContext, prompts: AgentPrompts, questions: list[Question], run_id: str
) -> dict[str, tuple[bool, bool]]:
    """question_id -> (right skill opened, correct)."""
    session = ctx.session
    if not questions:
        return {}
    await run_inference(
        questions,
        provider=session.providers["agent"],
        prompts=prompts,
        log=ctx.log,
        run_id=run_id,
        settings=session.agent_settings,
        guard=False,
    )
    wanted = {q.question_id for q in questions}
    out = {}
    for row in ctx.log.trajectories(run_id, by_question=False):
        if row.question_id in wanted:
            a = from_steps(row.task_type, row.steps_json)
            out[row.question_id] = (bool(a and a.expected in a.opened), bool(row.correct))
    return out


async def _gate(
    ctx: TrainContext,
    state: TrainState,
    prefix: str,
    base: AgentPrompts,
    cand: AgentPrompts,
    file: str,
    val: list[Question],
    r_run_id: str,
) -> dict[str, Any]:
    task_type = _task_type_for(ctx, base, file)
    if task_type is None:
        return {"action": GateAction.REJECT, "reason": "no task type uses this skill"}
    stem = file[:-3]
    ladder = ctx.gate_pools.ladder_for(
        task_type, set(), key=f"{prefix}desc-{stem}", with_stage2=False, with_draws=False
    ).truncated(ctx.config.gate.n_max)
    horizon = max(1, len(ladder.families))  # no stage 2: descriptions get no probation
    singletons = all(len(ids) == 1 for _, ids in ladder.families)
    act_gate = SequentialGate(  # the test that accepts: numbered for the run-level level
        new_test_params(ctx.config.gate, state),
        horizon=horizon,
        stage1=horizon,
        singletons=singletons,
    )
    acc_gate = SequentialGate(
        ctx.gate_params, horizon=horizon, stage1=horizon, singletons=singletons
    )
    base_id, cand_id = f"{prefix}desc-{stem}-base", f"{prefix}desc-{stem}-cand"
    ctx.session.register(base_id, "gate", base, parent_run_id=state.train_id)
    ctx.session.register(cand_id, "gate", cand, parent_run_id=state.train_id)
    evidence = []
    acc_w = acc_l = 0
    for chunk in chunks(ladder.families):
        units = [ctx.units[u] for _, ids in chunk for u in ids]
        questions = [q for u in units for q in u.questions]
        b = await _rollout(ctx, base, questions, base_id)
        c = await _rollout(ctx, cand, questions, cand_id)
        b_hit = unit_correctness_view(units, {k: v[0] for k, v in b.items()})
        c_hit = unit_correctness_view(units, {k: v[0] for k, v in c.items()})
        b_ok = unit_correctness_view(units, {k: v[1] for k, v in b.items()})
        c_ok = unit_correctness_view(units, {k: v[1] for k, v in c.items()})
        for family, ids in chunk:
            act_gate.observe_family(family, [(u, b_hit[u], c_hit[u]) for u in ids])
            if not acc_gate.done:  # it stops only for harm (or an early decision)
                acc_gate.observe_family(family, [(u, b_ok[u], c_ok[u]) for u in ids])
            g = sum(int(c_ok[u]) - int(b_ok[u]) for u in ids)
            acc_w, acc_l = acc_w + (g > 0), acc_l + (g < 0)
            evidence += [
                {
                    "unit_id": u,
                    "family": family,
                    "act_base": b_hit[u],
                    "act_cand": c_hit[u],
                    "acc_base": b_ok[u],
                    "acc_cand": c_ok[u],
                }
                for u in ids
            ]
            if act_gate.done:
                break
        if act_gate.done:
            break
    act = act_gate.finish(exhausted=not act_gate.done)
    acc = acc_gate.finish(exhausted=True)
    steal = await _steal_check(ctx, cand, file, val, r_run_id, prefix, stem, state)
    for run_id in (base_id, cand_id):
        ctx.log.finish_run(run_id, RunStatus.DONE, {"description_gate": file})
    verdict = {
        "activation": {
            "action": act.action,
            "W": act.W,
            "L": act.L,
            "e_value": act.e_value,
            "n_used": act.n_used,
            "stop_reason": act.stop_reason,
        },
        "accuracy": {"W": acc_w, "L": acc_l, "harm": acc.stop_reason == GateStopReason.HARM},
        "steal": steal,
        "evidence": evidence,
        "task_type": task_type,
    }
    if act.action != GateAction.ACCEPT:
        reason = f"activation gate {act.action} ({act.stop_reason}, W={act.W} L={act.L})"
    elif acc.stop_reason == GateStopReason.HARM:
        reason = f"accuracy harmed (W={acc_w} L={acc_l}, E_harm={acc.e_harm:.1f})"
    elif steal["cand"] > steal["base"]:
        reason = f"opened for {steal['cand']} questions of other task types (was {steal['base']})"
    else:
        return {
            **verdict,
            "action": GateAction.ACCEPT,
            "reason": f"activation W={act.W} L={act.L} e={act.e_value:.1f}; accuracy "
            f"W={acc_w} L={acc_l}",
        }
    return {**verdict, "action": GateAction.REJECT, "reason": reason}


async def _steal_check(
    ctx: TrainContext,
    cand: AgentPrompts,
    file: str,
    val: list[Question],
    r_run_id: str,
    prefix: str,
    stem: str,
    state: TrainState,
) -> dict[str, int]:
    """How many validation questions of other task types open `file`: in R, and with `cand`."""
    others = [q for q in val if resolve_skill_file(q.task_type, cand.skills) != file]
    sample = random.Random(f"steal:{prefix}:{stem}").sample(others, min(STEAL_SAMPLE, len(others)))
    ids = {q.question_id for q in sample}
    base = 0
    for row in ctx.log.trajectories(r_run_id, by_question=False):
        a = from_steps(row.task_type, row.steps_json)
        base += bool(row.question_id in ids and a and file in a.opened)
    run_id = f"{prefix}desc-{stem}-steal"
    ctx.session.register(run_id, "gate", cand, parent_run_id=state.train_id)
    await run_inference(
        sample,
        provider=ctx.session.providers["agent"],
        prompts=cand,
        log=ctx.log,
        run_id=run_id,
        settings=ctx.session.agent_settings,
        guard=False,
    )
    ctx.log.finish_run(run_id, RunStatus.DONE, {"description_gate": file})
    opened = 0
    for row in ctx.log.trajectories(run_id, by_question=False):
        a = from_steps(row.task_type, row.steps_json)
        opened += bool(a and file in a.opened)
    return {"n": len(sample), "base": base, "cand": opened}
