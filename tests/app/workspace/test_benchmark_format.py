"""The benchmark format (app/harness/workspace/benchmark_format.py, docs/benchmarks.md): every
row rule gives `file:line: field '<name>': what`, `init` refuses it with nothing created, and a
row's rubric/pass_threshold and the [checker] defaults land in Question.checker_args."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.workspace.benchmark_format import FORMAT_VERSION, ROW_FIELDS
from app.harness.workspace.store import load_benchmark
from app.paths import builtin_store

GOOD = {"question_id": "q1", "task_type": "t", "question": "Capital of Norway?", "answer": "Oslo"}
TOML = 'name = "mine"\nseed = 1\n'


def write(bench: Path, rows: list[dict[str, Any]], toml: str = TOML) -> Path:
    bench.mkdir(parents=True, exist_ok=True)
    (bench / "benchmark.toml").write_text(toml, encoding="utf-8")
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (bench / "questions.jsonl").write_text(text, encoding="utf-8")
    return bench


def load_error(tmp_path: Path, row: dict[str, Any], toml: str = TOML) -> str:
    bench = write(tmp_path / "b", [GOOD, row], toml)
    with pytest.raises(UserError) as info:
        load_benchmark(bench)
    return str(info.value)


BAD_ROWS: dict[str, tuple[dict[str, Any], str, str]] = {
    # case: (row, field, what the message says)
    "no_answer": ({k: v for k, v in GOOD.items() if k != "answer"}, "answer", "required"),
    "answer_number": ({**GOOD, "answer": 42}, "answer", "must be a string"),
    "empty_answer": ({**GOOD, "answer": " "}, "answer", "only checker 'rubric'"),
    "blank_question": ({**GOOD, "question": ""}, "question", "non-empty"),
    "bad_task_type": ({**GOOD, "task_type": "a/b"}, "task_type", "letters, digits"),
    "family_not_string": ({**GOOD, "family": 3}, "family", "must be a string"),
    "context_not_string": ({**GOOD, "context": ["x"]}, "context", "must be a string"),
    "unknown_checker": ({**GOOD, "checker": "fuzzy"}, "checker", "unknown checker 'fuzzy'"),
    "bad_custom_syntax": ({**GOOD, "checker": "pkg:"}, "checker", "module:function"),
    "checker_args_list": ({**GOOD, "checker_args": [1]}, "checker_args", "must be an object"),
    "metadata_string": ({**GOOD, "metadata": "x"}, "metadata", "must be an object"),
    "negative_tolerance": (
        {**GOOD, "answer": "1", "checker": "numeric", "checker_args": {"abs_tol": -1}},
        "checker_args.abs_tol",
        ">= 0",
    ),
    "bad_pattern": (
        {**GOOD, "checker": "regex", "checker_args": {"pattern": "(x"}},
        "checker_args.pattern",
        "not a regular expression",
    ),
    "options_not_list": (
        {**GOOD, "answer": "A", "checker": "choice", "checker_args": {"options": "ABCD"}},
        "checker_args.options",
        "list of strings",
    ),
    "rubric_without_rubric_checker": ({**GOOD, "rubric": "be nice"}, "rubric", "only checker"),
    "rubric_checker_without_rubric": (
        {**GOOD, "checker": "rubric", "answer": ""},
        "rubric",
        "needs a rubric",
    ),
    "threshold_on_exact": ({**GOOD, "pass_threshold": 0.5}, "pass_threshold", "passes or fails"),
    "threshold_above_one": (
        {**GOOD, "checker": "rubric", "rubric": "r", "pass_threshold": 1.5},
        "pass_threshold",
        "less than or equal to 1",
    ),
    "threshold_twice": (
        {
            **GOOD,
            "checker": "rubric",
            "rubric": "r",
            "pass_threshold": 0.7,
            "checker_args": {"pass_threshold": 0.2},
        },
        "checker_args.pass_threshold",
        "set it once",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_a_broken_row_names_file_line_and_field(case: str, tmp_path: Path) -> None:
    row, field, what = BAD_ROWS[case]
    message = load_error(tmp_path, row)
    where = f"{tmp_path / 'b' / 'questions.jsonl'}:2: field '{field}': "
    assert message.startswith(where), message
    assert what in message, message


def test_init_refuses_a_broken_row_and_creates_nothing(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
    write(store / "questions" / "mine", [GOOD, {**GOOD, "question_id": "q2", "answer": 7}])
    capsys.readouterr()
    code = main(
        ["init", str(tmp_path / "ws" / "a"), "--seed", "sim-starter", "--questions", "mine"]
        + ["--store", str(store)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [
        f"error: {store / 'questions' / 'mine' / 'questions.jsonl'}:2: field 'answer': "
        "must be a string"
    ]
    assert not (tmp_path / "ws").exists()


def test_rubric_and_threshold_map_into_checker_args_with_the_benchmark_defaults(
    tmp_path: Path,
) -> None:
    toml = TOML + '[checker]\nrubric = "Polite and correct."\npass_threshold = 0.6\ntimeout_s = 5\n'
    rows = [
        {**GOOD, "question_id": "r1", "checker": "rubric", "answer": ""},
        {**GOOD, "question_id": "r2", "checker": "rubric", "rubric": "Own.", "pass_threshold": 0.9},
        {**GOOD, "question_id": "c1", "checker": "my.checks:grade"},
        {**GOOD, "question_id": "e1", "checker_args": {"note": 1}},
    ]
    qs = {q.question_id: q for q in load_benchmark(write(tmp_path / "b", rows, toml)).questions}
    assert qs["r1"].checker == "rubric" and qs["r1"].answer == ""
    assert qs["r1"].checker_args == {
        "rubric": "Polite and correct.",
        "pass_threshold": 0.6,
        "timeout_s": 5,
    }
    assert qs["r2"].checker_args == {"rubric": "Own.", "pass_threshold": 0.9, "timeout_s": 5}
    assert qs["c1"].checker == "my.checks:grade"
    assert qs["c1"].checker_args == {"pass_threshold": 0.6, "timeout_s": 5}
    assert qs["e1"].checker == "exact" and qs["e1"].checker_args == {"note": 1}  # untouched


def test_checker_default_applies_to_rows_without_a_checker(tmp_path: Path) -> None:
    toml = TOML + '[checker]\ndefault = "rubric"\nrubric = "Helpful?"\n'
    rows = [{**GOOD, "answer": ""}, {**GOOD, "question_id": "q2", "checker": "exact"}]
    qs = load_benchmark(write(tmp_path / "b", rows, toml)).questions
    assert [q.checker for q in qs] == ["rubric", "exact"]
    assert qs[0].checker_args == {"rubric": "Helpful?", "pass_threshold": 0.5, "timeout_s": 10.0}


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        (TOML + f"format_version = {FORMAT_VERSION + 1}\n", "key 'format_version': 2 is newer"),
        (TOML + "format_version = 0\n", "key 'format_version'"),
        (TOML + '[checker]\ndefault = "fuzzy"\n', "key 'checker.default': unknown checker"),
        (TOML + "[checker]\ntimeout_s = 0\n", "key 'checker.timeout_s'"),
        (TOML + "[checker]\npass_threshold = 2.0\n", "key 'checker.pass_threshold'"),
        (TOML + "[checker]\nrubrik = 'x'\n", "key 'checker.rubrik': unknown key"),
        (TOML + "description = 5\n", "key 'description': must be a string"),
        (TOML + 'family_units = "loose"\n', "key 'family_units'"),
    ],
)
def test_benchmark_toml_errors_name_the_key(tmp_path: Path, toml: str, fragment: str) -> None:
    message = load_error(tmp_path, {**GOOD, "question_id": "q2"}, toml)
    assert message.startswith(f"{tmp_path / 'b' / 'benchmark.toml'}: "), message
    assert fragment in message, message


def test_format_version_1_is_what_the_built_in_benchmarks_are(tmp_path: Path) -> None:
    for name in ("sim-basic", "sim-large", "real-easy"):
        bench = load_benchmark(builtin_store() / "questions" / name)
        assert bench.questions
    explicit = load_benchmark(write(tmp_path / "b", [GOOD], TOML + "format_version = 1\n"))
    assert explicit.questions[0].answer == "Oslo"


def test_every_row_field_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md").read_text("utf-8")
    missing = sorted(f for f in ROW_FIELDS if f"`{f}`" not in doc)
    assert missing == []
    for key in ("format_version", "[checker]", "timeout_s", "answer_fallbacks", "split"):
        assert key in doc


def test_unknown_keys_are_shown_few_and_short() -> None:
    from app.harness.workspace.benchmark_format import unknown_row_keys

    row = {**GOOD, **{f"k{i}" + "x" * 100: 1 for i in range(8)}}
    shown = unknown_row_keys(row)
    assert len(shown) == 6 and shown[-1] == "and 3 more"
    assert all(len(k) <= 44 for k in shown[:5])
    assert unknown_row_keys({**GOOD, "anwser": "x"}) == ["'anwser' (did you mean 'answer'?)"]


def test_family_units_declares_a_familys_units_independent(tmp_path: Path) -> None:
    rows = [{**GOOD, "question_id": f"q{i}", "family": "f"} for i in range(3)]
    assert not load_benchmark(write(tmp_path / "a", rows)).independent_units  # the default
    toml = TOML + 'family_units = "independent"\n'
    assert load_benchmark(write(tmp_path / "b", rows, toml)).independent_units
    near = TOML + 'family_units = "near-duplicates"\n'
    assert not load_benchmark(write(tmp_path / "c", rows, near)).independent_units
    # the simulated worlds draw every answer per question: their benchmarks say so
    for name in ("sim-basic", "sim-large", "sim-judged"):
        assert load_benchmark(builtin_store() / "questions" / name).independent_units
