"""`init` without `--seed` (app/harness/workspace/starter.py): one starter skill file per task
type of the benchmark, the prompts of `--prompts-from`, said in init's output; `train --fresh`
builds the same starter again. With a seed that lacks the files, init names the collision
`train` would refuse."""

from __future__ import annotations

import json
from pathlib import Path

from app.cli import main
from app.harness.workspace.workspace import read_version_files

ORACLE = ['agent_model="sim/oracle"', 'evolver_model="sim/oracle"', 'judge_model="sim/oracle"']


def write_store(root: Path) -> Path:
    """Two task types of 20 single-question families: trainable (5 validation units each)."""
    bench = root / "questions" / "desk"
    bench.mkdir(parents=True)
    rows = [
        {
            "question_id": f"{t}{i:02d}",
            "task_type": t,
            "question": f"[{t}] What is {i} * 17?",
            "answer": str(i * 17),
            "checker": "numeric",
        }
        for t in ("billing", "shipping")
        for i in range(20)
    ]
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (bench / "benchmark.toml").write_text('name = "desk"\ntask_types = ["billing", "shipping"]\n')
    return root


def test_init_without_a_seed_writes_one_starter_skill_per_task_type(tmp_path: Path, capsys) -> None:
    store, ws = str(write_store(tmp_path / "store")), tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--questions", "desk", "--store", store]) == 0
    captured = capsys.readouterr()
    assert "seed desk-starter" in captured.out
    assert (
        "no --seed: starter skills billing.md, shipping.md (one per task type, no rules yet) "
        "and default-strategy.md; prompts from seed sim-starter" in captured.err
    )
    skills = read_version_files(ws / "skills" / "v1")
    assert set(skills) == {"billing.md", "shipping.md", "default-strategy.md"}
    assert skills["billing.md"].startswith("# billing cases")
    assert "system.md" in read_version_files(ws / "prompts" / "v1")
    manifest = json.loads((ws / "manifest.json").read_text())
    assert manifest["seed"] == "desk-starter"
    assert manifest["seed_starter"] == {"prompts_from": "sim-starter"}
    # it trains (no shared skill file) and `train --fresh` builds the same starter again
    sets = [a for s in [*ORACLE, "epochs=1"] for a in ("--set", s)]
    fresh = ["train", "-w", str(ws), "--fresh", "--store", store, "--no-progress", *sets]
    assert main(fresh) == 0, capsys.readouterr().err[-800:]
    captured = capsys.readouterr()
    assert "share a skill file" not in captured.err
    assert read_version_files(ws / "skills" / "v1") == skills
    assert json.loads((ws / "manifest.json").read_text())["seed"] == "desk-starter"


def test_init_with_a_seed_lacking_the_files_names_the_collision(tmp_path: Path, capsys) -> None:
    store, ws = str(write_store(tmp_path / "store")), tmp_path / "ws"
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "desk"]
    assert main([*init, "--store", store]) == 0  # init warns; train would refuse
    err = capsys.readouterr().err
    assert (
        "error: shared_skill_file: task types billing, shipping would share the skill file "
        "default-strategy.md of seed sim-starter" in err
    )
    assert "init without --seed" in err
