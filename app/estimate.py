"""`estimate`: model calls per role, tokens, cost and wall time of a `train`, before it runs.

How (docs/offline.md says it for users):
1. the call counts come from the training loop itself: `train` runs on a throw-away copy of the
   workspace (in its `.staging/`, removed after) with every role on `sim/oracle`
   (app/providers/sim/oracle.py) as a stand-in that learns the way the built-in simulated world
   does: it starts at ASSUMED_START_ACCURACY, each question needs one of STAND_IN_RULES rules
   per task type, and its evolver proposes those rules among generic useless ones, so edits are
   accepted, rolled back and re-tested as in a learning run, and a fifth of its failures are
   diagnosed as the system prompt's, so prompt evolution and its paired test run too. How much
   a real model learns is not known before the run: the range's other end is the same stand-in
   never learning (every epoch run, no early stop);
2. the tokens of an agent call are measured on one sampled rollout per task type with the
   configured agent model (real calls on a real model: their number is printed); the evolver's
   and judge's input tokens are those of the copy's real prompts (four characters a token), their
   output tokens the copy's for a simulated model and `ASSUMED_REPLY_TOKENS` for a real one;
3. prices: notional for `sim/...` models (app/providers/sim/provider.py), `price_in_per_mtok` /
   `price_out_per_mtok` when set, else litellm's price map; a model with no known price has no
   cost (never 0);
4. wall time: calls times the sampled calls' mean latency, agent calls `concurrency` at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from loguru import logger

from app.harness.rollouts.benchmark_validation import power_findings
from app.harness.workspace.atomic import read_json_object, write_json_atomic
from app.harness.workspace.config import RunConfig, fingerprint
from app.harness.workspace.harness_log.reader import open_reader
from app.harness.workspace.harness_log.rows import RoleCalls
from app.harness.workspace.store import Seed
from app.harness.workspace.workspace import WorkspacePaths
from app.providers.sim.notices import ORACLE_MODEL
from app.providers.sim.provider import sim_price
from core.types import Question

ESTIMATE_FILE = "estimate.json"  # in the workspace's analyses/
ASSUMED_START_ACCURACY = 0.3  # the stand-in's accuracy before any edit
STAND_IN_RULES = 5  # the learning stand-in: each question needs one of 5 rules per task type
ASSUMED_REPLY_TOKENS = 400  # a real evolver's or judge's reply (capped at max_tokens)
ROLES = ("agent", "evolver", "judge")


@dataclass(frozen=True)
class RoleEstimate:
    role: str
    model: str
    calls: int  # new (paid) calls; cache hits are free
    calls_low: int
    calls_high: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None: no price known for the model
    price_note: str  # "notional simulated prices", "configured prices", "litellm price map",
    # or "no price known for MODEL"


@dataclass(frozen=True)
class Estimate:
    roles: tuple[RoleEstimate, ...]
    calls: int
    calls_low: int
    calls_high: int
    cost_usd: float | None  # None when a role's model has no known price
    wall_seconds: float
    sampled_calls: int  # calls of the sampled rollouts (real calls on a real model)
    sampled_real_calls: int  # the sampled calls that went to a paid (non-simulated) model
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    simulated: bool = False
    # the stand-in's counted calls up to its first step's close; None when `max_calls` ended its
    # run before that (a budget that small keeps nothing)
    first_step_calls: int | None = None


async def estimate_async(root: Path, config: RunConfig) -> Estimate:
    """The estimate for `train` of the workspace at `root` with `config` (nothing in the
    workspace changes but `analyses/estimate.json`, written at the end)."""
    from app.harness.rollouts.pools import split_pools
    from app.harness.rollouts.session import Session
    from app.harness.workspace import workspace as ws

    paths = ws.resolve_paths(root)
    scratch = root / ".staging" / f"estimate-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        seed = ws_seed(paths)
        # the sample first: a refused model (a missing key, a simulated world that does not
        # know this benchmark) is refused before the dry runs
        copy = scratch / "sample"
        ws.init_workspace(copy, seed, paths.questions_dir, announce=False)
        sampled: dict[str, RoleCalls] = {}
        sample_seconds = 0.0
        for name, run_config in (("model", config), ("stand-in", _stand_in(config, 0))):
            with Session(copy, run_config) as session:
                bench = session.benchmark
                pools = split_pools(bench.questions, bench.split, bench.seed)
                sample = _one_per_task_type(pools.diagnosis or bench.questions)
                started = time.perf_counter()
                run_id = f"estimate-sample-{name}"
                await session.infer(list(sample), run_id, "eval", label=f"estimate {name}")
                if name == "model":
                    sample_seconds = time.perf_counter() - started
                session.recorder.flush()
            sampled[name] = _agent_calls(copy / "harness.db", run_id)
        runs: list[DryRun] = []
        # the estimate first, then the range's other end; sim/oracle itself is known not to
        # learn (unless sim_oracle_rules says it does), so for it the order turns round
        order = (STAND_IN_RULES, 0)
        if config.agent_model == ORACLE_MODEL:
            order = (config.sim_oracle_rules, STAND_IN_RULES)
        for rules in order:
            copy = scratch / f"rules{rules}"
            ws.init_workspace(copy, seed, paths.questions_dir, announce=False)
            runs.append(await _dry_run(copy, config, rules))
        # the same check, and the same words, as validate-benchmark's (one implementation)
        warnings = tuple(f.message for f in power_findings(bench, gate=config.gate))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    by_role = [run.calls for run in runs]
    result = _combine(config, by_role, sampled["model"], sampled["stand-in"], sample_seconds)
    first = runs[0].first_step_calls
    if first is None and config.max_calls is not None:
        warnings += (
            f"max_calls = {config.max_calls} ran out before the stand-in's first step closed; a "
            "step cut short goes back to its checkpoint, so a run with this budget would likely "
            "learn nothing: raise max_calls",
        )
    result = replace(result, warnings=warnings, first_step_calls=first)
    stored = {**asdict(result), "config": fingerprint(config, "")}
    write_json_atomic(paths.root / "analyses" / ESTIMATE_FILE, stored)
    return result


def ws_seed(paths: WorkspacePaths) -> Seed:
    """The workspace's current skills and prompts as a seed for a scratch copy."""
    from app.harness.workspace.workspace import read_version_files

    return Seed(
        name="estimate",
        description="scratch copy for estimate",
        skills=read_version_files(paths.skills_dir),
        prompts=read_version_files(paths.prompts_dir),
    )


