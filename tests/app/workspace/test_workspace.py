"""Workspace: init, immutable versions, manifest, best, archive, atomic writes, kill safety
(docs/architecture.md#the-workspace-on-disk)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.workspace.atomic import read_json, write_json_atomic
from app.harness.workspace.store import load_seed, seed_dir
from app.harness.workspace.workspace import (
    META_FILE,
    advance_version,
    archive_workspace,
    clean_staging,
    content_sha256,
    list_versions,
    read_best,
    read_manifest,
    read_meta,
    read_version_files,
    resolve_paths,
    train_start_mode,
    update_best,
    update_manifest,
    version_number,
)
from app.paths import builtin_store

ROOT = Path(__file__).resolve().parents[3]
LOOP_SCRIPT = Path(__file__).parents[1] / "scripts" / "advance_loop.py"


def init_ws(parent: Path, name: str = "ws") -> Path:
    ws = parent / name
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture(scope="module")
def template_ws(tmp_path_factory) -> Path:
    return init_ws(tmp_path_factory.mktemp("template"))


@pytest.fixture
def ws(template_ws: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "ws"
    shutil.copytree(template_ws, target)
    return target


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def assert_version_complete(root: Path, kind: str, version: str) -> None:
    folder = root / kind / version
    assert (folder / META_FILE).is_file(), f"{folder}: half-written (no {META_FILE})"
    meta = read_json(folder / META_FILE)
    files = read_version_files(folder)
    assert sorted(files) == meta["files"], f"{folder}: files differ from _meta.json"
    assert content_sha256(files) == meta["sha256"], f"{folder}: sha256 mismatch"
    for key in ("source", "parent", "description", "at"):
        assert key in meta, f"{folder}: _meta.json lacks {key}"


# -- init ----------------------------------------------------------------------------------


def test_init_creates_manifest_versions_frozen_questions_and_log(tmp_path: Path) -> None:
    ws = init_ws(tmp_path)
    manifest = json.loads((ws / "manifest.json").read_text())
    assert manifest["current"] == {
        "skills": "skills/v1",
        "prompts": "prompts/v1",
        "questions": "sim-basic",
    }
    assert manifest["best"] is None and manifest["history"] == []
    seed = load_seed(seed_dir(builtin_store(), "sim-starter"))
    for kind, seed_files in (("skills", seed.skills), ("prompts", seed.prompts)):
        assert list_versions(ws, kind) == ["v1"]
        files = read_version_files(ws / kind / "v1")
        assert files == seed_files
        meta = read_meta(ws, kind, "v1")
        assert meta["source"] == "seed:sim-starter"
        assert meta["parent"] is None
        assert "sim-starter" in meta["description"]
        datetime.fromisoformat(meta["at"])  # a real timestamp
        assert meta["sha256"] == content_sha256(files) == content_sha256(seed_files)
    assert "system.md" in read_version_files(ws / "prompts" / "v1")
    # frozen copy of the benchmark, byte for byte (no secrets in it to scrub)
    src = builtin_store() / "questions" / "sim-basic"
    for name in ("questions.jsonl", "benchmark.toml"):
        assert (ws / "questions" / name).read_bytes() == (src / name).read_bytes()
    # the harness log exists and is migrated
    import sqlite3

    with sqlite3.connect(ws / "harness.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] >= 1
    # nothing left over from building it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]
    assert not (ws / ".staging").exists()


def test_init_freezes_questions_copy_independent_of_store(ws: Path) -> None:
    paths = resolve_paths(ws)
    assert paths.questions_dir == ws / "questions"
    assert not (ws / "questions").is_symlink()
    assert (ws / "questions" / "questions.jsonl").stat().st_ino != (
        builtin_store() / "questions" / "sim-basic" / "questions.jsonl"
    ).stat().st_ino


def test_report_json_shows_current_versions(ws: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["report", str(ws), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["current"]["skills"] == "skills/v1"
    assert summary["current"]["prompts"] == "prompts/v1"
    assert summary["current"]["questions"] == "sim-basic"
    assert [v["version"] for v in summary["versions"]["skills"]] == ["v1"]
    assert summary["runs"] == []


# -- versions ------------------------------------------------------------------------------


def test_advance_version_is_immutable_and_never_reuses_numbers(ws: Path) -> None:
    v1_before = tree_bytes(ws / "skills" / "v1")
    v2 = advance_version(
        ws, "skills", {"a.md": "alpha\n"}, source="test", parent="v1", description="second"
    )
    assert v2 == "v2"
    v2_before = tree_bytes(ws / "skills" / "v2")
    v3 = advance_version(
        ws,
        "skills",
        {"a.md": "alpha\n", "b.md": "beta\n"},
        source="test",
        parent="v2",
        description="third",
    )
    assert v3 == "v3"
    assert list_versions(ws, "skills") == ["v1", "v2", "v3"]
    assert tree_bytes(ws / "skills" / "v1") == v1_before
    assert tree_bytes(ws / "skills" / "v2") == v2_before
    assert read_version_files(ws / "skills" / "v3") == {"a.md": "alpha\n", "b.md": "beta\n"}
    meta = read_meta(ws, "skills", "v3")
    assert (meta["source"], meta["parent"], meta["description"]) == ("test", "v2", "third")
    assert meta["sha256"] == content_sha256({"a.md": "alpha\n", "b.md": "beta\n"})
    # rolling the manifest back to v1 does not make v2/v3 free again
    update_manifest(ws, skills="v1")
    assert (
        advance_version(
            ws, "skills", {"a.md": "x"}, source="test", parent="v1", description="after rollback"
        )
        == "v4"
    )
    # the two kinds number independently
    assert (
        advance_version(
            ws, "prompts", {"system.md": "sys"}, source="test", parent="v1", description="p"
        )
        == "v2"
    )
    for kind in ("skills", "prompts"):
        for v in list_versions(ws, kind):
            assert_version_complete(ws, kind, v)
    staging = ws / ".staging"
    assert not staging.exists() or list(staging.iterdir()) == []


def test_list_versions_sorts_numerically(ws: Path) -> None:
    for _ in range(10):
        advance_version(ws, "skills", {"a.md": "a"}, source="t", parent=None, description="d")
    assert list_versions(ws, "skills")[-3:] == ["v9", "v10", "v11"]
    assert (
        advance_version(ws, "skills", {"a.md": "a"}, source="t", parent=None, description="d")
        == "v12"
    )
    assert version_number("skills/v12") == 12
    with pytest.raises(UserError, match="not a version name"):
        version_number("latest")


def test_advance_version_refuses_bad_input_and_leaves_nothing(ws: Path) -> None:
    before = tree_bytes(ws)
    with pytest.raises(ValueError, match="unknown version kind"):
        advance_version(ws, "weights", {"a.md": "a"}, source="t", parent=None, description="d")
    for bad in ("../escape.md", ".hidden.md", META_FILE, "sub/x.md"):
        with pytest.raises(UserError, match="refusing version file name"):
            advance_version(
                ws, "skills", {"ok.md": "fine", bad: "x"}, source="t", parent="v1", description="d"
            )
    assert list_versions(ws, "skills") == ["v1"]
    assert tree_bytes(ws) == before
    assert not (ws / "weights").exists()
    staging = ws / ".staging"
    assert not staging.exists() or list(staging.iterdir()) == []
    assert not (ws.parent / "escape.md").exists()


def test_update_manifest_and_history(ws: Path) -> None:
    advance_version(ws, "skills", {"a.md": "a"}, source="t", parent="v1", description="d")
    advance_version(ws, "prompts", {"system.md": "s"}, source="t", parent="v1", description="d")
    m = update_manifest(ws, skills="v2", run_id="run-1")
    assert m["current"]["skills"] == "skills/v2" and m["current"]["prompts"] == "prompts/v1"
    m = update_manifest(ws, prompts="prompts/v2", run_id="run-2")
    on_disk = read_manifest(ws)
    assert on_disk == m
    assert on_disk["current"] == {
        "skills": "skills/v2",
        "prompts": "prompts/v2",
        "questions": "sim-basic",
    }
    assert [(h["run_id"], h["skills"], h["prompts"]) for h in on_disk["history"]] == [
        ("run-1", "skills/v2", "prompts/v1"),
        ("run-2", "skills/v2", "prompts/v2"),
    ]
    paths = resolve_paths(ws)
    assert (paths.skills_version, paths.prompts_version) == ("v2", "v2")
    assert paths.skills_dir == ws / "skills" / "v2"
    assert paths.prompts_dir == ws / "prompts" / "v2"
    assert paths.questions_ref == "sim-basic"
    assert paths.db == ws / "harness.db"
    assert paths.checkpoint == ws / "checkpoint.json"


def test_update_best_and_read_best(ws: Path) -> None:
    assert read_best(ws) is None
    advance_version(ws, "skills", {"a.md": "a"}, source="t", parent="v1", description="d")
    update_best(ws, skills="v2", prompts="prompts/v1", val_acc=0.625, run_id="train-1", epoch=3)
    assert read_best(ws) == {
        "skills": "skills/v2",
        "prompts": "prompts/v1",
        "val_acc": 0.625,
        "run_id": "train-1",
        "epoch": 3,
    }
    # best does not move current
    assert read_manifest(ws)["current"]["skills"] == "skills/v1"
    update_best(ws, skills="v1", prompts="v1", val_acc=0.7, run_id="train-2", epoch=4)
    assert read_best(ws)["skills"] == "skills/v1" and read_best(ws)["val_acc"] == 0.7


def test_resolve_paths_and_read_manifest_refuse_broken_workspaces(tmp_path: Path, ws: Path) -> None:
    with pytest.raises(UserError, match="not a workspace"):
        resolve_paths(tmp_path / "nowhere")
    manifest = read_json(ws / "manifest.json")
    (ws / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="corrupt manifest"):
        read_manifest(ws)
    write_json_atomic(ws / "manifest.json", {**manifest, "schema": 99})
    with pytest.raises(UserError, match="newer"):
        read_manifest(ws)
    broken = {**manifest, "current": {"skills": "skills/v1", "questions": "sim-basic"}}
    write_json_atomic(ws / "manifest.json", broken)
    with pytest.raises(UserError, match=r"current\.prompts"):
        resolve_paths(ws)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{not json", "corrupt manifest"),
        ("", "corrupt manifest"),
        ('{"schema": 1}', "current"),
        ("[]", "manifest"),
        (
            '{"schema": "1", "current": {"skills": "skills/v1", "prompts": "prompts/v1", '
            '"questions": "sim-basic"}}',
            "schema",
        ),
        ('{"schema": 1, "current": null}', "current"),
    ],
)
def test_report_on_corrupt_manifest_is_one_line_exit_2(
    ws: Path, capsys, text: str, fragment: str
) -> None:
    (ws / "manifest.json").write_text(text)
    capsys.readouterr()
    assert main(["report", str(ws)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(ws) in lines[0] and fragment in lines[0], err


def test_archive_workspace_moves_to_timestamped_folder(ws: Path) -> None:
    content = tree_bytes(ws)
    first = archive_workspace(ws)
    assert not ws.exists()
    assert first.parent == ws.parent
    assert re.fullmatch(r"ws\.archived-\d{8}T\d{6}(-\d+)?", first.name), first.name
    assert tree_bytes(first) == content
    ws.mkdir()
    (ws / "manifest.json").write_text("{}")
    second = archive_workspace(ws)  # same second: a distinct name, nothing overwritten
    assert second != first and second.exists() and first.exists()
    assert tree_bytes(first) == content


# -- atomic writes ---------------------------------------------------------------------------


def test_write_json_atomic_leaves_no_temp_files(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "state.json"
    for i in range(25):
        write_json_atomic(target, {"i": i, "text": "é" * i})
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
    assert read_json(target) == {"i": 24, "text": "é" * 24}

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_json_atomic(target, {"i": "never"})
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
    assert read_json(target)["i"] == 24


def test_clean_staging_removes_leftovers(ws: Path) -> None:
    assert clean_staging(ws) == 0
    for name in ("aaa", "bbb"):
        (ws / ".staging" / name).mkdir(parents=True)
        (ws / ".staging" / name / "half.md").write_text("half")
    assert clean_staging(ws) == 2
    assert list((ws / ".staging").iterdir()) == []
    assert list_versions(ws, "skills") == ["v1"]


# -- train flags (pure logic) ------------------------------------------------------------------


def test_train_start_mode(ws: Path) -> None:
    with pytest.raises(UserError, match="exclude each other"):
        train_start_mode(ws, resume=True, fresh=True)
    with pytest.raises(
        UserError, match="no checkpoint.json: refusing to silently retrain from scratch"
    ):
        train_start_mode(ws, resume=True, fresh=False)
    assert train_start_mode(ws, resume=False, fresh=False) == "start"
    assert train_start_mode(ws, resume=False, fresh=True) == "fresh"
    write_json_atomic(ws / "checkpoint.json", {"progress": {"epoch": 1}})
    with pytest.raises(UserError) as err:
        train_start_mode(ws, resume=False, fresh=False)
    assert "--resume" in str(err.value) and "--fresh" in str(err.value)
    assert train_start_mode(ws, resume=True, fresh=False) == "resume"
    assert train_start_mode(ws, resume=False, fresh=True) == "fresh"
    with pytest.raises(UserError, match="exclude each other"):
        train_start_mode(ws, resume=True, fresh=True)


# -- kill safety ------------------------------------------------------------------------------


def check_workspace_consistent(ws: Path) -> tuple[str, str]:
    """Manifest parses and points at a complete version; no vN is half-written."""
    manifest = json.loads((ws / "manifest.json").read_text(encoding="utf-8"))
    current = manifest["current"]["skills"]
    names = sorted(p.name for p in (ws / "skills").iterdir())
    versions = list_versions(ws, "skills")
    assert sorted(versions) == names, f"unexpected entries in skills/: {names}"
    for v in versions:
        assert_version_complete(ws, "skills", v)
    assert current.split("/")[-1] in versions
    for entry in manifest["history"]:
        assert entry["skills"].split("/")[-1] in versions
    return current, versions[-1]


def start_loop(ws: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(LOOP_SCRIPT), str(ws), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return proc


@pytest.mark.slow
def test_sigkill_at_random_instants_leaves_consistent_workspace(ws: Path) -> None:
    rng = random.Random(20240607)
    start_count = len(list_versions(ws, "skills"))
    kills = 0
    previous_current = 1
    for _ in range(8):
        proc = start_loop(ws)
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(rng.uniform(0.02, 0.35))
        if proc.poll() is not None:  # pragma: no cover - the loop never ends on its own
            pytest.fail(f"writer exited early: {proc.stderr.read()}")
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        proc.stdout.close()
        proc.stderr.close()
        kills += 1
        current, latest = check_workspace_consistent(ws)
        # the manifest never moves backwards; each kill between a version's rename and the
        # manifest update can leave it (at most) one more version behind
        assert version_number(current) >= previous_current
        assert 0 <= version_number(latest) - version_number(current) <= kills
        previous_current = version_number(current)
    assert kills == 8
    after_kills = len(list_versions(ws, "skills"))
    assert after_kills > start_count, "the writer never got to create a version"
    # a new, uninterrupted writer continues from there without reusing a number
    proc = start_loop(ws, "2")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    current, latest = check_workspace_consistent(ws)
    assert latest == f"v{after_kills + 2}" and current == f"skills/{latest}"
    # staging leftovers of the killed writers (if any) are removable
    staging = ws / ".staging"
    leftovers = len(list(staging.iterdir())) if staging.is_dir() else 0
    assert clean_staging(ws) == leftovers
    assert not staging.is_dir() or list(staging.iterdir()) == []
    check_workspace_consistent(ws)


def test_kill_between_version_and_manifest_keeps_old_current(ws: Path) -> None:
    # the killpoint fires right after the second new version is renamed into place
    proc = start_loop(ws, env={"SKILL_TRAINER_KILL_AT": "version:2"})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    current, latest = check_workspace_consistent(ws)
    assert (current, latest) == ("skills/v2", "v3")
    proc = start_loop(ws, "1")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    current, latest = check_workspace_consistent(ws)
    assert (current, latest) == ("skills/v4", "v4")  # v3 stays, never reused
    assert read_meta(ws, "skills", "v4")["parent"] == "v3"
