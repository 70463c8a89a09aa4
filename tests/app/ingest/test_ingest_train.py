"""Traces all the way to a trained skill: a chat-json export whose tasks are questions of the
simulated world -> `ingest --to-benchmark` -> `init` -> `train` (one epoch) on the world's own
model, which learns through its hidden rules; the workspace's pools share no family
(bench/ingest_train.py does the same for every format)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from app.cli import main

ROOT = Path(__file__).resolve().parents[3]
WORLD = ROOT / "store" / "questions" / "sim-large"
CONFIG = ROOT / "app" / "demo.toml"


def _write_export(path: Path, task_type: str) -> dict[str, str]:
    """One conversation per world question of `task_type` (the read_context call recorded
    where the case has a context); the answer for each question text."""
    rows = [json.loads(line) for line in (WORLD / "questions.jsonl").open()]
    truth: dict[str, str] = {}
    with path.open("w") as f:
        for i, q in enumerate(r for r in rows if r["task_type"] == task_type):
            messages: list[dict[str, object]] = [{"role": "user", "content": q["question"]}]
            if q.get("context"):
                call = {"name": "read_context", "arguments": '{"section": "full"}'}
                messages += [
                    {"role": "assistant", "tool_calls": [{"id": f"c{i}", "function": call}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": q["context"]},
                ]
            messages.append({"role": "assistant", "content": q["answer"]})
            f.write(json.dumps({"conversation_id": q["unit_id"], "messages": messages}) + "\n")
            truth[q["question"]] = q["answer"]
    return truth


def _accuracy(db: sqlite3.Connection, run_id: str, ids: list[str]) -> float:
    correct = dict(
        db.execute("SELECT question_id, correct FROM predictions WHERE run_id = ?", (run_id,))
    )
    return sum(bool(correct.get(q)) for q in ids) / len(ids)


def test_traces_train_a_skill_and_no_family_straddles_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export, store, ws = tmp_path / "chat.jsonl", tmp_path / "store", tmp_path / "ws"
    truth = _write_export(export, "units")
    ingest = ["ingest", "-w", str(ws), "--file", str(export), "--to-benchmark", "prod"]
    ingest += ["--store", str(store), "--reference", "final", "--task-type", "units"]
    assert main([*ingest, "--no-progress"]) == 0
    questions = [json.loads(line) for line in (store / "questions/prod/questions.jsonl").open()]
    assert len(questions) == len(truth)
    assert all(truth[q["question"]] == q["answer"] for q in questions)
    assert sum(1 for q in questions if q.get("context")) > 0  # the recorded context came along

    init = ["init", "-w", str(ws), "--store", str(store), "--seed", "sim-starter"]
    assert main([*init, "--questions", "prod"]) == 0
    # the default world (72 units per type) knows none of these questions: refused before
    # any call, naming the setting (app/providers/factory.py check_sim_worlds)
    refused = ["train", "-w", str(ws), "--config", str(CONFIG), "--no-progress"]
    capsys.readouterr()
    assert main(refused) == 2
    err = capsys.readouterr().err
    assert re.search(r"sim_units_per_type = 72: this simulated world knows \d+ of the 259 ", err)
    world = ["--set", "sim_units_per_type=216"]  # the world sim-large was generated from
    train = ["train", "-w", str(ws), "--config", str(CONFIG), *world, "--set", "epochs=2"]
    assert main([*train, "--no-progress"]) == 0

    with sqlite3.connect(ws / "harness.db") as db:
        test_ids = [
            r[0]
            for r in db.execute(
                "SELECT question_id FROM predictions WHERE run_id LIKE '%final-test'"
            )
        ]
        assert test_ids
        before, after = (_accuracy(db, run, test_ids) for run in ("baseline", "train1-final-test"))
    assert after > before, (before, after)

    # pools as the workspace recorded them: the gate's families, the final test's questions
    family = {
        q["question_id"]: q["family"]
        for q in map(json.loads, (ws / "questions" / "questions.jsonl").open())
    }
    seen: dict[str, set[str]] = {}
    for by_pool in json.loads((ws / "gate_pools.json").read_text())["families"].values():
        for pool, families in by_pool.items():
            for fam in families:
                seen.setdefault(fam, set()).add(pool)
    for qid in test_ids:
        seen.setdefault(family[qid], set()).add("test")
    assert set(seen) <= set(family.values())  # the gate's record names the questions' families
    assert {p for pools in seen.values() for p in pools} == {"diagnosis", "validation", "test"}
    assert [fam for fam, pools in seen.items() if len(pools) > 1] == []
