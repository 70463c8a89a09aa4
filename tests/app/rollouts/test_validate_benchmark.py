"""`validate-benchmark` (app/cli/validate_benchmark.py, app/harness/rollouts/benchmark_validation.py):
each defect of a fixture benchmark caught at its file:line, errors exit 2 and warnings 0,
`--json` typed, `init` prints the findings as warnings without refusing, and the built-in
benchmarks have no errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.harness.rollouts import benchmark_validation as validation
from app.harness.rollouts.benchmark_validation import pool_of_question, validate_benchmark_dir
from app.harness.workspace.store import load_benchmark
from app.paths import builtin_store

# twenty-four sound single-question families: enough for the gate (18 land in its pools, 5
# needed) and for train (6 validation units >= eval_min_per_class 5, 18 diagnosis + validation
# units >= trainable_min_units 12)
BASE = [
    {
        "question_id": f"b{i:02d}",
        "task_type": "t",
        "question": f"What is {i} + {i + 20}?",
        "answer": str(2 * i + 20),
        "checker": "numeric",
    }
    for i in range(1, 25)
]
TOML = 'name = "mine"\nseed = 1\n'


def make_store(
    tmp_path: Path, extra: list[dict[str, Any]], base: list[dict[str, Any]] = BASE, toml: str = TOML
) -> Path:
    store = tmp_path / "store"
    bench = store / "questions" / "mine"
    bench.mkdir(parents=True)
    (bench / "benchmark.toml").write_text(toml, encoding="utf-8")
    rows = base + extra
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return store


def validate(
    store: Path, capsys, *more: str, seed: str | None = "sim-starter"
) -> tuple[int, str, str]:
    """validate-benchmark with the seed's skills (sim-starter: 't' reads default-strategy.md)."""
    capsys.readouterr()
    seeded = ["--seed", seed] if seed else []
    code = main(["validate-benchmark", "mine", "--store", str(store), *seeded, *more])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def row(qid: str, question: str, answer: str, checker: str = "exact", **kw: Any) -> dict[str, Any]:
    return {
        "question_id": qid,
        "task_type": "t",
        "question": question,
        "answer": answer,
        "checker": checker,
        **kw,
    }


LINE = len(BASE) + 1  # the first extra row's line
DEFECTS: dict[str, tuple[list[dict[str, Any]], str, str, int]] = {
    # case: (extra rows, defect, severity, exit code)
    "reference_rejected": (
        [row("x1", "What is 6 + 6?", "twelve", "numeric")],
        "reference_rejected",
        "error",
        2,
    ),
    "empty_accepted": ([row("x1", "Say the ellipsis", "...")], "empty_accepted", "error", 2),
    "regex_matches_empty": (
        [row("x1", "Agree?", "yes", "regex", checker_args={"pattern": "(yes)?"})],
        "regex_matches_empty",
        "error",
        2,
    ),
    "duplicate_across_families": (
        [row("x1", "what is 3 + 23 ?", "26", "numeric", family="other")],
        "duplicate_across_families",
        "error",
        2,
    ),
    "question_number_accepted": (
        [row("x1", "The largest of 3, 9 and 4?", "9", "numeric")],
        "question_number_accepted",
        "warning",
        0,
    ),
    "answer_in_question": (
        [row("x1", "Is Paris the capital of France? Name it.", "Paris")],
        "answer_in_question",
        "warning",
        0,
    ),
    "unknown_field": (
        [row("x1", "Capital of Peru?", "Lima", anwser="Lima")],
        "unknown_field",
        "warning",
        0,
    ),
}


@pytest.mark.parametrize("case", sorted(DEFECTS))
def test_each_defect_is_caught_at_its_line(case: str, tmp_path: Path, capsys) -> None:
    extra, defect, severity, code = DEFECTS[case]
    store = make_store(tmp_path, extra)
    got, out, err = validate(store, capsys)
    jsonl = store / "questions" / "mine" / "questions.jsonl"
    assert got == code, (out, err)
    assert f"{jsonl}:{LINE}: {severity}: {defect} (x1): " in out, out
    if code == 2:  # one error line naming the first error's file:line
        assert err.strip().splitlines() == [err.strip()] and err.startswith(
            f"error: {jsonl}:{LINE}: "
        )
    else:
        assert err == ""


