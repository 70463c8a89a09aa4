"""`distill`: a strong model's verified work made into skills and memories for a cheap one.

1. Probe: teacher and student answer the validation pool; their accuracies are paired by
   family and `core/distill.py` `probe` gives the verdict (distill / not_worth_it /
   insufficient_evidence). Anything but `distill` stops here.
2. The teacher answers the diagnosis pool; its verified winners (checker says right) become
   memories (app/harness/rollouts/memory.py), the worked examples the student's prompts
   retrieve in training, validation and test. Only the diagnosis pool: the gate's validation
   and the held-out test never feed the teacher's examples.
3. The student's skills are trained with the usual gate (app/harness/training/runner.py).
4. Teacher, student before and student after answer the held-out test pool; the figures go to
   `analyses/distill.json`, written atomically.

The whole command holds the workspace's writer lock (app/api/distillation.py `distill`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.rollouts import memory
from app.harness.rollouts.pools import Pools, split_pools
from app.harness.rollouts.session import Session
from app.harness.serving.savings import run_price
from app.harness.training.runner import Runner, read_final
from app.harness.workspace import workspace as ws
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log.reader import LogReader
from app.progress import NO_BARS, Bars
from core import distill as d
from core.types import InferenceResult, Question

DISTILL_FILE = "distill.json"


@dataclass(frozen=True)
class ModelFigures:
    """One configuration on the held-out test pool."""

    model: str
    skills_version: str
    run_id: str
    accuracy: float
    correct: int
    total: int
    interval: tuple[float, float]  # Wilson
    cost_per_1000: float | None  # USD per 1,000 questions, the run's tokens at its price
    price_basis: str


@dataclass(frozen=True)
class DistillOutcome:
    teacher_model: str
    student_model: str
    probe: d.ProbeResult
    probe_runs: tuple[str, str]  # teacher's and student's validation runs
    winners_stored: int = 0
    teacher: ModelFigures | None = None
    student_before: ModelFigures | None = None
    student_after: ModelFigures | None = None
    gap_closed: float | None = None
    mcnemar: tuple[int, int, float] | None = None  # after vs before on paired test units
    promote_share: float = 0.9
    promoted: bool = False
    train_id: str = ""
    memory_k: int = 0  # teacher memories in the trained student's prompts on test
    memory_choice: dict[int, float] | None = None  # memory_k -> validation accuracy
    path: Path | None = None

    @property
    def exit_code(self) -> int:
        return d.EXIT_CODES[self.probe.verdict]


class _Spend:
    """One `max_cost_usd` for the whole command: each model session starts charged with what
    the earlier ones spent (each Session has its own budget otherwise)."""

    def __init__(self) -> None:
        self.usd = 0.0

    @contextlib.contextmanager
    def session(self, root: Path, config: RunConfig, bars: Bars) -> Iterator[Session]:
        with Session(root, config, bars) as session:
            session.budget.charge(self.usd, calls=0)
            before = session.budget.spent_usd
            try:
                yield session
            finally:
                self.usd += session.budget.spent_usd - before


async def run_distill(
    root: Path, config: RunConfig, teacher: str, student: str, bars: Bars = NO_BARS
) -> DistillOutcome:
    _check_untrained(root, config)
    prefix, spend = _run_prefix(root, config), _Spend()
    t_config = config.model_copy(update={"agent_model": teacher, "memory_k": 0})
    s_config = config.model_copy(update={"agent_model": student, "memory_k": 0})
    with spend.session(root, t_config, bars) as session:
        pools = _pools(session)
        t_val = await _answer(session, pools.validation, f"{prefix}teacher-val", "validation")
    with spend.session(root, s_config, bars) as session:
        s_val = await _answer(session, pools.validation, f"{prefix}student-val", "validation")
        family_of = {q.question_id: q.family for q in session.benchmark.questions}
    pairs = d.family_differences(t_val.correctness, s_val.correctness, family_of)
    probe = d.probe(pairs, config.distill_min_gap, config.distill_alpha, config.distill_resamples)
    outcome = DistillOutcome(teacher, student, probe, (t_val.run_id, s_val.run_id))
    if probe.verdict is not d.Verdict.DISTILL:
        return _write(root, outcome)
    return _write(root, await _distil(root, config, outcome, pools, prefix, bars, spend))


def _check_untrained(root: Path, config: RunConfig) -> None:
    """Distill trains the student from the seed: a workspace that trained already is refused,
    and one whose distill was killed during the student's training says how to finish it."""
    if not (root / "checkpoint.json").is_file():
        return
    with Session(root, config, calls_models=False) as session:
        runs = [r.run_id for r in LogReader(session.log).runs()]
    if read_final(root) is None and any(r.startswith("distill-") for r in runs):
        raise UserError(
            f"{root}: a distill here was stopped during the student's training; "
            f"`train --resume -w {root}` finishes that training (the student's skills and test "
            "figures, in `report`), and a new workspace runs the whole distill again"
        )
    raise UserError(
        f"{root}: already trained; distill trains the student from the workspace's seed "
        "and skills: init a new workspace for it"
    )


