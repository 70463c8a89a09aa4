"""bench/gepa_compare.py's adapter: GEPA sees this project's agent, checker and evolver.

The pure parts (components, reflective records, case packs, the call budget) on hand-made
values; the adapter itself on a workspace of the built-in simulated world, where the world's
hidden rules say what a right answer needs.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from app.api import init_workspace
from app.harness.rollouts.question_units import build_units
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from app.providers.sim.evolver import USELESS_LINES
from app.providers.sim.world import build_world, normalise
from core.types import Prediction, Question, QuestionUnit

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gepa_compare.py"
pytest.importorskip("gepa")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gepa_compare", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gc = _load()


def _q(qid: str, unit: str, task_type: str, answer: str = "7") -> Question:
    return Question(
        question_id=qid,
        task_type=task_type,
        question=f"question {qid}",
        answer=answer,
        unit_id=unit,
        family=unit,
    )


def _p(q: Question, correct: bool, said: str = "") -> Prediction:
    return Prediction(
        run_id="",
        question_id=q.question_id,
        unit_id=q.unit_id,
        task_type=q.task_type,
        prediction=said or (q.answer if correct else "wrong"),
        answer=q.answer,
        correct=correct,
        stop_reason="final",
        steps=(),
    )


def test_one_component_per_skill_file_a_trained_type_reads() -> None:
    skills = {"ledger.md": "", "units.md": "", "default-strategy.md": ""}
    assert gc.skill_components(["units", "pricing", "ledger", "tagging"], skills) == {
        "default-strategy.md": ["pricing", "tagging"],
        "ledger.md": ["ledger"],
        "units.md": ["units"],
    }


def test_reflective_records_hold_only_the_components_types_with_the_checkers_verdict() -> None:
    a, b = _q("u1a", "u1", "ledger", "10"), _q("u1b", "u1", "ledger", "20")
    other = _q("u2", "u2", "units")
    rollouts = [
        gc.UnitRollout(QuestionUnit("u1", "ledger", (a, b)), (_p(a, True), _p(b, False, "21"))),
        gc.UnitRollout(QuestionUnit("u2", "units", (other,)), (_p(other, False),)),
    ]
    assert not rollouts[0].correct  # a pair is right only when both members are
    records = gc.reflective_records(rollouts, ["ledger"])
    assert [(r["question_id"], r["correct"], r["Feedback"]) for r in records] == [
        ("u1a", True, "correct"),
        ("u1b", False, "wrong: the expected answer is 20"),
    ]
    assert records[1]["Generated Outputs"] == "21"
    assert gc.reflective_records(rollouts, ["dates"]) == []


def test_case_pack_is_the_failures_then_a_few_successes_and_none_without_a_failure() -> None:
    qs = [_q(f"q{i}", f"q{i}", "ledger", str(i)) for i in range(20)]
    rollouts = [
        gc.UnitRollout(QuestionUnit(q.unit_id, "ledger", (q,)), (_p(q, i % 4 == 0),))
        for i, q in enumerate(qs)
    ]
    records = gc.reflective_records(rollouts, ["ledger"])
    answers = {q.question_id: q.answer for q in qs}
    pack = gc.case_pack("ledger.md", records, answers)
    assert len(pack.failures) == 12 and len(pack.successes) == 3  # the trainer's pack caps
    assert all(
        f.prediction == "wrong" and f.answer == answers[f.question_id] for f in pack.failures
    )
    assert "<expected>1</expected>" in pack.render()
    right = [r for r in records if r["correct"]]
    assert gc.case_pack("ledger.md", right, answers) is None


class _Recorder:
    def __init__(self) -> None:
        self.totals = {"calls": 0, "cache_hits": 0}


def test_call_budget_stops_at_the_limit_of_paid_calls_not_cache_hits() -> None:
    rec = _Recorder()
    budget = gc.CallBudget(rec, limit=10, stall=1000)
    rec.totals.update(calls=30, cache_hits=21)
    assert not budget(None)
    rec.totals.update(calls=31)
    assert budget(None) and budget.reason == "budget"


def test_call_budget_stops_when_iterations_cost_nothing_new() -> None:
    rec = _Recorder()
    budget = gc.CallBudget(rec, limit=10**6, stall=3)
    rec.totals.update(calls=5)
    assert not budget(None)  # first look
    assert [budget(None) for _ in range(3)] == [False, False, True]
    assert budget.reason.startswith("stalled")


def test_a_free_seed_evaluation_is_not_counted_against_the_limit() -> None:
    rec = _Recorder()
    budget = gc.CallBudget(rec, limit=10, stall=1000, free_seed=True)
    rec.totals.update(calls=40)  # GEPA's evaluation of the seed on the valset
    assert not budget(None) and budget.seed_calls == 40
    rec.totals.update(calls=49)
    assert not budget(None)
    rec.totals.update(calls=50)
    assert budget(None) and budget.reason == "budget"


def _outcome(seed: int, points: dict[str, tuple[float, bool]]) -> object:
    job = gc.SeedJob(seed, 72, "", "", "", 1.0, False, ())
    out = gc.SeedOutcome(job, True)
    for arm, (acc, ok) in points.items():
        out.sweep[arm] = {300: gc.Point(ok, acc, 100, 300, "" if ok else "boom")}
    return out


def test_the_two_world_sizes_of_a_seed_never_share_a_workspace_folder() -> None:
    # the sizes run side by side: one size's cleanup once deleted the other's trainer mid-run
    jobs = [gc.SeedJob(2, units, "store", "sim-w2", "/tmp/b", 60, False, ()) for units in (216, 72)]
    folders = [gc.seed_folder(job) for job in jobs]
    assert folders[0] != folders[1]
    assert all(folder.parent == Path("/tmp/b/ws") for folder in folders)


def test_the_sweep_prints_a_result_only_when_every_seed_reached_the_budget(capsys) -> None:
    both = {"trainer": (0.5, True), "gepa": (0.4, True), "gepa_tuned": (0.3, True)}
    one_failed = {**both, "gepa": (0.0, False)}
    problems = gc.report_sweep([_outcome(1, both), _outcome(2, one_failed)], "x")
    out = capsys.readouterr().out
    assert "RESULT x.trainer.final_test@300 0.5000 accuracy" in out
    assert "RESULT x.gepa.final_test@300" not in out  # one seed missing: no mean
    assert problems == ["x gepa@300: boom"]
    # pooled Wilson over 200 units with 100 right
    assert "pooled Wilson 95% [0.431, 0.569] over 200 test units" in out
    assert "target x.trainer.final_test@300 >= gepa_tuned + 0.05: MET (0.500 vs 0.300)" in out


# -- the adapter on the built-in simulated world ---------------------------------------------
@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    ws = tmp_path_factory.mktemp("gepa") / "ws"
    init_workspace(ws, questions="sim-basic", seed="sim-starter", store=ROOT / "store")
    with Session(ws, load_config(None)) as s:  # defaults: sim/basic, world seed 7, 72 units
        yield s


def _rule_units(session: Session, rule_id: str) -> list[QuestionUnit]:
    """Units of one hidden rule that need neither a system rule nor the context tool."""
    world = build_world("basic", 7, 72)
    plain = {
        c.question_id
        for c in world.cases.values()
        if c.rule_id == rule_id and not c.system_rule and not c.needs_context
    }
    units = build_units(session.benchmark.questions)
    return [u for u in units if set(u.question_ids) <= plain][:12]


def _adapter(session: Session):
    skills = session.agent_prompts().skills
    comps = gc.skill_components(["ledger", "units"], skills)
    return gc.SkillAdapter(session, comps, gc.evolve_templates(), budget=3), skills


def test_evaluate_scores_units_with_the_candidates_skill_text(session: Session) -> None:
    adapter, skills = _adapter(session)
    units = _rule_units(session, "ledger.r1")
    rule = build_world("basic", 7, 72).rules["ledger.r1"].statement
    seed = {"ledger.md": skills["ledger.md"], "units.md": skills["units.md"]}
    taught = {**seed, "ledger.md": skills["ledger.md"] + f"\n- {rule}\n"}
    before = adapter.evaluate(units, seed)
    after = adapter.evaluate(units, taught, capture_traces=True)
    assert before.trajectories is None and len(after.trajectories) == len(units)
    assert set(before.scores) <= {0.0, 1.0} and len(before.scores) == len(units)
    # the simulated agent knows a rule only from text it is sent: 0.25 vs 0.93 per question
    assert sum(after.scores) >= sum(before.scores) + len(units) // 3
    assert after.scores == [1.0 if r.correct else 0.0 for r in after.trajectories]


def test_a_repeated_evaluation_is_answered_by_the_cache_and_costs_no_model_call(
    session: Session,
) -> None:
    adapter, skills = _adapter(session)
    units = _rule_units(session, "units.r2")
    seed = {"ledger.md": skills["ledger.md"], "units.md": skills["units.md"]}
    budget = gc.CallBudget(session.recorder, limit=10**9)
    adapter.evaluate(units, seed)
    paid = budget.paid()
    assert paid > 0
    again = adapter.evaluate(units, seed, capture_traces=True)
    assert budget.paid() == paid and len(again.scores) == len(units)
    fresh, _ = _adapter(session)  # nothing remembered: every request goes to the provider
    answered = fresh.evaluate(units, seed, capture_traces=True)
    assert budget.paid() == paid  # the response cache answers them all
    assert answered.scores == again.scores and answered.outputs == again.outputs


def test_proposals_come_from_the_evolver_and_only_changed_files_are_returned(
    session: Session,
) -> None:
    adapter, skills = _adapter(session)
    units = _rule_units(session, "ledger.r3")
    seed = {"ledger.md": skills["ledger.md"], "units.md": skills["units.md"]}
    batch = adapter.evaluate(units, seed, capture_traces=True)
    assert 0.0 in batch.scores  # the seed skill lacks the rule: some units fail
    dataset = adapter.make_reflective_dataset(seed, batch, ["ledger.md", "units.md"])
    assert dataset["units.md"] == []  # no units question in this minibatch
    budget = gc.CallBudget(session.recorder, limit=10**9)
    paid = budget.paid()
    new = adapter.propose_new_texts(seed, dataset, ["ledger.md", "units.md"])
    assert budget.paid() == paid + 1  # one evolver call, for the file with failures only
    assert set(new) == {"ledger.md"} and adapter.proposals == 1
    # the simulated evolver's edit (app/providers/sim/evolver.py): a rule, its decoy, or a
    # general line; which one is a seeded draw from the prompt, so this case is fixed
    added = normalise(new["ledger.md"].replace(skills["ledger.md"], ""))
    world = build_world("basic", 7, 72)
    said = [normalise(r.statement) for r in world.rules.values()]
    said += [normalise(r.decoy) for r in world.rules.values()]
    said += [normalise(line[2:]) for line in USELESS_LINES]
    assert any(s in added for s in said), added
    nothing_failed = {c: [r for r in dataset[c] if r["correct"]] for c in dataset}
    assert adapter.propose_new_texts(seed, nothing_failed, ["ledger.md", "units.md"]) == {}
    assert budget.paid() == paid + 1  # no pack, no call


def test_without_gepa_the_bench_names_the_extra_and_exits_2() -> None:
    code = (
        "import runpy, sys; sys.modules['gepa'] = None; "
        f"sys.argv = [{str(SCRIPT)!r}, '--tiny']; runpy.run_path({str(SCRIPT)!r}, "
        "run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "gepa" in proc.stderr and "[dev]" in proc.stderr
    assert "RESULT" not in proc.stdout


def test_prompt_components_are_what_the_agent_is_sent(session: Session) -> None:
    adapter, skills = _adapter(session)
    prompts = adapter.prompts_for(
        {"ledger.md": "L", "prompts/system.md": "S", "prompts/tool_read_context.md": "T"}
    )
    assert prompts.system == "S" and prompts.tool_docs["read_context"] == "T"
    assert prompts.skills == {**skills, "ledger.md": "L"}
    q = next(q for q in session.benchmark.questions if q.context and q.task_type == "ledger")
    system = prompts.opening_messages(q)[0]["content"]
    assert system.startswith("S") and "\nL" in system
    assert [t.description for t in prompts.tools_for(q)] == ["T"]


def test_the_system_prompt_component_is_evolved_as_the_slow_update_does(
    session: Session,
) -> None:
    world = build_world("basic", 7, 72)
    plain = {
        c.question_id
        for c in world.cases.values()
        if c.system_rule and not c.needs_context and c.task_type == "ledger"
    }
    units = [u for u in build_units(session.benchmark.questions) if set(u.question_ids) <= plain]
    files = session.version_files("prompts", session.paths.prompts_version)
    skills = session.agent_prompts().skills
    comps = {"ledger.md": ["ledger"], "prompts/system.md": ["ledger"]}
    adapter = gc.SkillAdapter(session, comps, gc.evolve_templates(), budget=3)
    seed = {"ledger.md": skills["ledger.md"], "prompts/system.md": files["system.md"]}
    batch = adapter.evaluate(units[:6], seed, capture_traces=True)
    dataset = adapter.make_reflective_dataset(seed, batch, ["prompts/system.md"])
    new = adapter.propose_new_texts(seed, dataset, ["prompts/system.md"])
    # prompts/evolve_system.md reaches the simulated evolver's evolve_system: it adds the
    # format instructions these cases broke (or, by its seeded draw, a useless line)
    added = normalise(new["prompts/system.md"].replace(files["system.md"], ""))
    said = [normalise(text) for text in world.system_rules.values()]
    assert any(s in added for s in [*said, normalise(USELESS_LINES[0][2:])]), added
