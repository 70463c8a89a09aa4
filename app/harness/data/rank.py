"""rank: verify, judge and rank a fork's branches, then remember the verified winners.

For each question of a rollout (app/harness/data/fork.py):
1. the verifier pipeline (app/harness/data/verifiers.py) gives each branch its objective score
   (with `cascade`, cheapest verifier first, stopping at a branch's first non-pass:
   app/harness/data/curation.py `verify_cascade`);
2. the judge (app/harness/data/judge.py) scores each distinct final answer k times and compares
   every pair of distinct answers in both orders, all under one call cap per batch (a batch
   is one question's branches, as the ranker sees them); a pairwise preference counts only
   when both orders agree (disagreement is a tie, a sample judged in one order only is left
   out: core.ranking.control_position), and the report gives the order-disagreement rate, the
   first-shown win rate and how often the longer answer won (verbosity)
   (branches with the same answer share its judgments: judging them again says nothing new);
3. core/ranking.py combines objective, judge (mean score / 10), Bradley–Terry strength
   (γ/(1 + γ)), a custom or rubric checker's score (`check`, as the fork recorded it) and any user reward `module:function` (called with the branch row and its
   components, returning a number in [0, 1]) with weights;
4. rankings and judgments are stored (replacing an earlier ranking of the rollout), the best
   objectively verified branch of each question becomes a memory (app/harness/rollouts/memory.py;
   never for test-pool questions, which would leak into held-out evaluation),
   and `analyses/rank_<rollout>.json` holds the report: pass@1, pass@N, the share of questions
   where the top branch is correct when a correct one exists, judge calls against the cap,
   and core.ranking.paired_report of top branch vs branch 0 (powered, MDD, McNemar p);
5. each branch gets its trajectory class (core/curation.py: pristine, recovery, verbose,
   negative), stored in `trajectory_classes`; the report counts them (and, for a cascade,
   gives per stage entered/passed/pass rate/mean cost, the yield and the costs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from loguru import logger

from app.errors import UserError
from app.harness.data.curation import classify_rollout, verify_cascade
from app.harness.data.fork import held_out_question_ids
from app.harness.data.judge import (
    CallBudget,
    Judge,
    JudgeSettings,
    Sample,
    mean_score,
    same_model_warning,
    sample_row,
)
from app.harness.data.verifiers import load_user_code, verify_rollout
from app.harness.rollouts import memory
from app.harness.rollouts.custom_checkers import UserCodeError
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log.forks import JudgmentRecord, RankingRecord
from app.harness.workspace.ids import check_run_id
from app.secrets import scrub
from core import ranking
from core.concurrency import fan_out
from core.scorecard import pass_at_1_and_n
from core.types import CHECKERS, Question

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session


def parse_weights(items: Sequence[str]) -> dict[str, float]:
    """`key=weight` items over the defaults; keys are objective, judge, bt or module:function."""
    weights = dict(ranking.DEFAULT_WEIGHTS)
    for item in items:
        key, sep, raw = item.rpartition("=")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or not key or not math.isfinite(value):
            raise UserError(f"--weight {item!r}: expected key=number")
        if key not in ranking.DEFAULT_WEIGHTS and ":" not in key:
            known = ", ".join(ranking.DEFAULT_WEIGHTS)
            raise UserError(
                f"--weight {item!r}: unknown key {key!r} (one of {known}, or module:function)"
            )
        weights[key] = value
    return weights


def _user_reward(
    fn: Callable[..., object], branch: dict[str, Any], components: dict[str, float], name: str
) -> float:
    try:
        value = fn(branch, dict(components))
    except UserCodeError as e:  # raised, hung or died in its worker: scores 0, one line
        logger.warning("reward {}: {}", name, scrub(e.reason)[:200])
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        logger.warning("reward {}: returned {!r}, not a number; scored 0", name, value)
        return 0.0
    return min(1.0, max(0.0, float(value)))


async def rank_rollout(
    session: Session,
    rollout_id: str,
    *,
    verifiers: Sequence[str] = ("checker",),
    weights: Mapping[str, float] | None = None,
    judge_cap: int | None = None,
    remember: bool = True,
    cascade: bool = False,
    verifier_costs: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    check_run_id(rollout_id, "rollout id")
    log, config = session.log, session.config
    run = log.run(rollout_id)
    if run is not None and run.kind == "ingest":
        # a trace is one recorded branch, judged by its user: nothing to rank it against
        raise UserError(
            f"{session.paths.db}: {rollout_id!r} is an ingest run, no fork: each trace is one "
            "recorded branch, so there are no branches to rank against each other; its "
            f"feedback is its verdict: `export -w {session.paths.root} {rollout_id} "
            "--allow-restricted` writes its good traces as SFT data and its bad ones as "
            f"preference negatives, `diagnose -w {session.paths.root} {rollout_id}` triages "
            "its failures (docs/ingest.md#as-training-data)"
        )
    if run is None or run.kind != "fork":
        raise UserError(f"{session.paths.db}: no fork run {rollout_id!r}")
    weights = dict(weights or ranking.DEFAULT_WEIGHTS)
    user_rewards = {k: load_user_code(k, "reward") for k in weights if ":" in k}
    if (warning := same_model_warning(config.judge_model, config.agent_model)) is not None:
        logger.warning(warning)
    with calls_logged_as(rollout_id):  # judge calls are logged (and paid) as the fork's
        return await _rank(
            session,
            rollout_id,
            verifiers,
            weights,
            user_rewards,
            judge_cap,
            remember,
            verifier_costs if cascade else None,
        )


async def _rank(
    session: Session,
    rollout_id: str,
    verifiers: Sequence[str],
    weights: dict[str, float],
    user_rewards: Mapping[str, Callable[..., object]],
    judge_cap: int | None,
    remember: bool,
    cascade_costs: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """`cascade_costs` (None: every verifier on every branch) runs the verifiers as a
    cost-ordered cascade (app/harness/data/curation.py) with these declared costs."""
    log, config = session.log, session.config
    cascade = None
    if cascade_costs is None:
        objective = verify_rollout(log, rollout_id, session.questions_by_id, verifiers)
    else:
        objective, cascade = verify_cascade(
            log, rollout_id, session.questions_by_id, verifiers, cascade_costs
        )
    # as mappings: the checkers and user reward functions take a branch as one
    rows = [b.as_dict() for b in log.branches(rollout_id)]
    by_q: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_q.setdefault(row["question_id"], []).append(row)
    cap = config.judge_max_calls_per_batch if judge_cap is None else judge_cap
    calls = capped = batches_at_cap = max_calls = 0
    judge = Judge(
        session.providers["judge"],
        JudgeSettings(
            samples=config.judge_samples, temperature=config.judge_temperature, max_calls=cap
        ),
        model=config.judge_model,
        concurrency=config.concurrency,
    )
    at = now_iso()
    judgment_rows: list[JudgmentRecord] = []
    ranking_rows: list[RankingRecord] = []
    winners: list[dict[str, Any]] = []
    winner_of: dict[str, int] = {}  # the best-ranked verified branch: negatives' reference
    top_correct, first_correct, any_correct = [], [], []
    passed: dict[str, list[bool]] = {}  # per question, each branch's objective pass
    controls: list[ranking.PairControl] = []  # pairwise bias controls, for the report
    longer: list[bool | None] = []
    budgets = {qid: CallBudget(cap) for qid in by_q}  # one batch = one question's branches
    groups_of = {qid: _answer_groups(branches) for qid, branches in by_q.items()}
    judged = await _judge_all(judge, session, by_q, groups_of, budgets)
    for qid, branches in by_q.items():
        budget = budgets[qid]
        question = session.questions_by_id.get(qid)
        qtext = question.question if question else ""
        groups = groups_of[qid]
        reps = [g[0] for g in groups.values()]
        scalar, pairwise = judged[qid]
        judge_scores: dict[int, float] = {}
        for k, rep in enumerate(reps):
            judgment_rows += [
                sample_row(rollout_id, qid, s, rep["branch_index"], None, config.judge_model, at)
                for s in scalar[k]
            ]
            judge_scores[rep["branch_index"]] = mean_score(scalar[k])
        prefs: list[tuple[int, int, str]] = []
        lengths = [len(rep["final_text"] or "") for rep in reps]
        for (i, j), samples in sorted(pairwise.items()):
            judgment_rows += [
                sample_row(
                    rollout_id,
                    qid,
                    s,
                    reps[i]["branch_index"],
                    reps[j]["branch_index"],
                    config.judge_model,
                    at,
                )
                for s in samples
            ]
            control = ranking.control_position(
                [
                    ranking.OrderedVerdict(
                        s.sample,
                        s.shown_first,
                        None if s.capped or s.parse_error else (s.preferred or "tie"),
                    )
                    for s in samples
                ]
            )
            controls.append(control)
            longer += [
                ranking.longer_preferred(p, lengths[i], lengths[j]) for p in control.reconciled
            ]
            prefs += [(i, j, p) for p in control.preferences]
        calls += budget.used
        capped += budget.capped
        max_calls = max(max_calls, budget.used)
        batches_at_cap += int(budget.capped > 0)
        strengths = ranking.bt_strengths(len(reps), prefs)
        group_of = {b["branch_index"]: gi for gi, g in enumerate(groups.values()) for b in g}
        components: dict[int, dict[str, float]] = {}
        for b in branches:
            rep_index = reps[group_of[b["branch_index"]]]["branch_index"]
            comp = {
                "objective": float(objective.get((qid, b["branch_index"]), 0)),
                "judge": judge_scores[rep_index] / 10.0,
                "bt": ranking.bt_component(strengths[group_of[b["branch_index"]]]),
            }
            if (score := checker_score(question, b)) is not None:
                comp["check"] = score
            for name, fn in user_rewards.items():
                comp[name] = _user_reward(fn, b, comp, name)
            components[b["branch_index"]] = comp
        ranked = ranking.rank(components, weights)
        for r in ranked:
            c = r.components
            ranking_rows.append(
                RankingRecord(
                    run_id=rollout_id,
                    question_id=qid,
                    branch_index=r.branch_index,
                    rank=r.rank,
                    reward=r.reward,
                    objective=c["objective"],
                    judge=c["judge"],
                    bt=c["bt"],
                    components_json=_json(c),
                )
            )
        by_index = {b["branch_index"]: b for b in branches}
        best = by_index[ranked[0].branch_index]
        winner_of[qid] = next(
            (r.branch_index for r in ranked if objective.get((qid, r.branch_index), 0) == 1),
            ranked[0].branch_index,
        )
        winners.append({**best, "question": qtext})
        top_correct.append(objective.get((qid, best["branch_index"]), 0) == 1)
        first_correct.append(objective.get((qid, 0), 0) == 1)
        passed[qid] = [objective.get((qid, b["branch_index"]), 0) == 1 for b in branches]
        any_correct.append(any(passed[qid]))
    log.replace_rankings(rollout_id, judgment_rows, ranking_rows)
    classes = classify_rollout(log, rollout_id, by_q, objective, winner_of)
    session.recorder.flush()
    mem = None
    if remember:  # test-pool questions never become memories: they would leak into held-out
        held_out = held_out_question_ids(  # evaluation (app/harness/rollouts/pools.py)
            session.benchmark, session.config.holdout_task_types
        )
        mem = memory.store_winners(
            log, rollout_id, [w for w in winners if w["question_id"] not in held_out], objective
        )
        mem["test_pool_skipped"] = sum(1 for w in winners if w["question_id"] in held_out)
    n_with_correct = sum(any_correct)
    report = {
        "rollout_id": rollout_id,
        "questions": len(by_q),
        "branches": len(rows),
        "verifiers": list(verifiers),
        "weights": weights,
        "pass_at_1": pass_at_1_and_n(passed)[0],
        "pass_at_n": n_with_correct / len(by_q) if by_q else 0.0,
        "ranker_top_correct_share": (
            sum(t for t, a in zip(top_correct, any_correct, strict=True) if a) / n_with_correct
        )
        if n_with_correct
        else None,
        "judge": {
            "model": config.judge_model,
            "calls": calls,
            "cap_per_batch": cap,
            "max_calls_in_a_batch": max_calls,
            "batches_at_cap": batches_at_cap,
            "calls_over_cap": max(0, max_calls - cap),
            "capped_samples": capped,
            "samples": config.judge_samples,
            "temperature": config.judge_temperature,
            "same_model_as_agent": config.judge_model == config.agent_model,
            "pairwise": ranking.pairwise_report(controls, longer),
        },
        "top_vs_branch0": ranking.paired_report(top_correct, first_correct),
        "memories": mem,
        "simulated_model": config.uses_sim,
        "classes": classes,
        "cascade": cascade,
    }
    write_json_atomic(session.paths.analyses / f"rank_{_safe(rollout_id)}.json", report)
    return report


def checker_score(question: Question | None, branch: Mapping[str, Any]) -> float | None:
    """The score a custom or rubric checker gave the branch when the fork checked it (None for
    a built-in checker, whose score is the objective itself, or when there is no verdict)."""
    if question is None or question.checker in CHECKERS:
        return None
    score = branch.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return None
    return min(1.0, max(0.0, float(score)))


def _answer_groups(branches: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Branches by final answer (normalised): one group is judged once, by its first branch."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for b in branches:
        groups.setdefault(" ".join((b["prediction"] or "").split()).lower(), []).append(b)
    return groups


# One question's judge samples: scalar ones by answer group, pairwise ones by (i, j) of groups
JudgedQuestion = tuple[dict[int, list[Sample]], dict[tuple[int, int], list[Sample]]]


async def _judge_all(
    judge: Judge,
    session: Session,
    by_q: dict[str, list[dict[str, Any]]],
    groups_of: dict[str, dict[str, list[dict[str, Any]]]],
    budgets: dict[str, CallBudget],
) -> dict[str, JudgedQuestion]:
    """Every judge call of the rollout, concurrently (the Judge's limiter bounds them).

    Each call reserves its budget slots before its first await, and tasks start in the order
    of `calls`, so which samples are capped is the same on every run. Per question: scalar
    scores by group index, then pairwise comparisons by (i, j)."""
    SCALAR, PAIR = 0, 1  # where a call's samples go in the question's (scalar, pairwise)
    calls: list[tuple[str, int, Any, Callable[[], Awaitable[list[Sample]]]]] = []
    for qid in by_q:
        question = session.questions_by_id.get(qid)
        qtext = question.question if question else ""
        answers = [g[0]["final_text"] or "" for g in groups_of[qid].values()]
        budget = budgets[qid]
        calls += [
            (qid, SCALAR, k, partial(judge.score, qtext, answer, budget))
            for k, answer in enumerate(answers)
        ]
        calls += [
            (qid, PAIR, (i, j), partial(judge.compare, qtext, answers[i], answers[j], budget))
            for i, j in itertools.combinations(range(len(answers)), 2)
        ]
    samples = await fan_out(lambda call: call[3](), calls)
    out: dict[str, JudgedQuestion] = {qid: ({}, {}) for qid in by_q}
    for (qid, kind, key, _), got in zip(calls, samples, strict=True):
        out[qid][kind][key] = got
    return out


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True)


def _safe(run_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)
