"""Gate draws (`[gate] draws`, app/harness/training/gate_ladder.py): on a benchmark that
declares its units independent, every pass/fail gate question is answered `draws` times, each
draw with its own sample index, and each draw is one observation of the gate's test."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.training.gate_ladder import GatePools, draw_unit_id, drawn_id
from app.harness.workspace.config import RunConfig, build_config
from core.types import Question, QuestionUnit
from tests.app.training.test_gate_only import SMALL_BASIC
from tests.app.training.test_train import resume_differences, run_cli


def unit(uid: str, checker: str = "exact") -> QuestionUnit:
    q = Question(question_id=f"q-{uid}", task_type="a", question=uid, answer="x", checker=checker)
    return QuestionUnit(unit_id=uid, task_type="a", questions=(replace_unit(q, uid),))


def replace_unit(q: Question, uid: str) -> Question:
    return Question(**{**q.__dict__, "unit_id": uid, "family": "fam"})


def pools(draws: int, independent: bool = True, drawable: set[str] | None = None) -> GatePools:
    units = [unit(f"u{i}") for i in range(6)]
    ids = {u.unit_id for u in units}
    return GatePools.build(
        units,
        {"u4", "u5"},
        {"u0"},
        seed=3,
        independent_units=independent,
        draws=draws,
        drawable=frozenset(ids if drawable is None else drawable),
    )


def test_each_drawable_unit_gets_its_draws_as_observations_of_their_own() -> None:
    p = pools(3)
    assert p.families["a"]["diagnosis"]["u1"] == ["u1"]
    assert p.families["a"]["diagnosis"][draw_unit_id("u1", 2)] == ["u1#d2"]
    assert p.families["a"]["validation"]["u4#d1"] == ["u4#d1"]
    assert p.draws["u3#d2"] == ("u3", 2)
    assert not any(d.startswith("u0") for d in p.draws), "a test unit got a draw"
    assert len(p.draws) == 5 * 2
    assert pools(1).draws == {}
    # near-duplicate families count once whatever their units: draws would not add a family
    assert pools(3, independent=False).draws == {}
    assert set(pools(3, drawable={"u1"}).draws) == {"u1#d1", "u1#d2"}


def test_a_shown_unit_takes_its_draws_out_of_every_ladder() -> None:
    p = pools(3)
    ladder = p.ladder_for("a", {"u1", "u4"}, key="k")
    units = {u for _, ids in ladder.families for u in ids}
    assert not units & {"u1", "u1#d1", "u1#d2", "u4", "u4#d1", "u4#d2"}
    assert {"u2", "u2#d1", "u2#d2", "u5#d2"} <= units
    plain = p.ladder_for("a", set(), key="k", with_draws=False)
    assert {u for _, ids in plain.families for u in ids} == {"u1", "u2", "u3", "u4", "u5"}


def test_draw_units_copy_the_questions_under_marked_ids_with_their_sample() -> None:
    units = {f"u{i}": unit(f"u{i}") for i in range(6)}
    p = pools(3)
    drawn = p.draw_units(units)
    d = drawn["u2#d2"]
    assert d.unit_id == "u2#d2" and d.task_type == "a"
    assert [q.question_id for q in d.questions] == ["q-u2#d2"]
    assert d.questions[0].question == "u2" and d.questions[0].unit_id == "u2#d2"
    samples = p.draw_samples(drawn)
    assert samples["q-u2#d2"] == 2 and samples["q-u5#d1"] == 1 and "q-u2" not in samples


def test_a_draw_id_names_what_it_draws() -> None:
    assert drawn_id(draw_unit_id("q-7", 3)) == "q-7"
    assert drawn_id("a#d1#d2") == "a#d1"
    for not_a_draw in ("q-7", "q-7#d0", "q-7#d", "q-7#dx", "#d1", "q-7#d-1"):
        assert drawn_id(not_a_draw) is None, not_a_draw


def test_a_benchmark_id_that_looks_like_a_draw_gets_no_draws() -> None:
    units = [unit("u1"), unit("u1#d1")]
    p = GatePools.build(
        units, set(), set(), independent_units=True, draws=2, drawable=frozenset({"u1", "u1#d1"})
    )
    assert "u1#d1" not in p.draws  # the benchmark's own unit, not a draw of u1
    assert p.draws == {"u1#d1#d1": ("u1#d1", 1)}


def test_draws_survive_the_checkpoint_and_a_file_without_them_loads_as_before(
    tmp_path: Path,
) -> None:
    p = pools(2)
    path = tmp_path / "gate_pools.json"
    p.save(path)
    assert GatePools.load(path) == p
    assert "draws" not in pools(1).to_dict()
    assert GatePools.from_dict(pools(1).to_dict()).draws == {}


def test_draws_is_a_gate_setting_from_one_to_five() -> None:
    assert RunConfig().gate.draws == 1
    assert build_config({"gate": {"draws": 3}}, "t.toml").gate.draws == 3
    for bad in (0, 6):
        with pytest.raises(UserError, match=r"t\.toml: .*gate\.draws"):
            build_config({"gate.draws": bad}, "t.toml")


ORACLE = [f"--set={role}_model=sim/oracle" for role in ("agent", "evolver", "judge")]


@pytest.mark.parametrize(
    ("where", "questions", "why"),
    [
        (["--store", "examples/benchmarks"], "support-mini", "families are near-duplicates"),
        (["--seed", "sim-starter"], "sim-judged", "every gate question is scored"),
    ],
)
def test_draws_that_cannot_count_are_said_unused_in_one_line(
    tmp_path: Path, where: list[str], questions: str, why: str
) -> None:
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--questions", questions, *where]) == 0
    proc = run_cli(
        "train", "-w", str(ws), *ORACLE, "--set=gate.draws=2", "--set=epochs=1", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "gate.draws = 2" in line]
    assert len(said) == 1 and "not used, " in said[0] and why in said[0], proc.stderr
    assert "draws" not in json.loads((ws / "gate_pools.json").read_text())


CONFIG = SMALL_BASIC.replace("[gate]", '[gate]\ndraws = 2\ndraws_for = "every"')


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A small training on sim-basic (units declared independent) with two draws of every
    question; its config (no final look, a low provisional level) also makes provisional
    accepts and probations."""
    ws = tmp_path_factory.mktemp("draws") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    cfg = ws.parent / "draws.toml"
    cfg.write_text(CONFIG)
    proc = run_cli("train", "-w", str(ws), "--config", str(cfg), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def test_draws_are_answered_afresh_by_the_gate_and_nowhere_else(trained: Path) -> None:
    conn = sqlite3.connect(trained / "harness.db")
    rows = conn.execute(
        "SELECT r.kind, p.run_id, p.question_id, p.correct FROM predictions p "
        "JOIN _runs r ON r.run_id = p.run_id"
    ).fetchall()
    drawn = {(kind, q) for kind, _, q, _ in rows if "#d" in q}
    assert drawn, "no gate test answered a draw"
    assert {kind for kind, _ in drawn} == {"gate"}, "a draw left the gate"
    # within one candidate run, draw 1 of a question is a fresh sample: it differs from draw
    # 0 somewhere (a copy would agree everywhere)
    answers = {(run, q): ok for kind, run, q, ok in rows if kind == "gate"}
    pairs = [
        (ok, answers[(run, q.removesuffix("#d1"))])
        for (run, q), ok in answers.items()
        if q.endswith("#d1") and (run, q.removesuffix("#d1")) in answers
    ]
    assert len(pairs) > 20 and any(a != b for a, b in pairs), "draw 1 copied draw 0"
    state = json.loads((trained / "checkpoint.json").read_text())["state"]
    assert not any("#d" in u for u in state["shown_units"])
    assert not any("#d" in q for q in state["correctness"])
    final = json.loads((trained / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] > 0


@pytest.mark.slow
def test_resume_with_draws_ends_in_the_reference_state(trained: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert resume_differences(trained, trained.parent / "draws.toml", ws) == []
    shutil.rmtree(ws)


def test_draws_for_is_every_or_changed() -> None:
    assert RunConfig().gate.draws_for == "changed"
    assert build_config({"gate": {"draws_for": "every"}}, "t.toml").gate.draws_for == "every"
    with pytest.raises(UserError, match=r"t\.toml: .*gate\.draws_for"):
        build_config({"gate.draws_for": "some"}, "t.toml")


@pytest.fixture(scope="module")
def trained_changed(tmp_path_factory) -> Path:
    """The same training, three draws of only the questions whose answers changed."""
    ws = tmp_path_factory.mktemp("changed") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    cfg = ws.parent / "changed.toml"
    cfg.write_text(SMALL_BASIC.replace("[gate]", "[gate]\ndraws = 3"))  # draws_for "changed"
    proc = run_cli("train", "-w", str(ws), "--config", str(cfg), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ws


def test_a_question_is_drawn_again_only_after_its_two_answers_differed(
    trained_changed: Path,
) -> None:
    """In every gate test, a draw is evaluated only when an earlier draw of its question had a
    baseline and a candidate answer that differed; other questions got no draw at all."""
    conn = sqlite3.connect(trained_changed / "harness.db")
    rows = conn.execute(
        "SELECT run_id, task_type, epoch, step, unit_id, base, cand FROM gate_evidence"
    ).fetchall()
    tests: dict[tuple, dict[str, tuple[int, int]]] = {}
    for run, task, epoch, step, unit_id, base, cand in rows:
        tests.setdefault((run, task, epoch, step), {})[unit_id] = (base, cand)
    drawn = skipped = 0
    for units in tests.values():
        for unit_id in units:
            if (question := drawn_id(unit_id)) is None:
                continue
            r = int(unit_id.rpartition("#d")[2])
            earlier = [question] + [draw_unit_id(question, k) for k in range(1, r)]
            assert any(units[u][0] != units[u][1] for u in earlier if u in units), (
                f"{unit_id} drawn though its question never changed"
            )
            drawn += 1
        questions = [u for u in units if drawn_id(u) is None]
        skipped += sum(
            units[q][0] == units[q][1] and draw_unit_id(q, 1) not in units for q in questions
        )
    assert drawn > 5 and skipped > 20, (drawn, skipped)
    # a report counts the draws it did not ask for, as ties among the families it used
    reports = [
        json.loads(p.read_text()) for p in (trained_changed / "reports" / "steps").glob("*.json")
    ]
    noted = [r for r in reports if "draws not asked for" in r.get("summary", "")]
    exact = 0
    for r in noted:
        count = int(re.search(r"(\d+) of the families were draws", r["summary"])[1])
        # n_used and units_used of a test that went on count its earlier segments too
        assert 0 < count <= r["n_used"] - r["units_used"]
        exact += count == r["n_used"] - r["units_used"]
    assert exact > 0
    final = json.loads((trained_changed / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] > 0


def test_a_ladder_in_rounds_puts_each_draw_after_every_question_in_the_same_order() -> None:
    p = pools(3)
    ladder = p.ladder_for("a", {"u2"}, key="k", in_rounds=True)
    for stage in (ladder.stage1, ladder.stage2):
        ids = [f for f, _ in stage]
        questions = [f for f in ids if f not in p.draws]
        assert ids == questions + [f"{q}#d1" for q in questions] + [f"{q}#d2" for q in questions]
    assert "u2#d1" not in p.redraws(ladder)
    assert p.redraws(ladder)["u3#d2"] == ("u3", 2)
    shuffled = p.ladder_for("a", {"u2"}, key="k")
    assert set(shuffled.families) == set(ladder.families)


@pytest.mark.slow
def test_resume_killed_inside_a_gate_with_draws_of_changed_questions_ends_in_the_reference_state(
    trained_changed: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = trained_changed.parent / "changed.toml"
    assert resume_differences(trained_changed, config, ws, kill_at="gate:7") == []
    shutil.rmtree(ws)


def test_a_fitted_ladder_counts_questions_for_n_max_and_stays_within_the_exact_horizon() -> None:
    p = pools(3)  # questions u1-u3 (diagnosis), u4-u5 (validation), two draws each
    ladder = p.ladder_for("a", set(), key="k", in_rounds=True)
    assert len(ladder.families) == 15
    whole, segment = p.fitted(ladder, n_max=4, limit=12)
    # the three entries past the limit are round-2 draws, the last in ladder order
    dropped = {f for f, _ in ladder.families} - {f for f, _ in whole.families}
    assert len(dropped) == 3 and all(f.endswith("#d2") for f in dropped)
    last_round2 = [f for f, _ in ladder.families if f.endswith("#d2")][-3:]
    assert dropped == set(last_round2)
    # the segment: the first four questions, stage 1 first, each with the draws it kept
    questions = [f for f, _ in whole.families if f not in p.draws][:4]
    assert [f for f, _ in segment.families if f not in p.draws] == questions
    assert {p.drawn_unit(f) for f, _ in segment.families} == set(questions)
    assert {f for f, _ in segment.families} <= {f for f, _ in whole.families}
    assert p.fitted(ladder, n_max=200, limit=400) == (ladder, ladder)
