"""Ingested traces as trajectories: `diagnose` triages them (on sim/oracle, which answers a
user benchmark); `rank` refuses an ingest run (a trace is one branch) and the JSONL export
writes its traces by their feedback (tests/app/data/test_export_ingest.py), so no error trace
becomes a memory or SFT data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main

DATA = Path(__file__).parents[1] / "data" / "traces"
ORACLE = [
    arg for role in ("agent", "evolver", "judge") for arg in ("--set", f'{role}_model="sim/oracle"')
]


def _count(ws: Path, sql: str) -> int:
    with sqlite3.connect(ws / "harness.db") as conn:
        return int(conn.execute(sql).fetchone()[0])


def _workspace(tmp_path: Path, export: Path, name: str) -> tuple[Path, str]:
    store, ws = tmp_path / "store", tmp_path / "ws"
    api.ingest(tmp_path / "x", export, to_benchmark=name, store=store)
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", name]
    assert main([*init, "--store", str(store)]) == 0
    return ws, api.ingest(ws, export).run_id


def test_diagnose_triages_ingested_failures(tmp_path: Path) -> None:
    ws, run_id = _workspace(tmp_path, DATA / "inspect_log.json", "insp")
    wrong = _count(
        ws, f"SELECT COUNT(*) FROM predictions WHERE run_id = '{run_id}' AND correct = 0"
    )
    assert wrong == 1
    assert main(["diagnose", "-w", str(ws), run_id, "--no-progress", *ORACLE]) == 0
    assert (
        _count(ws, f"SELECT COUNT(*) FROM diagnoses WHERE run_id LIKE '{run_id}-diagnose%'")
        == wrong
    )


def test_error_traces_never_become_memories_or_sft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = DATA / "openinference_otlp.jsonl"
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    result = api.ingest(ws, export)
    assert result.failed >= 1
    capsys.readouterr()
    assert main(["rank", "-w", str(ws), result.run_id, *ORACLE]) == 2
    err = capsys.readouterr().err
    assert "is an ingest run, no fork" in err and "--allow-restricted" in err
    assert main(["export", "-w", str(ws), result.run_id, "--out", str(tmp_path / "j")]) == 2
    assert not (tmp_path / "j").exists()  # unlicensed: the user's own traces need the flag
    out = tmp_path / "k"
    assert (
        main(["export", "-w", str(ws), result.run_id, "--out", str(out), "--allow-restricted"]) == 0
    )
    for name in ("sft.jsonl", "sft_openai_chat.jsonl", "sft_trl.jsonl", "kto.jsonl"):
        assert (out / name).read_text() == "", name  # no feedback, and an error trace
    for table in ("memories", "branches", "rankings"):
        assert _count(ws, f"SELECT COUNT(*) FROM {table}") == 0, table
