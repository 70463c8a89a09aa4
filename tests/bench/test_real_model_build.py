"""bench/real_model.py's llama-cpp-python build says what it is doing while pip is silent.

The build from source takes about 30 minutes on 2 cores; with `pip -q` nothing was printed in
that time, so `make real-model` looked hung. Now pip's output goes to a log and a line with the
elapsed time and the build's phase is printed at a fixed interval. No build runs here: a short
script stands in for pip.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rm():
    spec = importlib.util.spec_from_file_location(
        "bench_real_model", ROOT / "bench" / "real_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FAKE_PIP = """
import sys, time
print("Collecting llama-cpp-python[server]", flush=True)
time.sleep(0.6)
print("  [ 45%] Building CXX object vendor/llama.cpp/src/llama.cpp.o", flush=True)
time.sleep(0.6)
print("  [ 46%] Building C object \\x1b[2Jggml.c.o", flush=True)
time.sleep(0.6)
"""


def test_a_silent_build_prints_elapsed_time_and_phase(rm, tmp_path: Path, capsys) -> None:
    log = tmp_path / "build.log"
    code = rm.run_with_heartbeat([sys.executable, "-c", FAKE_PIP], log, 0.25)
    assert code == 0
    out = capsys.readouterr().out
    beats = [line for line in out.splitlines() if "build running 0:0" in line]
    assert len(beats) >= 3, out
    assert any("Collecting llama-cpp-python" in b for b in beats), out
    assert any("compiling, cmake 45%: Building CXX object" in b for b in beats), out
    assert "\x1b" not in out  # the log's control characters never reach the terminal
    assert "[ 46%]" in log.read_text()  # pip's whole output is kept in the log


def test_a_failed_build_exits_with_the_log_tail(rm, tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    code = rm.run_with_heartbeat(
        [sys.executable, "-c", "print('error: cmake failed'); raise SystemExit(3)"], log, 5
    )
    assert code == 3
    assert "cmake failed" in rm.tail(log)


def test_the_build_announces_its_honest_duration(rm, tmp_path: Path, monkeypatch, capsys) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 1\n")  # llama_cpp not installed yet
    python.chmod(0o755)
    ran: list[list[str]] = []
    monkeypatch.setattr(rm, "VENV", tmp_path / "venv")
    monkeypatch.setattr(rm, "run_with_heartbeat", lambda cmd, *a, **k: ran.append(cmd) or 0)
    rm.ensure_llama_cpp()
    out = capsys.readouterr().out
    assert "building llama-cpp-python from source: about 30 min on 2 cores, once" in out
    assert ran and "-q" not in ran[0]
