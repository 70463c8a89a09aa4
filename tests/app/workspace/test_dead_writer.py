"""What a writer killed with SIGKILL leaves is cleaned by the next writer, which says so
(app/harness/workspace/leftovers.py): estimate's scratch copies, an export's hidden staging
folder and the empty output folder it made, and a serve run left `running`."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from app.cli import main
from app.harness.workspace.leftovers import note_out_staging
from app.harness.workspace.writer_lock import WriterLock

ROOT = Path(__file__).resolve().parents[3]
READY = re.compile(r"serving (\S+) at (http://\S+)/v1 .*run (serve-\d+)\)")


def _init(root: Path) -> Path:
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def _run_status(ws: Path, run_id: str) -> tuple[str, dict]:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        status, summary = conn.execute(
            "SELECT status, summary_json FROM _runs WHERE run_id=?", (run_id,)
        ).fetchone()
    finally:
        conn.close()
    return status, json.loads(summary or "{}")


def test_the_next_writer_removes_a_killed_estimate_and_export_and_says_so(
    tmp_path: Path, capfd
) -> None:
    ws = _init(tmp_path / "ws")
    # as `estimate` leaves it when killed: its dry-run copies in .staging/estimate-<pid>
    scratch = ws / ".staging" / "estimate-4242" / "sample"
    scratch.mkdir(parents=True)
    (scratch / "harness.db").write_bytes(b"x" * 200_000)
    # as `export` leaves it when killed between making its folders and renaming into place
    out = tmp_path / "out"
    staging = out / ".export-deadbeef"
    note_out_staging(ws, staging, out, created=True)
    staging.mkdir(parents=True)
    (staging / "sft.jsonl").write_text("{}\n")
    kept = tmp_path / "kept"  # an output folder that existed before: kept, its staging removed
    kept_staging = kept / ".export-cafef00d"
    note_out_staging(ws, kept_staging, kept, created=False)
    kept_staging.mkdir(parents=True)

    with WriterLock(ws, "eval"):
        pass

    assert not (ws / ".staging" / "estimate-4242").exists()
    assert not out.exists() and kept.is_dir() and not kept_staging.exists()
    assert list((ws / ".staging").iterdir()) == []
    err = capfd.readouterr().err
    assert "cleaned what a process that died left" in err
    assert ".staging/estimate-4242 (0.2 MB)" in err and str(staging) in err
    assert f"removed the empty output folder {out}" in err


def test_a_note_cannot_make_the_cleaner_remove_what_no_export_made(tmp_path: Path) -> None:
    ws = _init(tmp_path / "ws")
    victim = tmp_path / "victim"
    (victim / "data").mkdir(parents=True)
    # a tampered note naming a folder that is not an export's staging child
    note_out_staging(ws, victim / "data", victim, created=True)
    linked = tmp_path / "out" / ".export-0000"
    linked.parent.mkdir()
    linked.symlink_to(victim, target_is_directory=True)
    note_out_staging(ws, linked, linked.parent, created=True)

    with WriterLock(ws, "eval"):
        pass

    assert (victim / "data").is_dir() and linked.is_symlink()


def test_a_serve_killed_with_sigkill_is_marked_failed_by_the_next_writer(tmp_path: Path) -> None:
    ws = _init(tmp_path / "ws")
    proc = subprocess.Popen(
        [sys.executable, "main.py", "serve", "-w", str(ws), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        found = READY.search(proc.stdout.readline())  # blocks until ready (or EOF)
        assert found, proc.stderr.read() if proc.stderr else ""
        run_id = found.group(3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert _run_status(ws, run_id)[0] == "running"  # what the kill left

    done = subprocess.run(
        [sys.executable, "main.py", "diagnose", "-w", str(ws), "nothing-here"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    status, summary = _run_status(ws, run_id)
    assert status == "failed" and summary["stopped_by"] == "killed"
    assert "`diagnose`" in summary["reason"]
    assert f"marked run {run_id} failed (its process died)" in done.stderr