async def _distil(
    root: Path,
    config: RunConfig,
    probe: DistillOutcome,
    pools: Pools,
    prefix: str,
    bars: Bars,
    spend: _Spend,
) -> DistillOutcome:
    teacher, student = probe.teacher_model, probe.student_model
    t_config = config.model_copy(update={"agent_model": teacher, "memory_k": 0})
    s_config = config.model_copy(update={"agent_model": student, "memory_k": 0})
    trained = config.model_copy(update={"agent_model": student})  # its own memory_k
    with spend.session(root, t_config, bars) as session:
        diag = await _answer(session, pools.diagnosis, f"{prefix}teacher-diagnosis", "diagnosis")
        stored = _store_winners(session, diag)
        t_test = await _answer(session, pools.test, f"{prefix}teacher-test", "test")
        t_fig = _figures(session, t_test, teacher, config.distill_alpha)
        start_version = session.paths.skills_version
    with spend.session(root, s_config, bars) as session:
        before = await _answer(session, pools.test, f"{prefix}student-test-before", "test")
        b_fig = _figures(session, before, student, config.distill_alpha)
        unit_of = {q.question_id: q.unit_id for q in session.benchmark.questions}
    with spend.session(root, trained, bars) as session:
        await Runner(session).train_async(resume=False)
    final = read_final(root) or {}
    best = Best(
        root / "skills" / str(final.get("skills_version") or start_version),
        root / "prompts" / str(final["prompts_version"]) if final.get("prompts_version") else None,
    )
    choice = await _choose_memories(root, trained, best, pools, prefix, bars, spend)
    k = max(choice, key=lambda m: (choice[m], -m))  # the best on validation; a tie: fewer
    with spend.session(root, trained.model_copy(update={"memory_k": k}), bars) as session:
        prompts = session.agent_prompts(skills_dir=best.skills, prompts_dir=best.prompts)
        after = await _answer(
            session, pools.test, f"{prefix}student-test-after", "test", prompts=prompts
        )
        a_fig = _figures(session, after, student, config.distill_alpha)
    mcnemar = d.paired_mcnemar(
        d.unit_correctness(before.correctness, unit_of),
        d.unit_correctness(after.correctness, unit_of),
    )
    return DistillOutcome(
        teacher,
        student,
        probe.probe,
        probe.probe_runs,
        winners_stored=stored,
        teacher=t_fig,
        student_before=b_fig,
        student_after=a_fig,
        gap_closed=d.gap_closed(t_fig.accuracy, b_fig.accuracy, a_fig.accuracy),
        mcnemar=mcnemar,
        promote_share=config.distill_promote_share,
        promoted=d.promoted(a_fig.accuracy, t_fig.accuracy, config.distill_promote_share),
        train_id=str(final.get("train_id") or ""),
        memory_k=k,
        memory_choice=choice,
    )


@dataclass(frozen=True)
class Best:
    skills: Path
    prompts: Path | None  # None: the current prompts


async def _choose_memories(
    root: Path,
    trained: RunConfig,
    best: Best,
    pools: Pools,
    prefix: str,
    bars: Bars,
    spend: _Spend,
) -> dict[int, float]:
    """Validation accuracy of the trained student with the training's `memory_k` and with
    `distill_memory_k` teacher memories, when they differ: the gate trained the skills with the
    former, and with memories in both arms an edit shows a smaller effect, so the memories are
    chosen after training, on validation, never on test."""
    ks = sorted({trained.memory_k, trained.distill_memory_k})
    if len(ks) == 1:
        return {ks[0]: float("nan")}
    out = {}
    for k in ks:
        with spend.session(root, trained.model_copy(update={"memory_k": k}), bars) as session:
            prompts = session.agent_prompts(skills_dir=best.skills, prompts_dir=best.prompts)
            run = f"{prefix}student-val-after-m{k}"
            result = await _answer(session, pools.validation, run, "validation", prompts=prompts)
            unit_of = {q.question_id: q.unit_id for q in session.benchmark.questions}
            out[k] = d.accuracy(d.unit_correctness(result.correctness, unit_of)).value
    return out


def _pools(session: Session) -> Pools:
    b = session.benchmark
    pools = split_pools(b.questions, b.split, b.seed)
    if not pools.validation or not pools.diagnosis or not pools.test:
        raise UserError(
            f"benchmark {b.name!r}: distill needs diagnosis, validation and test pools "
            "(its split leaves one empty)"
        )
    return pools


