"""check-tools on the example benchmark of docs/tools.md and on a broken one (CLI and API)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app import api

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "benchmarks" / "tools-calc"
BROKEN = Path(__file__).parent / "data" / "bench"


def test_the_example_benchmark_checks_clean() -> None:
    result = api.check_tools(EXAMPLE)
    assert result.ok, result.problems
    assert result.offered["notes"] == ("lookup_note",)
    assert result.offered["run_tests"] == ("run_tests",)
    assert len(result.fixtures["calc"]) == 64


def test_a_broken_benchmark_is_exit_2_with_each_reason() -> None:
    proc = subprocess.run(
        [sys.executable, "main.py", "check-tools", str(BROKEN)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "problem: tools.spread:" in proc.stdout and "problem: tools.broken:" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == f"error: 2 problem(s) in {BROKEN}"
