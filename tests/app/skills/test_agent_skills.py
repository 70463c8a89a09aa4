"""Agent Skills import/export (app/harness/skills/agent_skills.py) through the CLI."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from app.cli import main
from app.harness.skills.agent_skills import (
    MAX_DESCRIPTION,
    SIDECAR,
    body_of,
    parse_skills_dir,
    read_sidecar,
)
from app.harness.workspace.store import load_seed
from app.harness.workspace.workspace import read_version_files, resolve_paths

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "agent-skills" / "sim-vague"


@pytest.fixture
def store(tmp_path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(ROOT / "store", target)
    return target


def skill(root: Path, name: str, frontmatter: str, body: str = "# T\n\n## Rules\n- x\n") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}---\n{body}", encoding="utf-8")
    return folder


def test_import_keeps_frontmatter_bodies_and_read_only_resources(tmp_path, store):
    src = tmp_path / "skills"
    folder = skill(
        src,
        "ledger",
        "name: ledger\ndescription: Totals of a client's figures.\n"
        "license: MIT\ncompatibility: any agent\nallowed-tools: Read\n"
        "metadata:\n  author: ann\n",
    )
    (folder / "scripts").mkdir()
    (folder / "scripts" / "sum.py").write_text("print(1)\n")
    (folder / "references" / "deep").mkdir(parents=True)
    (folder / "references" / "deep" / "r.md").write_text("ref\n")
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 0
    seed = load_seed(store / "seeds" / "imp")
    assert seed.skills["ledger.md"] == "# T\n\n## Rules\n- x\n"
    assert read_sidecar(seed.skills)["ledger.md"] == {
        "name": "ledger",
        "description": "Totals of a client's figures.",
        "license": "MIT",
        "compatibility": "any agent",
        "allowed-tools": "Read",
        "metadata": {"author": "ann"},
    }
    assert "system.md" in seed.prompts  # prompts taken from --prompts-from (sim-starter)
    for rel in ("scripts/sum.py", "references/deep/r.md"):
        path = store / "seeds" / "imp" / "resources" / "ledger" / rel
        assert path.read_text() == (folder / rel).read_text()
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def test_mapping_in_seed_toml_sends_a_skill_to_a_task_type(tmp_path, store):
    src = tmp_path / "skills"
    skill(src, "sum-figures", "name: sum-figures\ndescription: Sums.\n")
    (src / "seed.toml").write_text('[skills]\nsum-figures = "ledger"\n')
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 0
    seed = load_seed(store / "seeds" / "imp")
    assert sorted(seed.skills) == [SIDECAR, "ledger.md"]
    assert read_sidecar(seed.skills)["ledger.md"]["name"] == "sum-figures"


BAD = [
    ("description: d\n", 1, "missing 'name'"),
    ("name: Not_Kebab\ndescription: d\n", 2, "kebab-case"),
    ("name: a--b\ndescription: d\n", 2, "kebab-case"),
    ("name: other\ndescription: d\n", 2, "differs from its folder"),
    ("name: good\n", 1, "missing 'description'"),
    ("name: good\ndescription: '   '\n", 3, "non-empty"),
    ("name: good\ndescription: " + "x" * (MAX_DESCRIPTION + 1) + "\n", 3, "max 1024"),
    ("name: good\ndescription: [unclosed\n", 3, "bad YAML"),
    ("name: good\ndescription: d\nmetadata: [1]\n", 4, "'metadata'"),
]


@pytest.mark.parametrize(("frontmatter", "line", "reason"), BAD)
def test_invalid_skills_name_file_and_line_and_exit_2(
    tmp_path, store, capsys, frontmatter, line, reason
):
    src = tmp_path / "skills"
    skill(src, "good", frontmatter)
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert f"{src / 'good' / 'SKILL.md'}:{line}:" in err
    assert reason in err
    assert not (store / "seeds" / "imp").exists()
    assert not any(p.name.startswith(".staging") for p in (store / "seeds").iterdir())


def test_no_frontmatter_and_symlinks_are_refused(tmp_path, store, capsys):
    src = tmp_path / "skills"
    (src / "good").mkdir(parents=True)
    (src / "good" / "SKILL.md").write_text("# no frontmatter\n")
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 2
    assert "SKILL.md:1: no YAML frontmatter" in capsys.readouterr().err
    skill(src, "good", "name: good\ndescription: d\n")
    (src / "good" / "assets").mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    os.symlink(secret, src / "good" / "assets" / "leak.txt")
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 2
    assert "leak.txt: symbolic links are not imported" in capsys.readouterr().err
    assert not (store / "seeds" / "imp").exists()


def test_seed_name_cannot_escape_the_store(tmp_path, store, capsys):
    assert main(["import-skills", str(EXAMPLE), "--name", "../evil", "--store", str(store)]) == 2
    assert "a seed name is" in capsys.readouterr().err
    assert not (store / "evil").exists()


def check_exported(path: Path) -> dict:
    """Every field of an exported SKILL.md against the Agent Skills format."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    fm = yaml.safe_load(head)
    assert set(fm) <= {
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
    }
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fm["name"]) and len(fm["name"]) <= 64
    assert fm["name"] == path.parent.name
    assert isinstance(fm["description"], str) and len(fm["description"].strip()) > 0
    assert len(fm["description"]) <= MAX_DESCRIPTION
    for key in ("license", "allowed-tools"):
        assert key not in fm or isinstance(fm[key], str)
    assert "compatibility" not in fm or 0 < len(fm["compatibility"]) <= 500
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in fm["metadata"].items())
    assert "momentum" not in body and "<!--" not in body
    digest = hashlib.sha256(body.removeprefix("\n").encode()).hexdigest()
    assert fm["metadata"]["skill-trainer.body-sha256"] == digest
    # a shared file names its workspace, not where it lay on this machine
    assert not any(v.startswith("/") or os.sep + "tmp" in v for v in fm["metadata"].values())
    return fm


