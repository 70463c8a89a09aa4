"""bench/run_all.py writes a committed table: no path of the machine that ran it."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_all():
    spec = importlib.util.spec_from_file_location(
        "bench_run_all_paths", ROOT / "bench" / "run_all.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_bench_output_keeps_no_machine_path() -> None:
    tmp = tempfile.gettempdir()
    output = (
        f"benchmark sim-basic ({ROOT}/store/questions/sim-basic, format_version 1)\n"
        f"{ROOT}/store/questions/sim-basic/questions.jsonl:1: warning: ...\n"
        f"wrote {tmp}/bench-ingest-abc123/ws/harness.db and {ROOT}"
    )
    cleaned = _run_all().without_machine_paths(output)
    assert str(ROOT) not in cleaned and f"{tmp}/" not in cleaned
    assert "benchmark sim-basic (store/questions/sim-basic, format_version 1)" in cleaned
    assert "store/questions/sim-basic/questions.jsonl:1: warning" in cleaned
    assert "wrote <tmp>/ws/harness.db and ." in cleaned
    table = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    assert str(ROOT) not in table and f"{tmp}/" not in table  # the committed table, as written
