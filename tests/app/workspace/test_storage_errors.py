"""Broken storage gives one line and the right exit code, and nothing half-written.

Disk full for real (a small tmpfs, as root), garbage and bit-rotted logs, truncated, empty
and wrong-typed checkpoints, deeply nested JSON, and workspace paths that are not plain.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace.workspace import list_versions
from tests.app.test_hostile_inputs import make_store, sim_lines

ROOT = Path(__file__).resolve().parents[3]
TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]
INIT = ["--seed", "sim-starter", "--questions", "sim-basic"]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_error_line(err: str) -> str:
    assert "Traceback" not in err and "Logging error" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("trained") / "ws"
    assert main(["init", str(ws), *INIT]) == 0
    assert main(["train", "-w", str(ws), *TRAIN]) == 0
    return ws


@pytest.fixture
def ws(trained, tmp_path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(trained, target)
    return target


# -- broken logs --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{ws}"],
        ["train", "-w", "{ws}", "--resume", *TRAIN[4:]],
        ["infer", "-w", "{ws}", *TRAIN[4:]],
        ["eval", "v1", "-w", "{ws}", *TRAIN[4:]],
    ],
)
def test_garbage_harness_db_is_one_line_exit_2(ws, argv, capsys):
    for side in ("-wal", "-shm"):
        Path(f"{ws / 'harness.db'}{side}").unlink(missing_ok=True)
    (ws / "harness.db").write_bytes(os.urandom(64 * 1024))
    assert main([a.format(ws=ws) for a in argv]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "harness.db: damaged SQLite database" in line and "--fresh" in line


def test_bit_rotted_harness_db_is_refused_by_report(ws, capsys):
    db = ws / "harness.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    assert pages > 4
    with open(db, "r+b") as f:  # rot the b-tree headers of the later pages
        for n in range(pages // 2, pages):
            f.seek(n * page)
            f.write(b"\xa5" * 12)
    assert main(["report", str(ws)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "harness.db: damaged SQLite database (quick_check" in line


# -- broken checkpoints -------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"", b'{"schema": 1, "progress": {"epo', b"\x00" * 50])
def test_truncated_or_empty_checkpoint_names_the_file_and_the_way_out(ws, content, capsys):
    (ws / "checkpoint.json").write_bytes(content)
    assert main(["train", "-w", str(ws), "--resume", *TRAIN]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "checkpoint.json: corrupt checkpoint" in line and "`train --fresh`" in line
    assert main(["report", str(ws)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "checkpoint.json: corrupt checkpoint" in line


@pytest.mark.parametrize(
    "path, value, key",
    [
        (("progress", "epoch"), "1", "progress.epoch"),
        (("progress", "phase"), "halfway", "progress.phase"),
        (("versions_max", "skills"), None, "versions_max.skills"),
        (("state", "global_step"), "7", "state.global_step"),
        (("state", "correctness"), [], "state.correctness"),
        (("state",), [], "state"),
        (("epoch_batches",), [[1, 2]], "epoch_batches"),
    ],
)
def test_wrong_typed_checkpoint_field_names_the_key(ws, path, value, key, capsys):
    ckpt = json.loads((ws / "checkpoint.json").read_text())
    ckpt["progress"]["phase"] = "in_epoch" if path[-1] != "phase" else ckpt["progress"]["phase"]
    target = ckpt
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    (ws / "checkpoint.json").write_text(json.dumps(ckpt))
    before = list_versions(ws, "skills")
    assert main(["train", "-w", str(ws), "--resume", *TRAIN]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"key '{key}'" in line and "`train --fresh`" in line
    assert list_versions(ws, "skills") == before


# -- deep JSON ----------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deeply_nested_json_in_a_benchmark_names_file_and_line(tmp_path, depth, capsys):
    lines = sim_lines(limit=20)
    raw = "".join(json.dumps(q) + "\n" for q in lines)
    deep = (
        '{"question_id": "deep", "task_type": "ledger", "question": "q", "answer": "1", '
        '"metadata": {"x": ' + "[" * depth + "]" * depth + "}}\n"
    )
    store = make_store(tmp_path, "deep", (raw + deep).encode())
    ws = tmp_path / "ws"
    rc = main(
        ["init", str(ws), "--seed", "sim-starter", "--questions", "deep", "--store", str(store)]
    )
    assert rc == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"questions.jsonl:{len(lines) + 1}:" in line
    assert not ws.exists()


def test_deeply_nested_checkpoint_is_one_line(ws, capsys):
    (ws / "checkpoint.json").write_text(
        '{"schema": 1, "state": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    assert main(["report", str(ws)]) == 2
    assert "nested too deeply" in one_error_line(capsys.readouterr().err)


# -- paths that are not plain -------------------------------------------------------------------
# one path holds them all, each as a folder of its own and again in the workspace's and the
# store's names: a character any command mishandles breaks it as it broke its own path, and
# the commands start 8 processes once instead of once per name
SPECIAL_NAMES = ["hash#tag", "what?mode=rw", "per%20cent", "with space", "nön-äscii ✓"]


@pytest.mark.slow
def test_every_command_works_on_a_workspace_path_with_special_characters(tmp_path):
    parent = tmp_path.joinpath(*SPECIAL_NAMES)
    ws = parent / f"ws {' '.join(SPECIAL_NAMES)}"
    store = tmp_path / f"store {' '.join(SPECIAL_NAMES)}"
    shutil.copytree(ROOT / "store" / "seeds", store / "seeds")
    shutil.copytree(ROOT / "store" / "questions" / "sim-basic", store / "questions" / "sim-basic")
    assert run("init", str(ws), *INIT, "--store", str(store)).returncode == 0
    steps = [
        ("train", "-w", str(ws), *TRAIN),
        ("infer", "-w", str(ws), "--no-progress", "--run-id", "probe"),
        ("eval", "v1", "-w", str(ws), "--no-progress"),
        ("diagnose", "probe", "-w", str(ws), "--no-progress"),
        (
            "promote",
            "v1",
            "-w",
            str(ws),
            "--eval-run",
            "eval-v1-v1-1",
            "--name",
            "promoted",
            "--store",
            str(store),
        ),
        ("report", str(ws)),
        ("report", str(ws), "--json"),
    ]
    before = sorted(p.name for p in parent.iterdir())
    eval_run = ""
    for argv in steps:
        argv = tuple(a.replace("eval-v1-v1-1", eval_run) for a in argv)
        done = run(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert "Traceback" not in done.stderr
        if argv[0] == "eval":
            eval_run = done.stdout.split("(run ")[1].split(")")[0]
    assert sorted(p.name for p in parent.iterdir()) == before, "a file appeared outside"
    assert (store / "seeds" / "promoted" / "skills").is_dir()
    from app.tui.data import WorkspaceData

    data = WorkspaceData(ws)
    assert data.overview().epochs and data.runs_page().rows


# -- disk full, for real ------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / f"full-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_disk_full_is_one_line_and_resume_finishes_once_space_is_back(small_disk, tmp_path):
    ws = small_disk / "ws"
    assert run("init", str(ws), *INIT).returncode == 0
    full = run("train", "-w", str(ws), *TRAIN)
    assert full.returncode == 1, full.stderr
    line = one_error_line(full.stderr)
    assert "disk full" in line or "No space left" in line, line
    assert not (ws / "train.lock").exists()
    conn = sqlite3.connect(ws / "harness.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    resumed = run("train", "-w", str(ws), "--resume", *TRAIN)
    if resumed.returncode == 2 and "no checkpoint.json" in resumed.stderr:
        resumed = run("train", "-w", str(ws), *TRAIN)  # it died before the first checkpoint
    assert resumed.returncode == 0, resumed.stderr
    ref = tmp_path / "ref"
    assert main(["init", str(ref), *INIT]) == 0
    assert main(["train", "-w", str(ref), *TRAIN]) == 0
    from tests.support.snapshot import diff_states, workspace_state

    assert diff_states(workspace_state(ref), workspace_state(ws)) == []


def test_tui_picker_lists_a_workspace_with_a_garbage_log_as_broken(ws):
    from app.tui.data import list_workspaces

    (ws / "harness.db").write_bytes(os.urandom(8192))
    for side in ("-wal", "-shm"):
        Path(f"{ws / 'harness.db'}{side}").unlink(missing_ok=True)
    (entry,) = list_workspaces(ws.parent)
    assert "damaged SQLite database" in entry["error"]


def test_report_on_a_damaged_final_report_or_version_meta_is_one_line(ws, capsys):
    (ws / "analyses" / "final_test_eval.json").write_text('{"run_id": ')
    assert main(["report", str(ws)]) == 2
    assert "final_test_eval.json: corrupt final test report" in one_error_line(
        capsys.readouterr().err
    )
    (ws / "analyses" / "final_test_eval.json").unlink()
    (ws / "skills" / "v1" / "_meta.json").write_text("")
    assert main(["report", str(ws)]) == 2
    assert "_meta.json: corrupt version metadata" in one_error_line(capsys.readouterr().err)