def test_a_sound_benchmark_has_no_findings(tmp_path: Path, capsys) -> None:
    code, out, _ = validate(make_store(tmp_path, []), capsys)
    assert code == 0
    assert out.strip().splitlines() == [
        f"benchmark mine ({tmp_path / 'store' / 'questions' / 'mine'}, format_version 1): "
        "24 questions, 1 task types; 0 error(s), 0 warning(s), 0 not checked"
    ]


def test_family_spanning_pools(tmp_path: Path, capsys, monkeypatch) -> None:
    """The real split places a family whole, even one whose name two task types share (it
    unions family and unit ids first), so on real pools the check holds; a split that broke
    that would be caught at the row."""
    other = [
        {
            **r,
            "question_id": f"o{r['question_id']}",
            "task_type": "u",
            "question": f"{r['question']} (u)",
        }
        for r in BASE
    ]
    shared = [
        row("s1", "Capital of Peru?", "Lima", family="shared"),
        {**row("s2", "Capital of Chile?", "Santiago", family="shared"), "task_type": "u"},
    ]
    for seed in range(10):
        store = make_store(tmp_path / str(seed), shared, BASE + other, f"seed = {seed}\n")
        pools = pool_of_question(load_benchmark(store / "questions" / "mine"))
        assert pools["s1"] == pools["s2"]
        code, out, _ = validate(store, capsys, seed=None)  # 't' and 'u' share sim-starter's default
        assert code == 0 and "family_spans_pools" not in out
    real = pool_of_question

    def broken(benchmark: Any) -> dict[str, str]:
        pools = real(benchmark)
        return {**pools, "s2": "test" if pools["s1"] != "test" else "diagnosis"}

    monkeypatch.setattr(validation, "pool_of_question", broken)
    code, out, _ = validate(tmp_path / "0" / "store", capsys, seed=None)
    jsonl = tmp_path / "0" / "store" / "questions" / "mine" / "questions.jsonl"
    line = len(BASE) * 2 + 2
    assert code == 2
    assert f"{jsonl}:{line}: error: family_spans_pools (s2): family 'shared' spans pools" in out


def test_forty_questions_in_five_families_per_type_can_never_accept(tmp_path: Path, capsys) -> None:
    """The benchmark that motivated the check: 40 questions, 2 task types, 5 families of 4."""
    rows = [
        {
            "question_id": f"{t}{i:02d}",
            "task_type": t,
            "question": f"[{t}] What is {i} * 11?",
            "answer": str(i * 11),
            "checker": "numeric",
            "family": f"{t}-fam{i // 4}",
        }
        for t in ("a", "b")
        for i in range(20)
    ]
    code, out, _ = validate(make_store(tmp_path, [], rows), capsys, seed=None)
    # one family of 4 in validation (< eval_min_per_class 5): train refuses both task types
    assert code == 2 and out.count("error: nothing_trainable") == 2
    lines = [line for line in out.splitlines() if "pools_too_small" in line]
    assert len(lines) == 2 and all("no edit of it can ever be accepted" in line for line in lines)
    assert "fewer than 5" in lines[0] and "2^-" in lines[0]
    report = validate_benchmark_dir(tmp_path / "store" / "questions" / "mine")
    assert [g.families for g in report.gate_families] == [4, 4]  # the test pool holds the fifth


def test_rubric_questions_are_counted_not_checked(tmp_path: Path, capsys) -> None:
    extra = [
        row("r1", "Reply to an angry customer.", "", "rubric", rubric="Polite, offers a fix."),
        row("r2", "Reply to a happy customer.", "", "rubric", rubric="Thanks them once."),
    ]
    code, out, _ = validate(make_store(tmp_path, extra), capsys)
    assert code == 0
    assert "task type 't': 2 question(s) not checked (rubric checker: scored by the judge" in out
    assert out.strip().endswith("0 error(s), 0 warning(s), 2 not checked")


def test_json_is_one_typed_document_even_with_errors(tmp_path: Path, capsys) -> None:
    extra, *_ = DEFECTS["reference_rejected"]
    code, out, err = validate(make_store(tmp_path, extra), capsys, "--json")
    data = json.loads(out)
    assert code == 2 and err.startswith("error: ")
    assert data["errors"] == 1 and data["warnings"] == 0 and data["questions"] == len(BASE) + 1
    assert data["alpha"] == 0.05 and data["min_families_for_accept"] == 5
    pools = pool_of_question(load_benchmark(tmp_path / "store" / "questions" / "mine"))
    in_gate = sum(p != "test" for p in pools.values())  # single-question families here
    assert 5 <= in_gate <= len(BASE)
    counted = {"task_type": "t", "families": in_gate, "singletons": True, "draws": 1}
    assert data["gate_families"] == [{**counted, "n_max_counts_questions": True}]
    (finding,) = data["findings"]
    assert finding["defect"] == "reference_rejected" and finding["severity"] == "error"
    assert finding["line"] == LINE and finding["question_id"] == "x1"


