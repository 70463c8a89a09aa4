"""The store and `init` on bad input: exit code 2, one line naming file/line/key, nothing
partial left behind (docs/architecture.md#the-store)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.workspace.store import load_benchmark, load_seed, parse_questions
from app.paths import builtin_store

QUESTIONS = [
    {"question_id": "q1", "task_type": "ledger", "question": "Sum 1 and 2", "answer": "3"},
    {
        "question_id": "q2",
        "task_type": "ledger",
        "question": "Sum 2 and 2",
        "answer": "4",
        "checker": "numeric",
        "checker_args": {"abs_tol": 0.5},
    },
    {"question_id": "q3", "task_type": "units", "question": "km in 1 mile?", "answer": "1.6"},
    {
        "question_id": "q4a",
        "task_type": "units",
        "question": "pair a",
        "answer": "a",
        "unit_id": "pair1",
    },
    {
        "question_id": "q4b",
        "task_type": "units",
        "question": "pair b",
        "answer": "b",
        "unit_id": "pair1",
    },
    {"question_id": "q5", "task_type": "ledger", "question": "Sum 5 and 5", "answer": "10"},
]
BENCH_TOML = """name = "tiny"
description = "a tiny test benchmark"
seed = 3
task_types = ["ledger", "units"]

[split]
diagnosis = 0.5
validation = 0.25
test = 0.25
"""


def write_jsonl(path: Path, rows: list) -> None:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A private store: the real sim-starter seed and a tiny valid benchmark."""
    store = tmp_path / "store"
    shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
    bench = store / "questions" / "tiny"
    bench.mkdir(parents=True)
    (bench / "benchmark.toml").write_text(BENCH_TOML, encoding="utf-8")
    write_jsonl(bench / "questions.jsonl", QUESTIONS)
    return store


def run_init(store: Path, target: Path, seed: str = "sim-starter", questions: str = "tiny") -> int:
    return main(
        ["init", str(target), "--seed", seed, "--questions", questions, "--store", str(store)]
    )


def assert_one_line_error(capsys, *fragments: str) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def test_valid_tiny_benchmark_and_seed_load(store: Path, tmp_path: Path) -> None:
    bench = load_benchmark(store / "questions" / "tiny")
    assert bench.name == "tiny" and bench.task_types == ("ledger", "units")
    assert len(bench.questions) == 6
    assert {q.unit_id for q in bench.questions if q.question_id.startswith("q4")} == {"pair1"}
    assert bench.split == {"diagnosis": 0.5, "validation": 0.25, "test": 0.25}
    seed = load_seed(store / "seeds" / "sim-starter")
    assert "system.md" in seed.prompts and seed.skills
    assert run_init(store, tmp_path / "ok") == 0
    assert (tmp_path / "ok" / "manifest.json").is_file()


# -- bad benchmark files ---------------------------------------------------------------------


def _replace_line(n: int, text: str) -> Callable[[Path], None]:
    def mutate(bench: Path) -> None:
        rows: list = list(QUESTIONS)
        rows[n - 1] = text
        write_jsonl(bench / "questions.jsonl", rows)

    return mutate


def _rows(rows: list) -> Callable[[Path], None]:
    return lambda bench: write_jsonl(bench / "questions.jsonl", rows)


def _toml(text: str) -> Callable[[Path], None]:
    return lambda bench: (bench / "benchmark.toml").write_text(text, encoding="utf-8")