def _run_prefix(root: Path, config: RunConfig) -> str:
    """`distill-<n>-`: the first n whose runs are not in the log yet."""
    with Session(root, config, calls_models=False) as session:
        taken = {r.run_id for r in LogReader(session.log).runs()}
    n = 1
    while any(r.startswith(f"distill-{n}-") for r in taken):
        n += 1
    return f"distill-{n}-"


async def _answer(
    session: Session,
    questions: Sequence[Question],
    run_id: str,
    pool: str,
    prompts: Any = None,
) -> InferenceResult:
    return await session.infer(
        list(questions),
        run_id,
        "distill",
        prompts=prompts,
        label=f"{session.config.agent_model} on {pool}",
        provenance={"distill_pool": pool},
    )


def _store_winners(session: Session, diag: InferenceResult) -> int:
    """The teacher's right answers on the diagnosis pool, stored as verified memories."""
    by_id = session.questions_by_id
    winners = [
        {
            "question_id": r.question_id,
            "branch_index": 0,
            "task_type": r.task_type,
            "question": by_id[r.question_id].question,
            "prediction": r.prediction or "",
            "tool_calls_json": None,
        }
        for r in session.log.answers(diag.run_id)
        if r.question_id in by_id
    ]
    objective = {(qid, 0): int(ok) for qid, ok in diag.correctness.items()}
    return memory.store_winners(session.log, diag.run_id, winners, objective)["stored"]


def _figures(session: Session, result: InferenceResult, model: str, alpha: float) -> ModelFigures:
    unit_of = {q.question_id: q.unit_id for q in session.benchmark.questions}
    acc = d.accuracy(d.unit_correctness(result.correctness, unit_of), alpha)
    totals = session.log.totals(result.run_id)
    price, missing = run_price(LogReader(session.log), result.run_id)
    cost = None
    if price is not None:
        usd = (totals.tokens_in * price.in_per_mtok + totals.tokens_out * price.out_per_mtok) / 1e6
        cost = d.per_thousand(usd, totals.n)
    return ModelFigures(
        model=model,
        skills_version=str(totals.skills_version or ""),
        run_id=result.run_id,
        accuracy=acc.value,
        correct=acc.correct,
        total=acc.total,
        interval=acc.interval,
        cost_per_1000=cost,
        price_basis=price.source if price is not None else missing,
    )


def _write(root: Path, outcome: DistillOutcome) -> DistillOutcome:
    path = ws.resolve_paths(root).analyses / DISTILL_FILE
    write_json_atomic(path, to_json(outcome))
    return DistillOutcome(**{**outcome.__dict__, "path": path})


def to_json(o: DistillOutcome) -> dict[str, Any]:
    def fig(f: ModelFigures | None) -> dict[str, Any] | None:
        return asdict(f) if f is not None else None

    p = o.probe
    return {
        "teacher_model": o.teacher_model,
        "student_model": o.student_model,
        "probe": {
            "verdict": p.verdict.value,
            "reason": p.reason,
            "families": p.families,
            "teacher_accuracy": p.teacher_accuracy,
            "student_accuracy": p.student_accuracy,
            "gap": p.gap,
            "interval": list(p.interval),
            "min_gap": p.min_gap,
            "runs": list(o.probe_runs),
            "exit_code": o.exit_code,
        },
        "winners_stored": o.winners_stored,
        "memory_k": o.memory_k,
        "memory_choice_validation": (
            {str(k): (None if v != v else v) for k, v in o.memory_choice.items()}
            if o.memory_choice
            else None
        ),
        "teacher": fig(o.teacher),
        "student_before": fig(o.student_before),
        "student_after": fig(o.student_after),
        "gap_closed": o.gap_closed,
        "mcnemar": (
            {"after_only": o.mcnemar[0], "before_only": o.mcnemar[1], "p_value": o.mcnemar[2]}
            if o.mcnemar is not None
            else None
        ),
        "cost_ratio": _cost_ratio(o),
        "promote_share": o.promote_share,
        "promoted": o.promoted,
        "promotion_basis": _promotion_basis(o),
        "train_id": o.train_id,
    }


def _cost_ratio(o: DistillOutcome) -> float | None:
    """Student after / teacher, per 1,000 test questions."""
    if o.teacher is None or o.student_after is None:
        return None
    t, s = o.teacher.cost_per_1000, o.student_after.cost_per_1000
    return s / t if t and s is not None else None


def _promotion_basis(o: DistillOutcome) -> str:
    if o.teacher is None or o.student_after is None:
        return f"not trained: probe verdict {o.probe.verdict.value}"
    lo, hi = o.student_after.interval
    return (
        f"student test {o.student_after.accuracy:.3f} (Wilson {lo:.3f}-{hi:.3f}) vs "
        f"{o.promote_share} x teacher {o.teacher.accuracy:.3f} = "
        f"{o.promote_share * o.teacher.accuracy:.3f}"
    )
