"""Secrets end to end: API keys never reach the workspace, the log or the console
(docs/architecture.md#models).

Canary keys sit in the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, a `*_TOKEN`) and
the same canaries are planted in a store copy: in a question's text and context, in a context
the simulated agent really reads through its tool, and in a seed skill file. Then `init`,
`train -v`, `report`, `report --json`, `eval` and `train --fresh` (which archives the first
workspace) run as real processes. Afterwards every byte under the test folder (workspace,
archive, harness.db and its WAL, response_cache.db, logs, reports, analyses) and every captured
stdout/stderr is searched for the canaries: zero hits. Keyed placeholders `[REDACTED:...]`
stand where the canaries were, and every JSON file still parses.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.paths import builtin_store
from app.providers.sim.world import build_world
from core.redact import placeholder

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]


def _canaries() -> dict[str, str]:
    tag = secrets.token_hex(12)
    return {
        "OPENAI_API_KEY": f"sk-canary-openai-{tag}",
        "ANTHROPIC_API_KEY": f"sk-ant-canary-{tag[::-1]}",
        "SKILL_TRAINER_TEST_TOKEN": f"tok-canary-{secrets.token_hex(8)}",
    }


def _make_store(base: Path, canaries: dict[str, str]) -> tuple[Path, str]:
    """sim-basic (ledger + units) with canaries planted; returns the store and the id of the
    question whose context the simulated agent reads through `read_context`."""
    openai, anthropic, token = canaries.values()
    store = base / "store"
    shutil.copytree(builtin_store() / "seeds" / "sim-starter", store / "seeds" / "sim-starter")
    skill = store / "seeds" / "sim-starter" / "skills" / "ledger.md"
    skill.write_text(skill.read_text() + f"\n<!-- deploy key {token} -->\n")
    lines = [
        json.loads(line)
        for line in (builtin_store() / "questions" / "sim-basic" / "questions.jsonl")
        .read_text()
        .splitlines()
    ]
    lines = [q for q in lines if q["task_type"] in ("ledger", "units")]
    world = build_world()
    read = next(
        q
        for q in lines
        if q.get("context")
        and q["unit_id"] == q["question_id"]
        and (case := world.case_for_text(q["question"]))
        and case.needs_context
    )
    first, _, rest = read["context"].partition("\n")
    read["context"] = f"{first} (account key {openai})\n{rest}"
    lines.append(
        {
            "question_id": "leaky-1",
            "task_type": "ledger",
            "question": f"Which key is this: {openai}? Also {anthropic}.",
            "answer": "none",
            "context": f"Summary: {anthropic}\nFACT: key={openai}",
        }
    )
    folder = store / "questions" / "leaky"
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in lines), encoding="utf-8"
    )
    (folder / "benchmark.toml").write_text(
        'name = "leaky"\nseed = 5\n[split]\ndiagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n'
    )
    return store, read["question_id"]


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("secrets")
    canaries = _canaries()
    store, read_qid = _make_store(base, canaries)
    ws = base / "workspaces" / "ws"
    env = {**os.environ, **canaries}
    outputs: list[tuple[str, subprocess.CompletedProcess]] = []

    def run(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "main.py", *args], cwd=ROOT, env=env, capture_output=True, timeout=300
        )
        outputs.append((" ".join(args[:2]), proc))
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
        return proc

    run("init", str(ws), "--seed", "sim-starter", "--questions", "leaky", "--store", str(store))
    run("train", "-w", str(ws), "-v", *TRAIN)
    run("report", str(ws))
    run("report", str(ws), "--json")
    run("eval", "v1", "-w", str(ws), "--no-progress", "-v")
    run("train", "-w", str(ws), "--fresh", "--store", str(store), *TRAIN)
    return {
        "base": base,
        "store": store,
        "ws": ws,
        "canaries": canaries,
        "read_qid": read_qid,
        "outputs": outputs,
    }


def _needles(canaries: dict[str, str]) -> list[bytes]:
    """Each canary, and its random tail alone (catches a truncated or re-prefixed leak)."""
    out = []
    for value in canaries.values():
        out += [value.encode(), value.rsplit("-", 1)[-1].encode()]
    return out


@pytest.mark.slow
def test_no_canary_byte_anywhere_in_the_workspaces(leaky_run):
    base, canaries = leaky_run["base"], leaky_run["canaries"]
    archived = [p for p in (base / "workspaces").iterdir() if ".archived-" in p.name]
    assert len(archived) == 1, "train --fresh did not archive the first workspace"
    files = [p for p in (base / "workspaces").rglob("*") if p.is_file()]
    names = {p.name for p in files}
    for expected in (
        "harness.db",
        "response_cache.db",
        "skill-trainer.log",
        "manifest.json",
        "checkpoint.json",
        "final_test_eval.json",
        "questions.jsonl",
    ):
        assert expected in names, f"{expected} missing: the run did not write what it should"
    assert any(p.parent.name == "steps" for p in files)
    hits = [
        (str(p.relative_to(base)), n.decode())
        for p in files
        for n in _needles(canaries)
        if n in p.read_bytes()
    ]
    assert hits == []
    # file names too
    assert [
        p for p in base.rglob("*") if any(n.decode() in p.name for n in _needles(canaries))
    ] == []


def test_no_canary_in_any_console_output(leaky_run):
    canaries = leaky_run["canaries"]
    assert len(leaky_run["outputs"]) == 6
    for label, proc in leaky_run["outputs"]:
        for stream in (proc.stdout, proc.stderr):
            for needle in _needles(canaries):
                assert needle not in stream, f"{label}: canary on the console"
    verbose_train = leaky_run["outputs"][1][1].stderr
    assert b"epoch 1" in verbose_train  # the console really carried the run's log


def test_placeholders_stand_where_the_canaries_were(leaky_run):
    ws, canaries = leaky_run["ws"], leaky_run["canaries"]
    marks = {name: placeholder(value) for name, value in canaries.items()}
    frozen = (ws / "questions" / "questions.jsonl").read_text(encoding="utf-8")
    rows = {q["question_id"]: q for q in map(json.loads, frozen.splitlines())}
    leaky = rows["leaky-1"]
    assert marks["OPENAI_API_KEY"] in leaky["question"]
    assert marks["ANTHROPIC_API_KEY"] in leaky["question"]
    assert marks["ANTHROPIC_API_KEY"] in leaky["context"]
    assert marks["OPENAI_API_KEY"] in leaky["context"]
    assert marks["OPENAI_API_KEY"] in rows[leaky_run["read_qid"]]["context"]
    skill = (ws / "skills" / "v1" / "ledger.md").read_text(encoding="utf-8")
    assert marks["SKILL_TRAINER_TEST_TOKEN"] in skill
    # the context the agent read through its tool is in the logged trajectory, redacted
    conn = sqlite3.connect(ws / "harness.db")
    try:
        steps = [
            json.loads(r[0])
            for r in conn.execute(
                "SELECT steps_json FROM predictions WHERE question_id = ?", (leaky_run["read_qid"],)
            )
        ]
    finally:
        conn.close()
    outputs = [
        s.get("output", "")
        for trajectory in steps
        for s in trajectory
        if s["type"] == "tool" and s["name"] == "read_context"
    ]
    assert outputs, "the agent never read the planted context: the test lost its teeth"
    assert all(marks["OPENAI_API_KEY"] in o for o in outputs)


def test_every_json_file_still_parses(leaky_run):
    base = leaky_run["base"] / "workspaces"
    checked = 0
    for path in base.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))
        checked += 1
    for path in base.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                json.loads(line)
    assert checked >= 10
    for db in base.rglob("harness.db"):
        conn = sqlite3.connect(db)
        try:
            bad = conn.execute(
                "SELECT COUNT(*) FROM predictions WHERE NOT json_valid(steps_json)"
            ).fetchone()[0]
            bad += conn.execute(
                "SELECT COUNT(*) FROM step_reports WHERE NOT json_valid(report_json)"
            ).fetchone()[0]
            bad += conn.execute(
                "SELECT COUNT(*) FROM _runs WHERE NOT json_valid(config_json) "
                "OR NOT json_valid(provenance_json)"
            ).fetchone()[0]
        finally:
            conn.close()
        assert bad == 0, db