SMALL = (
    "epochs = 1\nbatch_size = 48\nedit_budget_start = 3\nconcurrency = 8\n"
    "[gate]\ne_provisional = 3.0\n"
)


def test_round_trip_import_train_export_import(tmp_path, store):
    ws = tmp_path / "ws"
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    assert (
        main(
            [
                "init",
                str(ws),
                "--skills-from",
                str(EXAMPLE),
                "--seed",
                "vague",
                "--questions",
                "sim-basic",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    v1 = read_version_files(ws / "skills" / "v1")
    assert read_sidecar(v1)["ledger.md"]["description"] == "Guidance for client files."
    assert (
        main(["train", "-w", str(ws), "--config", str(cfg), "--no-progress", "--store", str(store)])
        == 0
    )
    current = resolve_paths(ws).skills_version
    assert main(["eval", current, "-w", str(ws), "--config", str(cfg), "--no-progress"]) == 0
    out = tmp_path / "out"
    assert (
        main(
            [
                "export-skills",
                "-w",
                str(ws),
                "--version",
                current,
                "--out",
                str(out),
                "--store",
                str(store),
            ]
        )
        == 0
    )
    exported = sorted((out / ".agents" / "skills").glob("*/SKILL.md"))
    assert [p.parent.name for p in exported] == sorted(p.name for p in EXAMPLE.iterdir())
    trained = read_version_files(ws / "skills" / current)
    for path in exported:
        fm = check_exported(path)
        meta = fm["metadata"]
        assert meta["origin"] == "store/seeds/sim-starter"  # the imported metadata is kept
        assert meta["skill-trainer.skills-version"] == current
        assert meta["skill-trainer.eval-run"].startswith(f"eval-{current}-")
        lo, hi = (float(x) for x in meta["skill-trainer.accuracy-ci95"].strip("[]").split(","))
        assert lo <= float(meta["skill-trainer.accuracy"]) <= hi
        assert len(meta["skill-trainer.sha256"]) == 64
        assert fm["license"] == "Apache-2.0"
        assert meta["skill-trainer.simulated-model"] == "true"
    # re-import: the same bodies and descriptions as the trained version, minus internals
    assert (
        main(
            [
                "import-skills",
                str(out / ".agents" / "skills"),
                "--name",
                "again",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    again = load_seed(store / "seeds" / "again").skills
    side_t, side_a = read_sidecar(trained), read_sidecar(again)
    for name in (n for n in trained if n.endswith(".md")):
        assert body_of(again[name]) == body_of(trained[name])
        assert side_a[name]["description"] == side_t[name]["description"]
    assert parse_skills_dir(out / ".agents" / "skills")  # every exported skill is valid


def test_export_refuses_to_overwrite_and_promote_writes_agent_skills(tmp_path, store, capsys):
    ws = tmp_path / "ws"
    assert (
        main(
            [
                "init",
                str(ws),
                "--seed",
                "sim-starter",
                "--questions",
                "sim-basic",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 0
    run_id = next(p.stem[len("eval_") :] for p in (ws / "analyses").glob("eval_*.json"))
    out = tmp_path / "out"
    assert (
        main(
            [
                "promote",
                "v1",
                "-w",
                str(ws),
                "--eval-run",
                run_id,
                "--name",
                "p1",
                "--store",
                str(store),
                "--agent-skills",
                str(out),
            ]
        )
        == 0
    )
    exported = sorted((out / ".agents" / "skills").glob("*/SKILL.md"))
    assert {p.parent.name for p in exported} == {
        "ledger",
        "units",
        "dates",
        "routing",
        "tagging",
        "default-strategy",
    }
    for path in exported:  # a seed without frontmatter gets a name and description
        fm = check_exported(path)
        assert fm["metadata"]["skill-trainer.eval-run"] == run_id
    assert (
        main(
            [
                "export-skills",
                "-w",
                str(ws),
                "--version",
                "v1",
                "--out",
                str(out),
                "--store",
                str(store),
            ]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err


def test_export_refuses_a_name_that_would_leave_the_output(tmp_path):
    from app.errors import UserError
    from app.harness.skills.agent_skills import export_skills, write_sidecar

    files = {
        "ledger.md": "# L\n",
        SIDECAR: write_sidecar({"ledger.md": {"name": "../../evil", "description": "d"}}),
    }
    with pytest.raises(UserError, match="kebab-case"):
        export_skills(files, tmp_path / "out", {})
    assert not (tmp_path / "evil").exists() and not (tmp_path / "out").exists()


def test_two_skills_mapped_to_one_task_type_are_refused(tmp_path, store, capsys):
    src = tmp_path / "skills"
    skill(src, "a", "name: a\ndescription: d\n")
    skill(src, "b", "name: b\ndescription: d\n")
    (src / "seed.toml").write_text('[skills]\na = "ledger"\nb = "ledger"\n')
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 2
    assert "both map to task type 'ledger'" in capsys.readouterr().err
    (src / "seed.toml").write_text('[skills]\na = "../x"\n')
    assert main(["import-skills", str(src), "--name", "imp", "--store", str(store)]) == 2
    assert "skills.a' must be a task type" in capsys.readouterr().err


def test_init_skills_from_refuses_an_existing_workspace_before_importing(tmp_path, store, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("x")
    assert (
        main(
            [
                "init",
                str(ws),
                "--skills-from",
                str(EXAMPLE),
                "--seed",
                "s1",
                "--questions",
                "sim-basic",
                "--store",
                str(store),
            ]
        )
        == 2
    )
    assert "already exists" in capsys.readouterr().err
    assert not (store / "seeds" / "s1").exists()


def test_init_warns_of_a_skill_no_task_type_of_the_benchmark_reads(tmp_path, store, capsys):
    src = tmp_path / "skills"
    skill(src, "ledger", "name: ledger\ndescription: Totals of a client's figures.\n")
    skill(src, "calendar", "name: calendar\ndescription: Dates.\n")
    args = ["--skills-from", str(src), "--questions", "sim-basic", "--store", str(store)]
    assert main(["init", str(tmp_path / "ws"), "--seed", "cal", *args]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "match no task" in line]
    assert len(warnings) == 1 and "skills calendar.md match no task type" in warnings[0]
    assert "questions sim-basic (dates, ledger, pricing, routing, tagging, units)" in warnings[0]
    (src / "seed.toml").write_text('[skills]\ncalendar = "dates"\n')  # mapped: read by dates
    assert main(["init", str(tmp_path / "ws2"), "--seed", "cal2", *args]) == 0
    assert "match no task" not in capsys.readouterr().err


def test_each_exported_skill_carries_its_own_accuracy_and_the_runs_by_name(tmp_path, store):
    """A skill's `accuracy` counts the units of the task types that read it in the eval run
    (the run's own per-task-type summary); the whole run's is `run-accuracy`."""
    import json
    import sqlite3

    from app.harness.workspace.harness_log import HarnessLog

    ws = tmp_path / "ws"
    init = ["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]
    assert main([*init, "--store", str(store)]) == 0
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 0
    out = tmp_path / "out"
    export = ["export-skills", "-w", str(ws), "--version", "v1", "--out", str(out)]
    assert main([*export, "--store", str(store)]) == 0
    with HarnessLog(ws / "harness.db", readonly=True) as log:
        (run,) = log.query("SELECT summary_json FROM _runs WHERE kind = 'eval'")
    summary = json.loads(run["summary_json"])
    per_type = summary["per_task_type"]
    metas = {
        p.parent.name: check_exported(p)["metadata"]
        for p in (out / ".agents" / "skills").glob("*/SKILL.md")
    }
    for name, meta in metas.items():
        assert meta["skill-trainer.run-accuracy"] == f"{summary['accuracy']:.4f}"
        assert meta["skill-trainer.run-accuracy-n"] == str(summary["total"])
        # a task type reads its own file, else the shared default (sim-basic's pricing)
        types = [
            t for t in per_type if t == name or (name == "default-strategy" and t not in metas)
        ]
        assert types, name
        assert meta["skill-trainer.accuracy-task-types"] == " ".join(sorted(types))
        correct = sum(per_type[t]["correct"] for t in types)
        total = sum(per_type[t]["total"] for t in types)
        assert meta["skill-trainer.accuracy"] == f"{correct / total:.4f}"
        assert meta["skill-trainer.accuracy-n"] == str(total)
        lo, hi = (float(x) for x in meta["skill-trainer.accuracy-ci95"].strip("[]").split(","))
        assert lo <= float(meta["skill-trainer.accuracy"]) <= hi
    skill_n = sum(int(m["skill-trainer.accuracy-n"]) for m in metas.values())
    assert skill_n == summary["total"]  # every unit is counted for exactly one skill
    assert len({m["skill-trainer.accuracy"] for m in metas.values()}) > 1
    # a run logged without per-task-type counts: the run's figure only, never as a skill's
    del summary["per_task_type"]
    with sqlite3.connect(ws / "harness.db") as conn:
        conn.execute(
            "UPDATE _runs SET summary_json = ? WHERE kind = 'eval'", (json.dumps(summary),)
        )
    again = ["export-skills", "-w", str(ws), "--version", "v1", "--out", str(tmp_path / "old")]
    assert main([*again, "--store", str(store)]) == 0
    for p in (tmp_path / "old" / ".agents" / "skills").glob("*/SKILL.md"):
        meta = check_exported(p)["metadata"]
        assert meta["skill-trainer.run-accuracy"] == f"{summary['accuracy']:.4f}"
        assert not any(k.startswith("skill-trainer.accuracy") for k in meta)