_no_answer = {k: v for k, v in QUESTIONS[1].items() if k != "answer"}
BAD_BENCHMARKS = {
    "malformed_json": (
        _replace_line(3, '{"question_id": "q3", "task_type": '),
        ["questions.jsonl:3:", "invalid JSON"],
    ),
    "not_an_object": (_replace_line(2, '["q2"]'), ["questions.jsonl:2:", "JSON object"]),
    "missing_field": (_replace_line(2, json.dumps(_no_answer)), ["questions.jsonl:2:", "'answer'"]),
    "empty_field": (
        _replace_line(1, json.dumps({**QUESTIONS[0], "question": "  "})),
        ["questions.jsonl:1:", "'question'"],
    ),
    "duplicate_id": (
        _replace_line(6, json.dumps({**QUESTIONS[5], "question_id": "q1"})),
        ["questions.jsonl:6:", "duplicate question_id 'q1'", "line 1"],
    ),
    "unit_of_three": (
        _rows(
            QUESTIONS
            + [
                {
                    "question_id": "q4c",
                    "task_type": "units",
                    "question": "c",
                    "answer": "c",
                    "unit_id": "pair1",
                }
            ]
        ),
        ["questions.jsonl:7:", "unit 'pair1'", "3 questions"],
    ),
    "unit_mixes_task_types": (
        _replace_line(5, json.dumps({**QUESTIONS[4], "task_type": "ledger"})),
        ["questions.jsonl:5:", "unit 'pair1'", "mixes task types"],
    ),
    "unknown_checker": (
        _replace_line(2, json.dumps({**QUESTIONS[1], "checker": "fuzzy"})),
        ["questions.jsonl:2:", "unknown checker 'fuzzy'"],
    ),
    "bad_metadata": (
        _replace_line(1, json.dumps({**QUESTIONS[0], "metadata": [1]})),
        ["questions.jsonl:1:", "'metadata'"],
    ),
    "split_missing_test": (
        _toml(BENCH_TOML.replace("test = 0.25\n", "")),
        ["benchmark.toml", "'split'"],
    ),
    "split_not_summing_to_one": (
        _toml(BENCH_TOML.replace("test = 0.25", "test = 0.5")),
        ["benchmark.toml", "'split'", "sum to 1"],
    ),
    "split_negative": (
        _toml(
            BENCH_TOML.replace("diagnosis = 0.5", "diagnosis = -0.5").replace(
                "test = 0.25", "test = 1.25"
            )
        ),
        ["benchmark.toml", "'split'"],
    ),
    "invalid_toml": (_toml(BENCH_TOML + "\n[split\n"), ["benchmark.toml", "invalid TOML"]),
    "task_types_mismatch": (
        _toml(BENCH_TOML.replace('"units"]', '"units", "dates"]')),
        ["benchmark.toml", "task_types"],
    ),
    "no_questions": (_rows([]), ["questions.jsonl", "no questions"]),
}


@pytest.mark.parametrize("case", sorted(BAD_BENCHMARKS))
def test_bad_benchmark_exit_2_one_line_nothing_written(
    case: str, store: Path, tmp_path: Path, capsys
) -> None:
    mutate, fragments = BAD_BENCHMARKS[case]
    bench = store / "questions" / "tiny"
    mutate(bench)
    parent = tmp_path / "workspaces"
    capsys.readouterr()
    assert run_init(store, parent / "ws") == 2
    line = assert_one_line_error(capsys, *fragments)
    if "questions.jsonl" in fragments[0]:
        assert str(bench / "questions.jsonl") in line  # the full path, not just the name
    assert not parent.exists(), f"init left {list(parent.rglob('*'))}"


def test_parse_questions_reports_line_of_invalid_utf8(tmp_path: Path) -> None:
    raw = (json.dumps(QUESTIONS[0]) + "\n").encode() + b'{"question_id": "\xff"}\n'
    with pytest.raises(UserError, match=r"q\.jsonl:2: not valid UTF-8"):
        parse_questions(raw, tmp_path / "q.jsonl")


def test_blank_lines_are_skipped_but_line_numbers_stay_true(tmp_path: Path) -> None:
    raw = (json.dumps(QUESTIONS[0]) + "\n\n\n" + '{"question_id": 5}\n').encode()
    with pytest.raises(UserError, match=r"q\.jsonl:4: field 'question_id'"):
        parse_questions(raw, tmp_path / "q.jsonl")