def _one_per_task_type(questions: tuple[Question, ...]) -> list[Question]:
    seen: dict[str, Question] = {}
    for q in questions:
        seen.setdefault(q.task_type, q)
    return list(seen.values())


def _agent_calls(db: Path, run_id: str) -> RoleCalls:
    """The agent calls of one run of a scratch copy's log, summed."""
    with open_reader(db) as log:
        return log.calls.role_totals(run_id, "agent")


def _stand_in(config: RunConfig, rules: int) -> RunConfig:
    """`config` with every role on sim/oracle (`rules` > 0: the learning stand-in)."""
    return config.model_copy(
        update={
            "agent_model": ORACLE_MODEL,
            "evolver_model": ORACLE_MODEL,
            "judge_model": ORACLE_MODEL,
            "sim_oracle_accuracy": (
                config.sim_oracle_accuracy
                if config.agent_model == ORACLE_MODEL
                else ASSUMED_START_ACCURACY
            ),
            "sim_oracle_rules": rules,
            "max_cost_usd": None,
            # a stand-in that never improves would stop early; a learning run goes on
            "early_stop_patience": config.epochs,
        }
    )


@dataclass(frozen=True)
class DryRun:
    """One stand-in training: its calls by role, and its first step's counted calls (None when
    `max_calls` ended the run before that step closed)."""

    calls: dict[str, RoleCalls]
    first_step_calls: int | None


async def _dry_run(copy: Path, config: RunConfig, rules: int) -> DryRun:
    from app.harness.rollouts.session import Session
    from app.harness.training.call_budget import first_step_calls, ledger_paid_calls
    from app.harness.training.checkpoint import load_checkpoint
    from app.harness.training.runner import Runner

    logger.disable("app")  # the dry run's own progress lines would read as a real run's
    try:
        with Session(copy, _stand_in(config, rules)) as session:
            await Runner(session).train_async(resume=False)
    finally:
        logger.enable("app")
    with open_reader(copy / "harness.db") as log:
        calls = {str(c.role): c for c in log.calls.by_role()}
    progress = load_checkpoint(copy)["progress"]
    if not progress.get("global_step"):
        return DryRun(calls, None)
    train_id = str(progress["train_id"])
    paid = ledger_paid_calls(copy / "response_cache.db", train_id)
    return DryRun(calls, first_step_calls(paid, train_id))


def _paid(c: RoleCalls | None) -> int:
    return 0 if c is None else c.calls - (c.cache_hits or 0)


def _per_call(c: RoleCalls | None) -> tuple[float, float]:
    if c is None or not c.calls:
        return 0.0, 0.0
    return (c.tokens_in or 0) / c.calls, (c.tokens_out or 0) / c.calls


