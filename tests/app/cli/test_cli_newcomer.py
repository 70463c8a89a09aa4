"""What a newcomer with their own data meets: every `--help` example names files that exist,
`--json` on every command that makes something, `list`, and the "did you mean" hints of the
config and the benchmark format (app/cli/, app/cli/list.py)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import COMMANDS, build_parser, main, subparser
from app.errors import UserError
from app.harness.workspace.config import load_config, parse_override

ROOT = Path(__file__).resolve().parents[3]


def test_every_help_example_names_folders_that_exist() -> None:
    parser = build_parser()
    named = []
    for command in COMMANDS:
        epilog = subparser(parser, command).epilog or ""
        named += re.findall(r"\b(examples/[\w./-]+)", epilog)
    assert named, "no example names a file of examples/"
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, missing


# -- one pass@1 ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def template_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("newcomer") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture
def ws(template_ws: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(template_ws, target)
    return target


@pytest.fixture(scope="module")
def evaluated_template(template_ws: Path, tmp_path_factory) -> tuple[Path, api.EvalResult]:
    ws = tmp_path_factory.mktemp("evaluated") / "ws"
    shutil.copytree(template_ws, ws)
    return ws, api.evaluate(ws, "v1")


@pytest.fixture
def evaluated(evaluated_template, tmp_path: Path) -> tuple[Path, api.EvalResult]:
    """A workspace with one eval run of v1, and that run's result."""
    target = tmp_path / "evaluated"
    shutil.copytree(evaluated_template[0], target)
    return target, evaluated_template[1]


def test_fork_rank_and_inspect_export_report_one_pass_at_1(ws: Path, tmp_path: Path) -> None:
    fork = api.fork(
        ws,
        branches=4,
        temperature_range=(0.0, 1.0),
        task_types=["dates", "pricing"],
        limit=12,
        rollout_id="f",
    )
    conn = sqlite3.connect(ws / "harness.db")
    rows = conn.execute("SELECT question_id, correct FROM branches WHERE run_id = 'f'").fetchall()
    by_q: dict[str, list[int]] = {}
    for qid, correct in rows:
        by_q.setdefault(qid, []).append(correct)
    mean_over_branches = sum(sum(v) / len(v) for v in by_q.values()) / len(by_q)
    branch_0 = dict(
        conn.execute(
            "SELECT question_id, correct FROM branches WHERE run_id='f' AND branch_index=0"
        )
    )
    assert sum(branch_0.values()) / len(by_q) != mean_over_branches  # the two readings differ
    assert fork.pass_at_1 == pytest.approx(mean_over_branches)
    rank = api.rank(ws, "f", remember=False)
    assert rank.pass_at_1 == pytest.approx(mean_over_branches)
    api.export_traces(ws, ["f"], format="inspect", out=tmp_path / "inspect")
    log = json.loads((tmp_path / "inspect" / "inspect-f.json").read_text(encoding="utf-8"))
    accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    assert accuracy == pytest.approx(fork.pass_at_1)