# -- bad seeds, names, targets ---------------------------------------------------------------


def test_unknown_seed(store: Path, tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    assert run_init(store, tmp_path / "p" / "ws", seed="nope") == 2
    assert_one_line_error(capsys, "unknown seed 'nope'", "sim-starter")
    assert not (tmp_path / "p").exists()


def test_unknown_benchmark(store: Path, tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    assert run_init(store, tmp_path / "p" / "ws", questions="nope") == 2
    assert_one_line_error(capsys, "unknown benchmark 'nope'", "tiny")
    assert not (tmp_path / "p").exists()


def test_seed_without_system_prompt(store: Path, tmp_path: Path, capsys) -> None:
    missing = store / "seeds" / "sim-starter" / "prompts" / "system.md"
    missing.unlink()
    capsys.readouterr()
    assert run_init(store, tmp_path / "p" / "ws") == 2
    assert_one_line_error(capsys, str(missing), "missing")
    assert not (tmp_path / "p").exists()


def test_seed_without_skills_folder(store: Path, tmp_path: Path, capsys) -> None:
    shutil.rmtree(store / "seeds" / "sim-starter" / "skills")
    capsys.readouterr()
    assert run_init(store, tmp_path / "p" / "ws") == 2
    assert_one_line_error(capsys, str(store / "seeds" / "sim-starter" / "skills"), "missing")
    assert not (tmp_path / "p").exists()


def test_seed_without_seed_toml(store: Path, tmp_path: Path, capsys) -> None:
    (store / "seeds" / "sim-starter" / "seed.toml").unlink()
    capsys.readouterr()
    assert run_init(store, tmp_path / "p" / "ws") == 2
    assert_one_line_error(capsys, "seed.toml", "missing")
    assert not (tmp_path / "p").exists()


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_init_on_existing_workspace_refuses_and_leaves_it_untouched(
    store: Path, tmp_path: Path, capsys
) -> None:
    ws = tmp_path / "ws"
    assert run_init(store, ws) == 0
    (ws / "checkpoint.json").write_text('{"progress": {}}')
    before = snapshot(ws)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert run_init(store, ws) == 2
    assert_one_line_error(capsys, str(ws), "already exists")
    assert snapshot(ws) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings


def test_init_on_non_empty_folder_refuses(store: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "stuff"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert run_init(store, target) == 2
    assert_one_line_error(capsys, str(target), "non-empty folder")
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_init_into_existing_empty_folder_works(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    assert run_init(store, target) == 0
    assert (target / "skills" / "v1" / "_meta.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "store"]


def test_report_on_folder_that_is_not_a_workspace(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "readme.txt").write_text("hello")
    capsys.readouterr()
    assert main(["report", str(folder)]) == 2
    assert_one_line_error(capsys, str(folder), "not a workspace")
    assert [p.name for p in folder.iterdir()] == ["readme.txt"]
    assert main(["report", str(tmp_path / "absent"), "--json"]) == 2
    assert_one_line_error(capsys, "not a workspace")
    assert not (tmp_path / "absent").exists()


def _chmod_is_effective(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.write_text("x")
    except PermissionError:
        return True
    probe.unlink()
    return False


def test_init_under_read_only_parent(store: Path, tmp_path: Path, capsys) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        if not _chmod_is_effective(parent):
            pytest.skip("running with privileges that ignore folder permissions (root)")
        capsys.readouterr()
        rc = run_init(store, parent / "ws")
        captured = capsys.readouterr()
        assert rc == 2, captured.err
        lines = [line for line in captured.err.splitlines() if line.strip()]
        assert len(lines) == 1 and str(parent) in lines[0] and "not writable" in lines[0]
        assert list(parent.iterdir()) == []
    finally:
        parent.chmod(0o755)
    assert os.access(parent, os.W_OK)
