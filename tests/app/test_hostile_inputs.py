"""Hostile inputs: odd benchmarks, bad configs, newer-version workspaces
(docs/architecture.md#the-store).

A benchmark full of unicode edge cases (RTL and bidi controls, combining marks, emoji with
ZWJ, NUL inside strings, a 1 MB question) must work end to end for `init` + `eval v1`. A bad
benchmark (duplicate ids, a pair split across families, a unit of three) is refused with the
offending `file:line`; a config value out of range exits 2 naming the key; a workspace that
claims a newer schema is refused with a clear message. Nothing is half-written in any case.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.paths import builtin_store

ROOT = Path(__file__).resolve().parents[2]
SPLIT = "[split]\ndiagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n"

NUL_ID = "nul-\u0000-id"
HOSTILE = [
    {
        "question_id": "rtl-\u202eevil\u202c-\u05e9\u05dc\u05d5\u05dd",
        "task_type": "ledger",
        "question": "\u202e?latot eht si tahW \u05de\u05d4 \u05d4\u05e1\u05db\u05d5\u05dd "
        "\u0645\u0627 \u0647\u0648 \u2067isolated\u2069",
        "answer": "42",
        "context": "\u202bRTL summary\u202c\nFACT: \u05e9\u05dc\u05d5\u05dd",
    },
    {
        "question_id": "zalgo-e\u0301\u0301\u0301",
        "task_type": "units",
        "question": "Z\u0351\u0357a\u0350l\u035ag\u0359o\u0301 t\u0300e\u0301x\u0302t\u0303 "
        "e\u0301 vs \u00e9",
        "answer": "\u00e9",
    },
    {
        "question_id": "emoji-\U0001f9ea-\U0001f469\u200d\U0001f469\u200d\U0001f467",
        "task_type": "ledger",
        "question": "\U0001f1fa\U0001f1f8 \U0001f44d\U0001f3fd "
        "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 total?",
        "answer": "\U0001f9ea",
        "context": "\U0001f4c4 summary\nFACT: \U0001f9ea",
    },
    {
        "question_id": NUL_ID,
        "task_type": "units",
        "question": "before\u0000after \u0000\u0000",
        "answer": "a\u0000b",
        "context": "sum\u0000mary\nFACT: \u0000",
    },
    {
        "question_id": "big-1mb",
        "task_type": "ledger",
        "question": "B" * 1_000_000 + " total?",
        "answer": "1",
    },
    {
        "question_id": "pair-a",
        "unit_id": "pair-\U0001f91d",
        "task_type": "units",
        "question": "pair member \u2066isolate\u2069 one",
        "answer": "1",
    },
    {
        "question_id": "pair-b",
        "unit_id": "pair-\U0001f91d",
        "task_type": "units",
        "question": "pair member two \ufeff BOM inside",
        "answer": "2",
    },
    {
        "question_id": "ctl-\u0007",
        "task_type": "ledger",
        "question": "bell \u0007 esc \u001b[31m red \u001b[0m \u2028 line sep \u2029 para",
        "answer": "x",
    },
]


# -- helpers --------------------------------------------------------------------------------
def sim_lines(task_types=("ledger", "units"), limit: int | None = None) -> list[dict]:
    lines = [
        json.loads(line)
        for line in (builtin_store() / "questions" / "sim-basic" / "questions.jsonl")
        .read_text()
        .splitlines()
    ]
    picked = [q for q in lines if q["task_type"] in task_types]
    return picked[:limit] if limit else picked


def make_store(base: Path, name: str, questions: list[dict] | bytes) -> Path:
    """A store with the sim-starter seed and one benchmark called `name`."""
    store = base / "store"
    if not (store / "seeds").exists():
        shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
    folder = store / "questions" / name
    folder.mkdir(parents=True)
    raw = (
        questions
        if isinstance(questions, bytes)
        else "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions).encode("utf-8")
    )
    (folder / "questions.jsonl").write_bytes(raw)
    (folder / "benchmark.toml").write_text(f'name = "{name}"\nseed = 3\n{SPLIT}')
    return store


def snapshot(ws: Path) -> dict[str, str]:
    """Every file's bytes (hash), except the human log and SQLite's WAL side files."""
    out = {}
    for p in sorted(Path(ws).rglob("*")):
        rel = str(p.relative_to(ws))
        if p.is_dir() or rel.startswith("logs/") or rel.endswith(("-wal", "-shm")):
            continue
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.fixture(scope="module")
def base_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("hostile-base") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture
def ws(base_ws, tmp_path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(base_ws, target)
    return target


# -- 1. unicode edge cases end to end ------------------------------------------------------
def test_unicode_and_huge_benchmark_works_end_to_end(tmp_path):
    questions = sim_lines(limit=40) + HOSTILE
    store = make_store(tmp_path, "hostile", questions)
    ws = tmp_path / "ws \u05e9 \U0001f9ea"  # the workspace path itself is not ASCII
    env = {"LC_ALL": "C", "LANG": "C"}  # a bare locale: output must still not crash
    init = run_cli(
        "init",
        str(ws),
        "--seed",
        "sim-starter",
        "--questions",
        "hostile",
        "--store",
        str(store),
        env=env,
    )
    assert init.returncode == 0, init.stderr.decode("utf-8", "replace")
    frozen = (ws / "questions" / "questions.jsonl").read_bytes()
    assert frozen == (store / "questions" / "hostile" / "questions.jsonl").read_bytes()
    ev = run_cli("eval", "v1", "-w", str(ws), "--no-progress", env=env)
    assert ev.returncode == 0, ev.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in ev.stderr
    [report_path] = (ws / "analyses").glob("eval_*.json")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    units = {q.get("unit_id") or q["question_id"] for q in questions}
    assert report["total_units"] == len(units)
    assert report["stop_reason_counts"].get("error", 0) == 0
    conn = sqlite3.connect(ws / "harness.db")
    try:
        rows = conn.execute(
            "SELECT question_id, steps_json FROM predictions WHERE run_id = ?", (report["run_id"],)
        ).fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert sorted(r[0] for r in rows) == sorted(q["question_id"] for q in questions)
    for _, steps in rows:
        assert json.loads(steps)[-1]["type"] == "verdict"
    rep = run_cli("report", str(ws), "--json", env=env)
    assert rep.returncode == 0, rep.stderr.decode("utf-8", "replace")
    summary = json.loads(rep.stdout.decode("utf-8"))
    assert summary["current"]["questions"] == "hostile"
    from app.tui.data import PredictionFilter, WorkspaceData

    data = WorkspaceData(ws)
    assert data.question(NUL_ID)["answer"] == "a\u2400b"  # the TUI shows NUL as a visible ␀
    assert len(data.question("big-1mb")["question"]) > 1_000_000
    page = data.predictions_page(report["run_id"], PredictionFilter(search="\U0001f9ea"))
    assert len(page.rows) == 1


# -- 2. bad benchmarks: file:line, nothing created ----------------------------------------------
def _q(qid: str, **kw) -> dict:
    return {
        "question_id": qid,
        "task_type": "ledger",
        "question": f"question {qid}",
        "answer": "1",
        **kw,
    }


BAD_BENCHMARKS = {
    # name: (lines, the line the error must name, words the message must hold)
    "duplicate-id": ([_q("a"), _q("b"), _q("c"), _q("b")], 4, ["duplicate", "'b'", "line 2"]),
    "duplicate-id-unicode": (
        [_q("\U0001f9ea"), _q("x"), _q("\U0001f9ea")],
        3,
        ["duplicate", "first on line 1"],
    ),
    "pair-split-across-families": (
        [_q("p1", unit_id="u", family="f1"), _q("x"), _q("p2", unit_id="u", family="f2")],
        3,
        ["'u'", "famil"],
    ),
    "unit-of-three": (
        [_q("t1", unit_id="t"), _q("t2", unit_id="t"), _q("y"), _q("t3", unit_id="t")],
        4,
        ["'t'", "3 questions"],
    ),
    "pair-mixing-task-types": (
        [_q("m1", unit_id="m"), _q("m2", unit_id="m", task_type="units")],
        2,
        ["'m'", "task types"],
    ),
    "not-an-object": ([_q("a"), ["not", "an", "object"]], 2, ["JSON object"]),
    "empty-answer": ([_q("a"), _q("b", answer="  ")], 2, ["'answer'"]),
}


@pytest.mark.parametrize("name", list(BAD_BENCHMARKS))
def test_bad_benchmark_is_refused_naming_the_line(name, tmp_path, capsys):
    lines, lineno, words = BAD_BENCHMARKS[name]
    store = make_store(tmp_path, "bad", lines)
    parent = tmp_path / "parent"
    parent.mkdir()
    capsys.readouterr()
    rc = main(
        [
            "init",
            str(parent / "ws"),
            "--seed",
            "sim-starter",
            "--questions",
            "bad",
            "--store",
            str(store),
        ]
    )
    line = error_line(capsys.readouterr().err)
    assert rc == 2
    assert f"questions.jsonl:{lineno}:" in line, line
    for word in words:
        assert word in line, line
    assert list(parent.iterdir()) == []


def test_invalid_utf8_line_is_refused_naming_the_line(tmp_path, capsys):
    raw = (
        (json.dumps(_q("a")) + "\n" + json.dumps(_q("b")) + "\n").encode()
        + b'{"question_id": "c\xff\xfe", "task_type": "ledger", "question": "q", "answer": "1"}\n'
    )
    store = make_store(tmp_path, "bad", raw)
    rc = main(
        [
            "init",
            str(tmp_path / "ws"),
            "--seed",
            "sim-starter",
            "--questions",
            "bad",
            "--store",
            str(store),
        ]
    )
    line = error_line(capsys.readouterr().err)
    assert rc == 2 and "questions.jsonl:3:" in line and "UTF-8" in line
    assert not (tmp_path / "ws").exists()


def test_task_type_with_a_path_separator_is_refused_or_harmless(tmp_path, capsys):
    questions = sim_lines()
    for q in questions:
        if q["task_type"] == "ledger":
            q["task_type"] = "x/../../../../escape"
    store = make_store(tmp_path, "tt", questions)
    ws = tmp_path / "a" / "ws"
    rc = main(
        ["init", str(ws), "--seed", "sim-starter", "--questions", "tt", "--store", str(store)]
    )
    err = capsys.readouterr().err
    if rc == 2:  # refused at load: fine, when it names the line
        assert "questions.jsonl:" in error_line(err)
        return
    assert rc == 0, err
    rc = main(
        [
            "train",
            "-w",
            str(ws),
            "--set",
            "epochs=1",
            "--set",
            'task_types=["x/../../../../escape", "units"]',
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert [p for p in tmp_path.rglob("*escape*")] == []
    assert rc == 0, err


# -- 3. config out of range: exit 2 naming the key, nothing written ----------------------------
BAD_CONFIG = [
    (["edit_budget_start=-1"], ["edit_budget_start"]),
    (["edit_budget_end=-3"], ["edit_budget_end"]),
    (["max_cost_usd=-5.0"], ["max_cost_usd"]),
    (["max_cost_usd=0"], ["max_cost_usd"]),
    (["gate.n_max=0"], ["gate.n_max"]),
    (["gate_n_max=0"], ["gate.n_max"]),  # the spelling from before [gate] was a section
    (["momentum_samples=-1"], ["momentum_samples"]),
    (['gate.strategy="vibes"', "gate.minibatch_k=0"], ["gate.strategy", "gate.minibatch_k"]),
    (["gate.lambda_dir=1.0"], ["gate.lambda_dir"]),
    (["gate.lambda_dir=0"], ["gate.lambda_dir"]),
    (["gate.lambda_dir=-0.2"], ["gate.lambda_dir"]),
    (["gate.lambda_max=1.5"], ["gate.lambda_max"]),
    (["gate.lambda_dir=nan"], ["gate.lambda_dir"]),
    (['gate.lambda_strategy="bogus"'], ["gate.lambda_strategy"]),
    (["gate.lambda_strategy=bogus"], ["gate.lambda_strategy"]),
    (['skill_mode="sideways"'], ["skill_mode"]),
    (["sim_adversarial_share=1.5"], ["sim_adversarial_share"]),
    (["gate.e_confirm=0.5"], ["gate.e_confirm"]),
    (["epochs=-1"], ["epochs"]),
    (['epochs="two"'], ["epochs"]),
    (["epochs=true"], ["epochs"]),
    (["gate_lamda_dir=0.3"], ["gate_lamda_dir"]),
    (["gate.lamda_dir=0.3"], ["gate.lamda_dir"]),
    (["task_types=[1, 2]"], ["task_types"]),
]


@pytest.mark.parametrize("command", ["train", "eval"])
@pytest.mark.parametrize("overrides, keys", BAD_CONFIG, ids=["+".join(o) for o, _ in BAD_CONFIG])
def test_config_out_of_range_exits_2_naming_the_key(command, overrides, keys, ws, capsys):
    before = snapshot(ws)
    args = ["train", "-w", str(ws)] if command == "train" else ["eval", "v1", "-w", str(ws)]
    sets = [a for o in overrides for a in ("--set", o)]
    capsys.readouterr()
    rc = main([*args, *sets, "--no-progress"])
    line = error_line(capsys.readouterr().err)
    assert rc == 2
    for key in keys:
        assert key in line, line
    assert snapshot(ws) == before


def test_config_file_out_of_range_names_the_key(ws, tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('epochs = 0\n[gate]\nstrategy = "vibes"\nlambda_dir = 0.5\n')
    before = snapshot(ws)
    rc = main(["train", "-w", str(ws), "--config", str(cfg), "--no-progress"])
    line = error_line(capsys.readouterr().err)
    assert rc == 2
    assert "gate.strategy" in line and "epochs" in line
    assert snapshot(ws) == before


NAN_CONFIG = [
    "gate.e_confirm=nan",
    "gate.e_rollback=nan",
    "max_cost_usd=nan",
    "request_timeout_s=nan",
    "temperature=-1.0",
]


@pytest.mark.parametrize("override", NAN_CONFIG)
def test_nan_and_negative_temperature_are_refused(override, ws, capsys):
    rc = main(["eval", "v1", "-w", str(ws), "--set", override, "--no-progress"])
    line = error_line(capsys.readouterr().err)
    assert rc == 2 and override.split("=")[0] in line


# -- 4. a workspace from a newer skill-trainer ------------------------------------------------
def _newer_manifest(ws: Path) -> None:
    data = json.loads((ws / "manifest.json").read_text())
    data["schema"] = 99
    (ws / "manifest.json").write_text(json.dumps(data))


def _newer_checkpoint(ws: Path) -> None:
    (ws / "checkpoint.json").write_text(
        json.dumps(
            {
                "schema": 99,
                "progress": {"epoch": 1, "phase": "in_epoch"},
                "state": {},
                "manifest": {},
                "versions_max": {},
                "config_fingerprint": {},
            }
        )
    )


def _newer_log(ws: Path) -> None:
    conn = sqlite3.connect(ws / "harness.db")
    with conn:
        conn.execute("INSERT INTO _migrations VALUES (99, 'from the future', '2099-01-01')")
    conn.close()


NEWER = {
    "manifest-train": (_newer_manifest, ["train"], "schema 99"),
    "manifest-fresh": (_newer_manifest, ["train", "--fresh"], "schema 99"),
    "manifest-eval": (_newer_manifest, ["eval", "v1"], "schema 99"),
    "manifest-infer": (_newer_manifest, ["infer"], "schema 99"),
    "checkpoint-resume": (_newer_checkpoint, ["train", "--resume"], "schema 99"),
    "log-train": (_newer_log, ["train"], "schema 99"),
    "log-eval": (_newer_log, ["eval", "v1"], "schema 99"),
}


@pytest.mark.parametrize("name", list(NEWER))
def test_newer_schema_is_refused_and_nothing_is_written(name, ws, capsys):
    make_newer, command, words = NEWER[name]
    make_newer(ws)
    before = snapshot(ws)
    capsys.readouterr()
    rc = main([command[0], *command[1:], "-w", str(ws), "--set", "epochs=1", "--no-progress"])
    line = error_line(capsys.readouterr().err)
    assert rc == 2
    assert words in line and "newer" in line, line
    assert {k: v for k, v in snapshot(ws).items() if k != "response_cache.db"} == before
    assert not (ws / "train.lock").exists()


def test_report_on_a_newer_manifest_is_refused(ws, capsys):
    _newer_manifest(ws)
    rc = main(["report", str(ws), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and "newer" in error_line(captured.err)
    assert captured.out == ""


def test_newer_checkpoint_refusal_creates_no_file(ws, capsys):
    _newer_checkpoint(ws)
    before = snapshot(ws)
    rc = main(["train", "--resume", "-w", str(ws), "--no-progress"])
    assert rc == 2
    assert snapshot(ws) == before