def _scaled(
    dry_in: float, dry_out: float, model: RoleCalls, stand_in: RoleCalls
) -> tuple[float, float]:
    """Per-call agent tokens of the dry run times the model's / the stand-in's on the sample
    (the stand-in's prompts grow with the skills as the model's would; its replies are short)."""
    m_in, m_out = _per_call(model)
    s_in, s_out = _per_call(stand_in)
    return (
        dry_in * (m_in / s_in if s_in else 1.0),
        dry_out * (m_out / s_out if s_out else 1.0),
    )


def _combine(
    config: RunConfig,
    runs: list[dict[str, RoleCalls]],
    sampled_agent: RoleCalls,
    sampled_stand_in: RoleCalls,
    sample_seconds: float,
) -> Estimate:
    roles = []
    for role in ROLES:
        model = config.models[role]
        counts = [_paid(run.get(role)) for run in runs]
        calls = counts[0]
        dry_in, dry_out = _per_call(runs[0].get(role))
        if role == "agent":  # the stand-in's tokens, scaled to the model's on the same sample
            per_in, per_out = _scaled(dry_in, dry_out, sampled_agent, sampled_stand_in)
        elif model.startswith("sim/"):
            per_in, per_out = dry_in, dry_out
        else:
            per_in, per_out = dry_in, float(min(config.max_tokens, ASSUMED_REPLY_TOKENS))
        tokens_in, tokens_out = round(calls * per_in), round(calls * per_out)
        cost, note = _cost(config, model, tokens_in, tokens_out)
        roles.append(
            RoleEstimate(
                role, model, calls, min(counts), max(counts), tokens_in, tokens_out, cost, note
            )
        )
    sampled_calls = sampled_agent.calls
    latency = sample_seconds / sampled_calls if sampled_calls else 0.0
    agent_calls = roles[0].calls
    other_calls = sum(r.calls for r in roles[1:])
    wall = latency * (agent_calls / config.concurrency + other_calls)
    costs = [r.cost_usd for r in roles]
    simulated = config.uses_sim
    return Estimate(
        roles=tuple(roles),
        calls=sum(r.calls for r in roles),
        calls_low=sum(r.calls_low for r in roles),
        calls_high=sum(r.calls_high for r in roles),
        cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        wall_seconds=wall,
        sampled_calls=sampled_calls,
        sampled_real_calls=0 if config.agent_model.startswith("sim/") else sampled_calls,
        assumptions=(
            _counts_assumption(config),
            "agent tokens per call: the dry run's, scaled by the agent model's / the stand-in's "
            "on one sampled rollout per task type",
            "evolver/judge input tokens: the copy's real prompts at 4 characters a token; "
            + (
                "output tokens the copy's"
                if all(config.models[r].startswith("sim/") for r in ROLES[1:])
                else f"output tokens {ASSUMED_REPLY_TOKENS} a call (assumed) on a real model"
            ),
            "wall time: the sampled calls' mean latency; agent calls "
            f"{config.concurrency} at a time (concurrency), evolver and judge calls one at a time",
        ),
        simulated=simulated,
    )


def _counts_assumption(config: RunConfig) -> str:
    if config.agent_model == ORACLE_MODEL:
        return (
            "call counts: train run on a copy with every role on sim/oracle as configured; the "
            f"range's other end is a stand-in that learns ({STAND_IN_RULES} rules per task type)"
        )
    return (
        "call counts: train run on a copy with every role on sim/oracle as a stand-in that "
        f"starts at accuracy {ASSUMED_START_ACCURACY:g} and learns: each question needs one of "
        f"{STAND_IN_RULES} rules per task type, which lift it to 0.9 once an edit adds it, and "
        "a fifth of its failures are the system prompt's to fix (prompt evolution runs); the "
        "range's other end is the same stand-in never learning, every epoch run"
    )


def _cost(
    config: RunConfig, model: str, tokens_in: int, tokens_out: int
) -> tuple[float | None, str]:
    if model.startswith("sim/"):  # sim/<world>-strong is priced higher (provider.py)
        price_in, price_out = sim_price(model, config.sim_strong_price_factor)
        return (tokens_in * price_in + tokens_out * price_out) / 1e6, "notional simulated prices"
    if config.price_in_per_mtok is not None and config.price_out_per_mtok is not None:
        cost = (tokens_in * config.price_in_per_mtok + tokens_out * config.price_out_per_mtok) / 1e6
        return cost, "configured prices"
    price = _litellm_price(model)
    if price is None:
        return None, f"no price known for {model}"
    return tokens_in * price[0] + tokens_out * price[1], "litellm price map"


