"""bench/run_all.py writes a committed table: no path of the machine that ran it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.bench.test_bench_tiny import _run_all_module

ROOT = Path(__file__).resolve().parents[2]


def test_bench_output_keeps_no_machine_path() -> None:
    tmp = tempfile.gettempdir()
    output = (
        f"benchmark sim-basic ({ROOT}/store/questions/sim-basic, format_version 1)\n"
        f"{ROOT}/store/questions/sim-basic/questions.jsonl:1: warning: ...\n"
        f"wrote {tmp}/bench-ingest-abc123/ws/harness.db and {ROOT}"
    )
    cleaned = _run_all_module().without_machine_paths(output)
    assert str(ROOT) not in cleaned and f"{tmp}/" not in cleaned
    assert "benchmark sim-basic (store/questions/sim-basic, format_version 1)" in cleaned
    assert "store/questions/sim-basic/questions.jsonl:1: warning" in cleaned
    assert "wrote <tmp>/ws/harness.db and ." in cleaned
    frame = f'  File "{sys.base_prefix}/lib/python3.11/asyncio/base_events.py", line 519'
    home = os.path.expanduser("~")
    cleaned = _run_all_module().without_machine_paths(f"{frame}\n{home}/.cache/x")
    assert (
        cleaned == '  File "<python>/lib/python3.11/asyncio/base_events.py", line 519\n~/.cache/x'
    )
    table = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    assert str(ROOT) not in table and f"{tmp}/" not in table  # the committed table, as written
    assert f"{sys.base_prefix}/" not in table and f"{home}/" not in table


def test_an_exported_copy_names_its_commit_only_as_a_hash(monkeypatch) -> None:
    run_all = _run_all_module()
    monkeypatch.setenv("BENCH_COMMIT", "A16C535")
    assert run_all.exported_commit() == "a16c535 (BENCH_COMMIT)"
    for bad in ("", "main", "a16c535\n| row |", "a16c"):
        monkeypatch.setenv("BENCH_COMMIT", bad)
        assert run_all.exported_commit() == "?"