def test_init_prints_the_findings_as_warnings_and_still_creates(tmp_path: Path, capsys) -> None:
    """Errors and too-small pools one line each, other warnings only counted."""
    extra = DEFECTS["reference_rejected"][0] + [
        {**DEFECTS["question_number_accepted"][0][0], "question_id": "x2"}
    ]
    store = make_store(tmp_path, extra)
    shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
    capsys.readouterr()
    ws = tmp_path / "ws"
    code = main(
        ["init", str(ws), "--seed", "sim-starter", "--questions", "mine", "--store", str(store)]
    )
    captured = capsys.readouterr()
    assert code == 0 and (ws / "manifest.json").is_file()
    assert "1 error(s), 1 warning(s)" in captured.err
    assert "[question_number_accepted x1, reference_rejected x1]" in captured.err
    assert f"questions.jsonl:{LINE}: error: reference_rejected (x1)" in captured.err
    assert "question_number_accepted (x2)" not in captured.err
    assert "created workspace" in captured.out and "reference_rejected" not in captured.out


BUILT_IN_SEEDS = {
    "sim-basic": "sim-starter",
    "sim-large": "sim-starter",
    "real-easy": "real-starter",
    "real-conventions": "real-conventions-starter",
}


@pytest.mark.parametrize("name", sorted(BUILT_IN_SEEDS))
def test_built_in_benchmarks_have_no_errors(name: str, capsys) -> None:
    """With their seeds. sim-basic's 54 units per type in the gate's pools (its families'
    units declared independent, `family_units`) are enough to confirm a one-rule edit."""
    capsys.readouterr()
    assert main(["validate-benchmark", name, "--seed", BUILT_IN_SEEDS[name], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 0 and data["not_checked"] == 0
    defects = {f["defect"] for f in data["findings"]}
    assert defects == set()


@pytest.mark.parametrize("name", ["sim-basic", "real-easy", "real-conventions"])
def test_gate_families_count_what_the_training_gate_pools_hold(name: str) -> None:
    """The count behind pools_too_small is the training side's own (GatePools.build)."""
    from app.harness.rollouts.pools import split_pools
    from app.harness.rollouts.question_units import build_units
    from app.harness.training.gate_ladder import GatePools

    bench = load_benchmark(builtin_store() / "questions" / name)
    pools = split_pools(bench.questions, bench.split, bench.seed)
    gate = GatePools.build(
        build_units(bench.questions),
        {q.unit_id for q in pools.validation},
        {q.unit_id for q in pools.test},
        independent_units=bench.independent_units,
    )
    expected = {t: sum(len(f) for f in stages.values()) for t, stages in gate.families.items()}
    assert {g.task_type: g.families for g in validation.gate_families(bench)} == expected


def test_a_task_type_train_leaves_out_is_named_with_the_thresholds(tmp_path: Path, capsys) -> None:
    """train drops a task type with too few units (app/harness/rollouts/pools.py
    `filter_trainable`); validate-benchmark says so first, with the numbers it needs."""
    few = [{**row(f"v{i}", f"Capital number {i}?", f"c{i}"), "task_type": "v"} for i in range(6)]
    toml = TOML + 'task_types = ["t", "v"]\n'
    code, out, _ = validate(make_store(tmp_path, few, toml=toml), capsys, seed=None)
    assert code == 0
    (line,) = [x for x in out.splitlines() if "not_trainable" in x]
    assert "task type 'v'" in line and "train leaves it out" in line
    assert "eval_min_per_class" in line and "trainable_min_units" in line and " 5 " in line


def test_task_types_sharing_a_skill_file_are_an_error_with_a_seed(tmp_path: Path, capsys) -> None:
    """train refuses two task types on one skill file (runner `_check_disjoint_files`)."""
    other = [{**r, "question_id": f"o{r['question_id']}", "task_type": "u",
              "question": f"{r['question']} (u)"} for r in BASE]  # fmt: skip
    store = make_store(tmp_path, other, toml=TOML + 'task_types = ["t", "u"]\n')
    code, out, err = validate(store, capsys)
    assert code == 2 and "shared_skill_file" in err
    assert (
        "task types t, u would share the skill file default-strategy.md of seed sim-starter" in out
    )
    code, out, _ = validate(store, capsys, seed=None)  # no seed: said, not passed silently
    assert code == 0 and "skills_not_checked: skill files not checked: no seed given" in out
    assert out.strip().endswith("1 not checked")


CHECKS = """
def right(question, prediction):
    return prediction.strip() == question.answer

def lenient(question, prediction):
    return True

def broken(question, prediction):
    raise ValueError("no such field")
"""


def test_custom_checkers_are_imported_and_called_before_any_model_call(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A misspelled `module:function`, a checker that accepts an empty answer and one that
    raises are errors at their rows; a sound one passes (they run as training runs them:
    worker processes, importable from the folder the command runs in)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mycheckers.py").write_text(CHECKS, encoding="utf-8")
    extra = [
        row("c1", "Spell the code of order 1.", "ORD-1", "mycheckers:right"),
        row("c2", "Spell the code of order 2.", "ORD-2", "mycheckers:rihgt"),
        row("c3", "Spell the code of order 3.", "ORD-3", "mycheckers:lenient"),
        row("c4", "Spell the code of order 4.", "ORD-4", "mycheckers:broken"),
    ]
    code, out, err = validate(make_store(tmp_path, extra), capsys)
    jsonl = tmp_path / "store" / "questions" / "mine" / "questions.jsonl"
    assert code == 2 and err.startswith(f"error: {jsonl}:{LINE + 1}: checker_unloadable")
    assert f"{jsonl}:{LINE + 1}: error: checker_unloadable (c2): " in out
    assert "mycheckers has no function 'rihgt'" in out
    assert f"{jsonl}:{LINE + 2}: error: empty_accepted (c3): " in out
    assert f"{jsonl}:{LINE + 3}: error: checker_error (c4): " in out and "ValueError" in out
    assert "(c1)" not in out and "not checked" not in out.replace("0 not checked", "")
    assert out.strip().endswith("4 error(s), 0 warning(s), 0 not checked")


@pytest.mark.parametrize("name", ["sim-basic", "real-conventions"])
def test_gate_families_count_the_draws_the_training_gate_pools_hold(name: str) -> None:
    """With `[gate] draws`, the count behind the power warnings is GatePools.build's own:
    every question and its draws (only independent pass/fail units are drawn again)."""
    from app.harness.rollouts.pools import split_pools
    from app.harness.rollouts.question_units import build_units, is_scored
    from app.harness.training.gate_ladder import GatePools
    from app.harness.workspace.config import GateConfig

    bench = load_benchmark(builtin_store() / "questions" / name)
    pools = split_pools(bench.questions, bench.split, bench.seed)
    units = build_units(bench.questions)
    gate = GatePools.build(
        units,
        {q.unit_id for q in pools.validation},
        {q.unit_id for q in pools.test},
        independent_units=bench.independent_units,
        draws=3,
        drawable=frozenset(u.unit_id for u in units if not is_scored(u)),
    )
    expected = {t: sum(len(f) for f in stages.values()) for t, stages in gate.families.items()}
    every = GateConfig(draws=3, draws_for="every")
    counted = {g.task_type: g.observations(10**6) for g in validation.gate_families(bench, every)}
    assert counted == expected
    assert any(g.draws == 3 for g in validation.gate_families(bench, every)) == bool(gate.draws)


def test_draws_clear_the_power_warning_of_a_small_benchmark_of_independent_questions(
    tmp_path: Path,
) -> None:
    """Five and seven questions of one task type, declared independent (4 and 5 in the gate's
    pools): too few for any edit, or for a one-rule edit, at one answer each; enough with
    three (`estimate` and `validate-benchmark` share this check)."""
    from app.harness.workspace.config import GateConfig

    toml = TOML + 'family_units = "independent"\n'
    for n, defect in ((5, "pools_too_small"), (7, "no_realistic_edit")):
        store = make_store(tmp_path / str(n), [], BASE[:n], toml)
        bench = load_benchmark(store / "questions" / "mine")
        assert [f.defect for f in validation.power_findings(bench)] == [defect]
        assert validation.power_findings(bench, gate=GateConfig(draws=3)) == []
        assert validation.power_findings(bench, gate=GateConfig(draws=3, n_max=3)) != []