# -- seeds and benchmarks of the built-in store and a store of one's own -------------------------
def test_an_unknown_seed_or_benchmark_lists_the_built_in_names_too(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    (store / "seeds" / "mine").mkdir(parents=True)
    (store / "questions" / "ours").mkdir(parents=True)
    (store / "questions" / "ours" / "questions.jsonl").write_text("{}\n")
    ws = str(tmp_path / "w")
    argv = ["init", ws, "--seed", "nope", "--questions", "sim-basic", "--store", str(store)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unknown seed 'nope'" in err and "['mine']" in err and "'sim-starter'" in err, err
    argv = ["init", ws, "--seed", "sim-starter", "--questions", "nope", "--store", str(store)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'nope'" in err and "['ours']" in err and "'sim-basic'" in err, err


# -- --json on the commands that make something ---------------------------------------------------
class NoTraining:
    """The Runner replaced: `train` and `demo` go through the CLI and the API, no model runs."""

    def __init__(self, session) -> None:
        self.session = session

    async def train_async(self, *, resume: bool) -> None:
        return None


def json_of(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # one document and nothing else on stdout


def test_the_commands_that_make_something_take_json(
    evaluated: tuple[Path, api.EvalResult], tmp_path: Path, capsys, monkeypatch
) -> None:
    import app.api.training

    ws, run = evaluated

    new = tmp_path / "new"
    init = json_of(
        capsys, ["init", str(new), "--seed", "sim-starter", "--questions", "sim-basic", "--json"]
    )
    assert (init["root"], init["seed"], init["skills_version"]) == (str(new), "sim-starter", "v1")
    monkeypatch.setattr(app.api.training, "Runner", NoTraining)  # train and demo
    train = json_of(capsys, ["train", "-w", str(ws), "--no-progress", "--json"])
    assert train["workspace"] == str(ws) and train["simulated_model"] is True
    demo = json_of(capsys, ["demo", "-w", str(tmp_path / "demo"), "--no-progress", "--json"])
    assert demo["workspace"] == str(tmp_path / "demo") and "curve" in demo
    store = tmp_path / "store"
    skills = ROOT / "examples" / "agent-skills" / "sim-vague"
    imported = json_of(
        capsys, ["import-skills", str(skills), "--name", "vague", "--store", str(store), "--json"]
    )
    assert imported["seed"] == str(store / "seeds" / "vague")
    exported = json_of(
        capsys,
        ["export-skills", "-w", str(ws), "--version", "v1", "--out", str(tmp_path / "o"), "--json"],
    )
    assert exported["files"] and all(Path(f).is_file() for f in exported["files"])
    promoted = json_of(
        capsys,
        [
            "promote",
            "-w",
            str(ws),
            "v1",
            "--eval-run",
            run.run_id,
            "--name",
            "p1",
            "--store",
            str(store),
            "--json",
        ],
    )
    assert promoted["seed"] == str(store / "seeds" / "p1") and promoted["agent_skills"] == []


# -- did you mean: config keys and benchmark row fields -------------------------------------------
@pytest.mark.parametrize(
    ("toml", "meant"),
    [
        ("epoch = 2", "epochs"),
        ("gate.n_mx = 60", "gate.n_max"),
        ("[gate]\nn_mx = 60", "gate.n_max"),
    ],
)
def test_a_misspelled_config_key_names_the_key_meant(tmp_path: Path, toml: str, meant: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(toml + "\n")
    with pytest.raises(UserError, match=re.escape(f"(did you mean '{meant}'?)")):
        load_config(config)


def test_set_names_the_key_meant_and_its_help_example_is_a_key(capsys) -> None:
    assert main(["estimate", "-w", "W", "--set", "epoch=2"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("unknown config key 'epoch' (did you mean 'epochs'?)")
    )
    train = subparser(build_parser(), "train")
    help_text = next(a.help for a in train._actions if "--set" in a.option_strings)
    examples = re.findall(r"--set (\S+=\S+)", help_text or "")
    assert examples, help_text
    load_config(None, dict(parse_override(e) for e in examples))  # each sets a real key


def test_a_misspelled_row_field_is_named_with_the_field_meant_at_init(
    tmp_path: Path, capsys
) -> None:
    store = tmp_path / "store"
    bench = store / "questions" / "mine"
    bench.mkdir(parents=True)
    (bench / "benchmark.toml").write_text('name = "mine"\nseed = 1\n', encoding="utf-8")
    rows = [
        {"question_id": f"q{i}", "task_type": "t", "question": f"{i} + 1?", "answer": str(i + 1)}
        for i in range(12)
    ]
    rows[3]["familly"] = "f1"
    jsonl = bench / "questions.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["init", str(tmp_path / "w"), "--seed", "sim-starter", "--questions", "mine"]
    assert main([*argv, "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert f"{jsonl}:4: warning: unknown_field (q3): " in err, err
    assert "'familly' (did you mean 'family'?)" in err, err


# -- list -----------------------------------------------------------------------------------------
def test_list_names_store_and_built_in_seeds_and_benchmarks(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    (store / "seeds" / "sim-starter").mkdir(parents=True)  # hides the built-in one for init
    (store / "seeds" / "mine").mkdir()
    (store / "questions" / "ours").mkdir(parents=True)
    (store / "questions" / "ours" / "questions.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    (store / "questions" / "ours" / "benchmark.toml").write_text('description = "our own"\n')
    seeds = json_of(capsys, ["list", "seeds", "--store", str(store), "--json"])
    got = [(s["name"], s["source"], s["hidden"]) for s in seeds]
    assert got[:2] == [("mine", "store", False), ("sim-starter", "store", False)], got
    assert ("sim-starter", "built-in", True) in got and ("real-starter", "built-in", False) in got
    assert main(["list", "benchmarks", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ours", "store", "(2", "questions):", "our", "own"], lines
    assert any(line.startswith("sim-basic ") and "built-in (" in line for line in lines), lines


def test_list_runs_shows_a_workspaces_top_level_runs(
    ws: Path, evaluated: tuple[Path, api.EvalResult], capsys
) -> None:
    assert main(["list", "runs", "-w", str(ws)]) == 0
    assert capsys.readouterr().out.strip() == f"{ws}: no runs yet"
    ws, run = evaluated
    runs = json_of(capsys, ["list", "runs", "-w", str(ws), "--json"])
    assert [(r["run_id"], r["kind"], r["status"]) for r in runs] == [(run.run_id, "eval", "done")]
    assert runs[0]["accuracy"] == pytest.approx(run.accuracy)
    assert main(["list", "runs"]) == 2
    assert "list runs: give the workspace with -w DIR" in capsys.readouterr().err
