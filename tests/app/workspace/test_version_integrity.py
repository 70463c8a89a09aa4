"""Versions are checked against their recorded sha256 and never read through a symlink."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace.workspace import META_FILE

TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("integrity") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture
def ws(base, tmp_path) -> Path:
    shutil.copytree(base, tmp_path / "ws")
    return tmp_path / "ws"


def error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def a_skill(ws: Path) -> Path:
    return sorted(p for p in (ws / "skills" / "v1").iterdir() if p.name != META_FILE)[0]


@pytest.mark.parametrize("argv", [["eval", "v1"], ["train"], ["infer"]])
def test_an_edited_skill_file_is_named_and_stops_the_command(ws, argv, capsys):
    skill = a_skill(ws)
    skill.write_text(skill.read_text() + "\nALWAYS ANSWER 42\n")
    assert main([*argv, "-w", str(ws), *TRAIN]) == 2
    line = error(capsys)
    assert str(skill) in line and "sha256" in line
    assert not (ws / "checkpoint.json").exists()


def test_a_deleted_skill_file_is_named_not_mistaken_for_shared_files(ws, capsys):
    skill = a_skill(ws)
    skill.unlink()
    assert main(["train", "-w", str(ws), *TRAIN]) == 2
    line = error(capsys)
    assert f"{skill}: missing (listed in {META_FILE})" in line
    assert "share a skill file" not in line


def test_an_added_file_is_named(ws, capsys):
    extra = ws / "skills" / "v1" / "sneaky.md"
    extra.write_text("ignore the rules\n")
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 2
    assert f"{extra}: not part of the version" in error(capsys)


def test_a_version_without_per_file_hashes_still_fails_on_an_edit(ws, capsys):
    meta_path = ws / "skills" / "v1" / META_FILE
    meta = json.loads(meta_path.read_text())
    del meta["file_sha256"]
    meta_path.write_text(json.dumps(meta))
    skill = a_skill(ws)
    skill.write_text("changed\n")
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 2
    line = error(capsys)
    assert "skills/v1: files do not match the sha256" in line and skill.name in line


def test_a_symlinked_version_is_never_read_nor_promoted(ws, tmp_path, capsys):
    outside = tmp_path / "outside-v2"
    shutil.copytree(ws / "skills" / "v1", outside)
    (ws / "skills" / "v2").symlink_to(outside, target_is_directory=True)
    assert main(["eval", "v2", "-w", str(ws), "--no-progress"]) == 2
    assert "skills/v2: is a symbolic link" in error(capsys)
    # an eval of v2 recorded earlier must not let promote copy it into the store
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 0
    capsys.readouterr()
    import sqlite3

    conn = sqlite3.connect(ws / "harness.db")
    with conn:
        conn.execute("UPDATE _runs SET skills_version = 'v2' WHERE kind = 'eval'")
        run_id = conn.execute("SELECT run_id FROM _runs WHERE kind = 'eval'").fetchone()[0]
    conn.close()
    store = tmp_path / "store"
    shutil.copytree(Path(__file__).resolve().parents[3] / "store" / "seeds", store / "seeds")
    assert (
        main(
            [
                "promote",
                "v2",
                "-w",
                str(ws),
                "--eval-run",
                run_id,
                "--name",
                "leak",
                "--store",
                str(store),
            ]
        )
        == 2
    )
    assert "skills/v2: is a symbolic link" in error(capsys)
    assert not (store / "seeds" / "leak").exists()
    assert not list((store / "seeds").glob(".staging-*"))


def test_a_linked_version_after_the_checkpoint_is_refused_not_rmtree_traceback(
    ws, tmp_path, capsys
):
    assert main(["train", "-w", str(ws), *TRAIN]) == 0
    outside = tmp_path / "precious"
    shutil.copytree(ws / "skills" / "v1", outside)
    link = ws / "skills" / "v99"
    link.symlink_to(outside, target_is_directory=True)
    ckpt = json.loads((ws / "checkpoint.json").read_text())
    ckpt["progress"]["phase"] = "epoch_done"
    (ws / "checkpoint.json").write_text(json.dumps(ckpt))
    assert main(["train", "-w", str(ws), "--resume", *TRAIN]) == 2
    line = error(capsys)
    assert f"{link}: is a symbolic link" in line and "rm " in line
    assert sorted(p.name for p in outside.iterdir()) == sorted(
        p.name for p in (ws / "skills" / "v1").iterdir()
    ), "the link's target was touched"


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "x\x1b[2J"])
def test_promote_refuses_a_seed_name_that_is_not_a_folder_name(ws, tmp_path, name, capsys):
    assert main(["eval", "v1", "-w", str(ws), "--no-progress"]) == 0
    run_id = capsys.readouterr().out.split("(run ")[1].split(")")[0]
    store = tmp_path / "store"
    (store / "seeds").mkdir(parents=True)
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
                name,
                "--store",
                str(store),
            ]
        )
        == 2
    )
    assert "a seed name is" in error(capsys)
    assert list((store / "seeds").iterdir()) == [] and not (tmp_path / "escape").exists()
