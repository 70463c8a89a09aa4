"""`distill` on the simulated teacher/student (app/distill.py) and the strong sim variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.harness.rollouts.pools import split_pools
from app.harness.workspace.harness_log.reader import open_reader
from app.harness.workspace.store import load_benchmark
from app.providers.sim.provider import (
    SIM_PRICE_IN_PER_MTOK,
    SimProvider,
    is_strong,
    sim_price,
    world_name,
)

FAST = ["--set", "epochs=1", "--no-progress"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("distill") / "ws"
    api.init_workspace(root, questions="sim-basic", seed="sim-starter")
    return root


def test_strong_variant_names_its_world_and_costs_more() -> None:
    assert world_name("sim/basic-strong") == "basic" and is_strong("sim/basic-strong")
    assert world_name("sim/basic") == "basic" and not is_strong("sim/-strong")
    assert sim_price("sim/basic") == (SIM_PRICE_IN_PER_MTOK, 1.5)  # unchanged
    assert sim_price("sim/basic-strong", 10.0)[0] == pytest.approx(10 * SIM_PRICE_IN_PER_MTOK)
    strong, plain = SimProvider("sim/basic-strong"), SimProvider("sim/basic")
    assert strong.world is plain.world  # the same world, built once


def test_probe_verdicts_have_their_exit_codes(workspace: Path) -> None:
    args = ["distill", "-w", str(workspace), *FAST]
    # the student is the stronger one: the teacher is surely not 0.05 better
    assert main([*args, "--teacher", "sim/basic", "--student", "sim/basic-strong"]) == 3
    probe = json.loads((workspace / "analyses" / "distill.json").read_text())
    assert probe["probe"]["verdict"] == "not_worth_it" and probe["teacher"] is None
    # a minimum gap inside the interval: neither verdict can be drawn
    gap = ["--set", "distill_min_gap=0.5"]
    assert main([*args, *gap, "--teacher", "sim/basic-strong", "--student", "sim/basic"]) == 4
    probe = json.loads((workspace / "analyses" / "distill.json").read_text())
    lo, hi = probe["probe"]["interval"]
    assert probe["probe"]["verdict"] == "insufficient_evidence" and lo < 0.5 <= hi
    assert not (workspace / "checkpoint.json").exists()  # nothing trained


def test_distill_trains_the_student_from_diagnosis_pool_winners(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["distill", "-w", str(workspace), *FAST, "--json"]
        + ["--teacher", "sim/basic-strong", "--student", "sim/basic"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["probe"]["verdict"] == "distill"
    on_disk = json.loads((workspace / "analyses" / "distill.json").read_text())
    assert on_disk == report
    teacher, before, after = report["teacher"], report["student_before"], report["student_after"]
    assert teacher["total"] == before["total"] == after["total"] > 50
    assert after["accuracy"] > before["accuracy"]
    # memories on or off for the trained student, chosen on validation (runs named so)
    choice = report["memory_choice_validation"]
    assert set(choice) == {"0", "3"} and report["memory_k"] in (0, 3)
    assert choice[str(report["memory_k"])] == max(choice.values())
    assert report["mcnemar"]["p_value"] < 0.05
    assert report["gap_closed"] == pytest.approx(
        (after["accuracy"] - before["accuracy"]) / (teacher["accuracy"] - before["accuracy"])
    )
    assert 0 < report["cost_ratio"] < 1  # the student is the cheap one
    assert report["promoted"] == (after["accuracy"] >= 0.9 * teacher["accuracy"] - 1e-12)
    lo, hi = after["interval"]
    assert lo <= after["accuracy"] <= hi
    # winners only from the diagnosis pool: never a validation or test question
    bench = load_benchmark(workspace / "questions")
    pools = split_pools(bench.questions, bench.split, bench.seed)
    diagnosis = {q.question_id for q in pools.diagnosis}
    with open_reader(workspace / "harness.db") as reader:
        stored = {r["question_id"] for r in reader.log.query("SELECT question_id FROM memories")}
    assert report["winners_stored"] == len(stored) > 0 and stored <= diagnosis
    # a trained workspace is refused: one clear line, exit 2
    again = ["distill", "-w", str(workspace), *FAST, "--teacher", "sim/basic-strong"]
    assert main([*again, "--student", "sim/basic"]) == 2


def test_savings_compares_with_the_distillation_teacher(workspace: Path) -> None:
    report = json.loads((workspace / "analyses" / "distill.json").read_text())
    if report["teacher"] is None:  # the module's distill test did not run first
        pytest.skip("needs the trained distillation above")
    student_run = report["student_after"]["run_id"]
    savings = api.savings(workspace, run_id=student_run)
    assert savings.baseline.startswith("the distillation teacher")
    assert report["teacher"]["run_id"] in savings.baseline
    named = {f.name: f for f in savings.baseline_figures}
    assert (named["saved"].value or 0.0) > 0  # the teacher costs ten times as much per token
    # a baseline asked for wins over the teacher
    priced = api.savings(workspace, run_id=student_run, baseline_run=report["probe"]["runs"][0])
    assert not priced.baseline.startswith("the distillation teacher")


def test_teacher_winners_are_worked_examples_of_diagnosed_failures(workspace: Path) -> None:
    from app.harness.rollouts.memory import teacher_examples

    with open_reader(workspace / "harness.db") as reader:
        rows = reader.log.query("SELECT question_id FROM diagnoses WHERE category = 'skill_gap'")
        if not rows:
            pytest.skip("needs the trained distillation above")
        examples = teacher_examples(reader.log, [r["question_id"] for r in rows])
    assert examples and {m for m, _ in examples.values()} == {"sim/basic-strong"}


def test_one_cost_budget_covers_every_run_of_the_command(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    api.init_workspace(root, questions="sim-basic", seed="sim-starter")
    # the teacher's validation run costs about $0.22 at its notional price, the student's
    # about $0.02: alone each fits $0.23, together they do not
    args = ["distill", "-w", str(root), *FAST, "--set", "max_cost_usd=0.23"]
    assert main([*args, "--teacher", "sim/basic-strong", "--student", "sim/basic"]) == 1
    with open_reader(root / "harness.db") as reader:
        teacher, student = reader.run("distill-1-teacher-val"), reader.run("distill-1-student-val")
    assert teacher is not None and str(teacher.status) == "done"
    assert student is not None and str(student.status) == "failed"
    assert not (root / "analyses" / "distill.json").exists()  # nothing half-written


def test_a_distill_killed_in_training_points_to_train_resume(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = tmp_path / "ws"
    api.init_workspace(root, questions="sim-basic", seed="sim-starter")
    args = [
        "distill",
        "-w",
        str(root),
        *FAST,
        "--teacher",
        "sim/basic-strong",
        "--student",
        "sim/basic",
    ]
    killed = subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "SKILL_TRAINER_KILL_AT": "step_end:1"},  # in the student's training
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9 and (root / "checkpoint.json").is_file(), killed.stderr
    with pytest.raises(api.UserError, match="stopped during the student's training") as e:
        api.distill(root, "sim/basic-strong", "sim/basic", overrides={"epochs": 1})
    assert f"train --resume -w {root}" in str(e.value) and "already trained" not in str(e.value)