def _litellm_price(model: str) -> tuple[float, float] | None:
    """(USD per input token, per output token) from litellm's local price map, as the
    provider's preflight reads it (get_model_info)."""
    from app.providers.litellm_provider import load_litellm

    try:
        info = load_litellm().get_model_info(model)
    except Exception:  # litellm raises a bare Exception for an unknown model
        return None
    cost_in, cost_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(cost_in, int | float) or not isinstance(cost_out, int | float):
        return None
    if not cost_in and not cost_out:
        return None
    return float(cost_in), float(cost_out)


def estimate_lines(e: Estimate) -> list[str]:
    lines = ["estimate for train (before it runs):"]
    for r in e.roles:
        cost = f"${r.cost_usd:.4f}" if r.cost_usd is not None else r.price_note
        lines.append(
            f"  {r.role:<8} {r.model:<24} calls {r.calls} (range {r.calls_low}-{r.calls_high})  "
            f"tokens {r.tokens_in}/{r.tokens_out}  cost {cost}"
            + (f" ({r.price_note})" if r.cost_usd is not None else "")
        )
    total = f"${e.cost_usd:.4f}" if e.cost_usd is not None else "unknown (a model has no price)"
    lines.append(
        f"  total    calls {e.calls} (range {e.calls_low}-{e.calls_high})  cost {total}  "
        f"wall time ~{e.wall_seconds:.0f}s"
    )
    lines.append(
        f"  measured on {e.sampled_calls} sampled agent call(s), one rollout per task type"
        + (f"; {e.sampled_real_calls} of them real, paid calls" if e.sampled_real_calls else "")
    )
    if e.first_step_calls is not None:
        lines.append(
            f"  first step: {e.first_step_calls} calls before it closes in the stand-in's run, "
            "where a bundle rarely loses a question; a real run's can take about twice that "
            "(a run keeps nothing before its first step closes: a smaller max_calls learns nothing)"
        )
    lines += [f"  assumes: {a}" for a in e.assumptions]
    lines += [f"warning: {w}" for w in e.warnings]
    return lines


def pin_estimate(root: Path, config: RunConfig) -> None:
    """At the start of a fresh `train`: tie the stored estimate (if any, and not tied to an
    earlier run) to this run: its id, the first model call it will make, and whether the
    estimate was made for this config. `report` then compares it with this run's calls."""
    path = Path(root) / "analyses" / ESTIMATE_FILE
    if not path.is_file():
        return
    est = read_json_object(path, "estimate")
    db = Path(root) / "harness.db"
    first_call, trains, tied = 1, 0, False
    if db.is_file():
        with open_reader(db) as log:
            first_call = log.tables.next_call_id()
            trains = sum(1 for r in log.runs() if r.kind == "train")
            tied = bool(est.get("train_id")) and log.run(str(est["train_id"])) is not None
    if tied:  # made for a run that has started since; a new estimate is needed for this one
        return
    est["train_id"] = f"train{trains + 1}"  # as the runner names a new run (Runner._new_train_id)
    est["first_call_id"] = first_call
    est["same_config"] = est.get("config") == fingerprint(config, "")
    write_json_atomic(path, est)


def _actual_calls(root: Path, est: dict[str, Any]) -> dict[str, dict[str, float]]:
    """New calls and cost per role of the run the estimate was tied to (its baseline too)."""
    with open_reader(Path(root) / "harness.db") as log:
        rows = log.tables.paid_calls_of_train(est["first_call_id"], est["train_id"])
    return {str(r.role): {"paid": r.paid, "cost": r.cost_usd} for r in rows}


def estimate_vs_actual(root: Path) -> list[str]:
    """`report`'s lines comparing the stored estimate with the run it was made for."""
    path = Path(root) / "analyses" / ESTIMATE_FILE
    if not path.is_file():
        return []
    est = read_json_object(path, "estimate")
    if not est.get("train_id") or not (Path(root) / "harness.db").is_file():
        return ["\nestimate   made (analyses/estimate.json); no train has run since"]
    actual = _actual_calls(root, est)
    lines = [
        f"\nestimate vs actual for {est['train_id']} (new model calls; analyses/estimate.json)"
    ]
    if not est.get("same_config"):
        lines.append("  note: the estimate was made for another config than the run's")
    for r in est.get("roles", []):
        a = actual.get(r["role"], {"paid": 0, "cost": 0.0})
        est_cost = "n/a" if r.get("cost_usd") is None else f"${r['cost_usd']:.4f}"
        lines.append(
            f"  {r['role']:<8} calls {r['calls']} (range {r['calls_low']}-{r['calls_high']}) "
            f"vs {int(a['paid'])}  cost {est_cost} vs ${a['cost']:.4f}"
        )
    total = sum(int(a["paid"]) for a in actual.values())
    lines.append(f"  total    calls {est['calls']} vs {total}")
    return lines


def dumps(e: Estimate) -> str:
    return json.dumps(asdict(e), indent=2)
