"""Hostile inputs aimed at what commands write (docs/architecture.md#the-workspace-on-disk):
a YAML bomb in a skill's frontmatter, ids that are paths, symbolic links under a workspace or
an output folder, commands that fail half-way, and an export over a previous one.

Every refusal is one line naming the file, link or id, exit code 2, and leaves nothing behind:
no seed in the store, no file under the output, nothing written where a link points.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main

ROOT = Path(__file__).resolve().parents[3]
SKILL_NAMES = {"dates", "default-strategy", "ledger", "routing", "tagging", "units"}


def run_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if "error" in line]


def tree(folder: Path) -> list[str]:
    """Every path under `folder` (links not followed), to compare before and after."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def store(tmp_path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(ROOT / "store", target)
    return target


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> tuple[Path, str]:
    """A workspace with a finished `eval v1` (what promote and export-skills need)."""
    ws = tmp_path_factory.mktemp("hostile-writes") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 0
    run_id = next(p.stem[len("eval_") :] for p in (ws / "analyses").glob("eval_*.json"))
    return ws, run_id


@pytest.fixture
def ws(evaluated, tmp_path) -> Path:
    shutil.copytree(evaluated[0], tmp_path / "ws", symlinks=True)
    return tmp_path / "ws"


# -- a YAML bomb in a skill's frontmatter --------------------------------------------------------
def bomb(levels: int) -> str:
    """A "billion laughs" frontmatter: `name` is 9**levels strings once expanded."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, levels + 1):
        lines.append(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]")
    return "\n".join(lines) + f"\nname: *l{levels}\ndescription: d\n"


@pytest.mark.parametrize("command", ["import-skills", "init"])
def test_a_yaml_bomb_is_refused_at_once_naming_the_file(tmp_path, store, command):
    src = tmp_path / "skills"
    (src / "bomb").mkdir(parents=True)
    skill_md = src / "bomb" / "SKILL.md"
    skill_md.write_text(f"---\n{bomb(8)}---\n# body\n", encoding="utf-8")
    assert len(skill_md.read_bytes()) < 1200  # a 1 KB file
    if command == "init":
        args = ["init", "-w", str(tmp_path / "ws"), "--skills-from", str(src), "--seed", "bomb"]
        args += ["--questions", "sim-basic"]
    else:
        args = ["import-skills", str(src), "--name", "bomb"]
    result = run_cli(*args, "--store", str(store), timeout=30)  # 9x slower a level unfixed
    assert result.returncode == 2
    [line] = errors(result.stderr)
    assert f"{skill_md}:2: bad YAML in frontmatter: YAML anchor 'l0'" in line
    assert not (store / "seeds" / "bomb").exists() and not (tmp_path / "ws").exists()


def test_a_frontmatter_larger_than_the_bound_is_refused_unparsed(tmp_path, store, capsys):
    src = tmp_path / "skills"
    (src / "big").mkdir(parents=True)
    big = "".join(f"  k{i}: {'v' * 60}\n" for i in range(2000))  # metadata of ~130 KB
    (src / "big" / "SKILL.md").write_text(
        f"---\nname: big\ndescription: d\nmetadata:\n{big}---\n# body\n", encoding="utf-8"
    )
    assert main(["import-skills", str(src), "--name", "big", "--store", str(store)]) == 2
    assert "SKILL.md:2: frontmatter is " in capsys.readouterr().err
    assert not (store / "seeds" / "big").exists()


# -- ids that are paths ----------------------------------------------------------------------------
def test_a_rollout_id_that_is_a_path_is_refused_by_fork_rank_and_export(ws, tmp_path, capsys):
    before = tree(tmp_path)
    for command in (
        ["fork", "-w", str(ws), "--rollout-id", "../../../x", "-n", "2", "--limit", "2"],
        ["rank", "-w", str(ws), "../../../x"],
        ["export", "-w", str(ws), "../../../x"],
    ):
        assert main(command) == 2
        [line] = errors(capsys.readouterr().err)
        assert "'../../../x': use 1-100 letters" in line, line
    assert tree(tmp_path) == before
    import sqlite3

    conn = sqlite3.connect(ws / "harness.db")
    assert conn.execute("SELECT count(*) FROM _runs WHERE kind = 'fork'").fetchone() == (0,)
    conn.close()


@pytest.mark.parametrize("version", ["../../v1", "x/v1", "v1/.."])
def test_a_version_that_is_a_path_is_refused(ws, capsys, version):
    assert main(["eval", version, "-w", str(ws), "--no-progress"]) == 2
    assert "a skills version is vN" in capsys.readouterr().err


def test_the_api_checks_the_same_ids(ws):
    from app import api
    from app.errors import UserError

    with pytest.raises(UserError, match="a skills version is vN"):
        api.evaluate(ws, "../v1")
    with pytest.raises(UserError, match=r"--run-id \(run_id\) '\.\./x': use 1-100"):
        api.infer(ws, run_id="../x")


# -- symbolic links under an output or a workspace -------------------------------------------------
def export_skills(ws: Path, out: Path) -> int:
    return main(["export-skills", "-w", str(ws), "--version", "v1", "--out", str(out)])


def promote(ws: Path, run_id: str, store: Path, out: Path, name: str = "p1") -> int:
    args = ["promote", "v1", "-w", str(ws), "--eval-run", run_id, "--name", name]
    return main([*args, "--store", str(store), "--agent-skills", str(out)])


@pytest.mark.parametrize("link", [".agents", ".agents/skills"])
def test_export_skills_and_promote_never_write_through_a_linked_output(
    ws, evaluated, store, tmp_path, capsys, link
):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(elsewhere, target_is_directory=True)
    assert export_skills(ws, out) == 2
    [line] = errors(capsys.readouterr().err)
    assert f"{out / link}: is a symbolic link" in line
    assert promote(ws, evaluated[1], store, out) == 2
    assert f"{out / link}: is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert not (store / "seeds" / "p1").exists()


def test_import_and_promote_never_write_through_a_linked_seeds_folder(
    ws, evaluated, tmp_path, capsys
):
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.mkdir()
    (store / "seeds").symlink_to(elsewhere, target_is_directory=True)
    example = ROOT / "examples" / "agent-skills" / "sim-vague"
    assert main(["import-skills", str(example), "--name", "s1", "--store", str(store)]) == 2
    assert f"{store / 'seeds'}: is a symbolic link" in capsys.readouterr().err
    args = ["promote", "v1", "-w", str(ws), "--eval-run", evaluated[1], "--name", "s1"]
    assert main([*args, "--store", str(store)]) == 2
    assert f"{store / 'seeds'}: is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def link_entry(ws: Path, entry: str, elsewhere: Path) -> Path:
    """Replace the workspace's `entry` (a folder, or a file when it has a suffix) by a link
    to `elsewhere` (or to a file there)."""
    elsewhere.mkdir()
    target = ws / entry
    if target.is_dir():
        shutil.rmtree(target)
    target.unlink(missing_ok=True)
    if target.suffix:
        target.symlink_to(elsewhere / "file")
    else:
        target.symlink_to(elsewhere, target_is_directory=True)
    return target


@pytest.mark.parametrize("entry", ["analyses", "logs/skill-trainer.log", "harness.db"])
def test_eval_never_writes_through_a_linked_workspace_entry(ws, tmp_path, capsys, entry):
    elsewhere = tmp_path / "elsewhere"
    target = link_entry(ws, entry, elsewhere)
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 2
    [line] = errors(capsys.readouterr().err)
    assert f"{target}: is a symbolic link" in line
    assert list(elsewhere.iterdir()) == []


# -- all or nothing --------------------------------------------------------------------------------
def test_promote_writes_no_seed_when_the_agent_skills_export_fails(
    ws, evaluated, store, tmp_path, capsys
):
    out = tmp_path / "out"
    (out / ".agents" / "skills" / "units").mkdir(parents=True)  # in the export's way
    assert promote(ws, evaluated[1], store, out) == 2
    assert "units: already exists" in capsys.readouterr().err
    assert not (store / "seeds" / "p1").exists()
    assert tree(out) == [".agents", ".agents/skills", ".agents/skills/units"]
    shutil.rmtree(out / ".agents" / "skills" / "units")
    assert promote(ws, evaluated[1], store, out) == 0  # the same name, now free
    assert (store / "seeds" / "p1" / "seed.toml").is_file()
    assert {p.name for p in (out / ".agents" / "skills").iterdir()} == SKILL_NAMES


def test_promote_leaves_no_agent_skills_when_the_seed_cannot_be_written(
    ws, evaluated, store, tmp_path, capsys
):
    (store / "seeds" / "p1").mkdir()
    out = tmp_path / "out"
    assert promote(ws, evaluated[1], store, out) == 2
    assert "seed 'p1' already exists" in capsys.readouterr().err
    assert not out.exists()


def test_export_skills_with_a_dangling_link_at_one_name_writes_nothing(ws, tmp_path, capsys):
    out = tmp_path / "out"
    skills = out / ".agents" / "skills"
    skills.mkdir(parents=True)
    (skills / "units").symlink_to(tmp_path / "missing", target_is_directory=True)
    assert export_skills(ws, out) == 2
    [line] = errors(capsys.readouterr().err)
    assert f"{skills / 'units'}: is a symbolic link" in line
    assert tree(out) == [".agents", ".agents/skills", ".agents/skills/units"]
    assert not (tmp_path / "missing").exists()


# -- an export over a previous one -----------------------------------------------------------------
@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("hostile-export") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    fork = ["fork", "-w", str(ws), "--rollout-id", "f1", "-n", "3", "--limit", "6"]
    assert main([*fork, "--no-progress"]) == 0
    assert main(["rank", "-w", str(ws), "f1", "--no-progress"]) == 0
    return ws


def test_export_over_a_previous_export_needs_overwrite(ranked, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    out = tmp_path / "out"
    assert main(["export", "-w", str(ws), "f1", "--out", str(out)]) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    # the DPO/SFT/reward files with their manifests, and the curated ones (docs/curation.md)
    assert len(first) == 18 and not [p for p in out.iterdir() if p.name.startswith(".")]
    capsys.readouterr()
    assert main(["export", "-w", str(ws), "f1", "--out", str(out)]) == 2
    [line] = errors(capsys.readouterr().err)
    assert f"{out}: holds a previous export (18 files: " in line
    assert "--overwrite" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert main(["export", "-w", str(ws), "f1", "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(first)
    assert main(["export", "-w", str(ws), "f1"]) == 0  # the default folder, the same rule
    assert main(["export", "-w", str(ws), "f1"]) == 2
    assert "exports/f1: holds a previous export" in capsys.readouterr().err


def test_export_never_writes_through_a_linked_exports_folder(ranked, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    elsewhere = tmp_path / "elsewhere"
    target = link_entry(ws, "exports", elsewhere)
    assert main(["export", "-w", str(ws), "f1"]) == 2
    assert f"{target}: is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_export_never_writes_through_a_linked_file_of_the_output(ranked, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep")
    (out / "sft.jsonl").symlink_to(victim)
    for extra in ([], ["--overwrite"]):
        assert main(["export", "-w", str(ws), "f1", "--out", str(out), *extra]) == 2
        assert f"{out / 'sft.jsonl'}: is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep" and os.listdir(out) == ["sft.jsonl"]


def test_an_export_that_fails_half_way_leaves_nothing(ranked, tmp_path, monkeypatch, capsys):
    import app.harness.data.export as export_module

    ws, out = tmp_path / "ws", tmp_path / "out"
    shutil.copytree(ranked, ws)
    real, written = export_module.write_text_atomic, []

    def full_disk_on_the_third_file(path: Path, text: str) -> None:
        if len(written) == 2:
            raise OSError(28, "No space left on device", str(path))
        written.append(path)
        real(path, text)

    monkeypatch.setattr(export_module, "write_text_atomic", full_disk_on_the_third_file)
    assert main(["export", "-w", str(ws), "f1", "--out", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert len(written) == 2 and not out.exists()
