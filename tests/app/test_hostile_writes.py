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

ROOT = Path(__file__).resolve().parents[2]
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
