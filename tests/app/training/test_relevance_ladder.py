"""`[gate] ladder_order = "relevance"`: stage 1 most relevant to the edit first, by texts alone
(core/evolution/relevance.py, app/harness/training/gate_ladder.py `ladder_for`,
app/harness/training/step.py `ladder_relevance`)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

from app.cli import main
from app.harness.training.gate_ladder import GatePools
from core.types import Question, QuestionUnit

ROOT = Path(__file__).resolve().parents[3]


def _pools() -> GatePools:
    units = []
    for i in range(40):
        q = Question(question_id=f"a{i:02d}", task_type="a", question="?", answer="x")
        units.append(QuestionUnit(unit_id=q.unit_id, task_type="a", questions=(q,)))
    validation = {f"a{i:02d}" for i in range(30, 40)}
    return GatePools.build(units, validation, set(), seed=3)


def test_relevance_sorts_stage_one_only_and_ties_keep_the_shuffle() -> None:
    pools = _pools()
    plain = pools.ladder_for("a", {"a00"}, key="k")
    scores = {"a05": 0.9, "a17": 0.4, "a22": 0.4, "a31": 5.0}  # a31 is a stage-2 family
    ranked = pools.ladder_for("a", {"a00"}, key="k", relevance=scores)
    assert sorted(ranked.stage1) == sorted(plain.stage1)  # the same families, none added
    assert ranked.stage2 == plain.stage2  # stage 2 (probation's) keeps the seeded order
    order = [f for f, _ in ranked.stage1]
    plain_order = [f for f, _ in plain.stage1]
    tied = sorted(["a17", "a22"], key=plain_order.index)
    assert order[:3] == ["a05", *tied]
    assert order[3:] == [f for f in plain_order if f not in scores]  # the rest: shuffle order


def test_a_relevance_ladder_run_tests_the_questions_the_rule_names_first(tmp_path) -> None:
    """Through real steps on the simulated model: in every gate test of a rule "... cases
    marked T ...", the stage-1 families with a question that names T come before the others."""
    store = tmp_path / "store"
    shutil.copytree(ROOT / "store", store)
    # families of 3 as one observation (the default, near-duplicates): a family's text is its
    # three questions, which names a rule's marker when one of them does; unit by unit, a
    # pair's two questions can outscore a single question that names it (TF-IDF over words)
    toml = store / "questions" / "sim-basic" / "benchmark.toml"
    toml.write_text(toml.read_text().replace('family_units = "independent"\n', ""))
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]
    assert main([*init, "--store", str(store)]) == 0
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        'epochs = 1\nbatch_size = 48\nconcurrency = 8\n[gate]\nladder_order = "relevance"\n'
    )
    assert main(["train", "-w", str(ws), "--config", str(cfg), "--no-progress"]) == 0
    pools = GatePools.load(ws / "gate_pools.json")
    family_of = {
        u: f
        for stages in pools.families.values()
        for f, ids in stages["diagnosis"].items()
        for u in ids
    }
    texts = {
        json.loads(line)["question_id"]: json.loads(line)["question"]
        for line in (store / "questions" / "sim-basic" / "questions.jsonl").read_text().splitlines()
        if line.strip()
    }
    checked = 0
    with sqlite3.connect(ws / "harness.db") as conn:
        evolutions = conn.execute(
            "SELECT step, task_type, edits_json FROM evolutions WHERE target_kind = 'skill'"
        ).fetchall()
        for step, task_type, edits_json in evolutions:
            added = " ".join(e.get("content") or e.get("new") or "" for e in json.loads(edits_json))
            triggers = set(re.findall(r"cases marked (\S+?),", added))
            families: dict[str, bool] = {}  # stage-1 family -> does a question name a trigger
            for (u,) in conn.execute(
                "SELECT unit_id FROM gate_evidence WHERE run_id = ? ORDER BY idx",
                (f"train1-e1-s{step}-gate-{task_type}",),
            ):
                if u in family_of:
                    hit = any(f"marked {t}" in _text(texts, u) for t in triggers)
                    families[family_of[u]] = families.get(family_of[u], False) or hit
            if not triggers or not families:
                continue
            named = list(families.values())
            assert named == sorted(named, reverse=True), (step, task_type, triggers)
            checked += named[0]
    assert checked >= 3  # gate tests of rules that did put a named question first


def _text(texts: dict[str, str], unit_id: str) -> str:
    """A unit's question text (a pair's two questions are `<unit>a` and `<unit>b`)."""
    return texts.get(unit_id) or texts.get(unit_id + "a", "") + texts.get(unit_id + "b", "")
