"""bench/real_model.py's llama-cpp-python build says what it is doing while pip is silent.

The build from source takes about 30 minutes on 2 cores; with `pip -q` nothing was printed in
that time, so `make real-model` looked hung. Now pip's output goes to a log and a line with the
elapsed time and the build's phase is printed at a fixed interval. No build runs here: a short
script stands in for pip.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


# Lines in the two formats a llama-cpp-python build log holds under `pip install -v`, as
# pip indents them. llama-cpp-python 0.3 builds with Ninja through scikit-build-core, and
# Ninja -v prints each step's whole command after `[done/total]` (the run showed
# `[104/193]`; the heartbeat, which knew only CMake's Makefile `[ NN%]` lines, said
# "starting" 66 of 74 times). Paths as in such a build, the temporary folders renamed.
SRC = "/tmp/pip-install-ab12cd34/llama-cpp-python_0f1e2d3c/vendor/llama.cpp"
NINJA_LOG = f"""\
  *** Configuring CMake...
  -- Build files have been written to: /tmp/tmpq1w2e3r4/build
  *** Building project with Ninja...
  [1/193] /usr/bin/cc -DGGML_BUILD -DGGML_SCHED_MAX_COPIES=4 -DGGML_SHARED -D_GNU_SOURCE \
-D_XOPEN_SOURCE=600 -Dggml_base_EXPORTS -I{SRC}/ggml/src/. -I{SRC}/ggml/src/../include -O3 \
-DNDEBUG -std=gnu11 -fPIC -Wshadow -Wstrict-prototypes -MD -MT \
vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o -MF \
vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o.d -o \
vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o -c {SRC}/ggml/src/ggml.c
  [104/193] /usr/bin/c++ -DGGML_BACKEND_BUILD -DGGML_BACKEND_SHARED -DGGML_SCHED_MAX_COPIES=4 \
-DGGML_SHARED -D_GNU_SOURCE -D_XOPEN_SOURCE=600 -Dggml_cpu_EXPORTS -I{SRC}/ggml/src/ggml-cpu/. \
-I{SRC}/ggml/src/../include -O3 -DNDEBUG -std=gnu++17 -fPIC -march=native -MD -MT \
vendor/llama.cpp/ggml/src/ggml-cpu/CMakeFiles/ggml-cpu.dir/ggml-cpu.cpp.o -MF \
vendor/llama.cpp/ggml/src/ggml-cpu/CMakeFiles/ggml-cpu.dir/ggml-cpu.cpp.o.d -o \
vendor/llama.cpp/ggml/src/ggml-cpu/CMakeFiles/ggml-cpu.dir/ggml-cpu.cpp.o -c \
{SRC}/ggml/src/ggml-cpu/ggml-cpu.cpp
"""
NINJA_LINK = """\
  [105/193] : && /usr/bin/c++ -fPIC -O3 -DNDEBUG -shared -Wl,-soname,libggml-base.so -o \
vendor/llama.cpp/ggml/src/libggml-base.so vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o \
-Wl,-rpath,"\\$ORIGIN" -lm && :
"""
CMAKE_LOG = """\
  [ 44%] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama-model.cpp.o
  [ 45%] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama.cpp.o
"""


@pytest.mark.parametrize(
    ("log_text", "phase"),
    [
        (NINJA_LOG, "ninja 104/193 (53%): compiling ggml-cpu.cpp"),
        (NINJA_LOG + NINJA_LINK, "ninja 105/193 (54%): linking libggml-base.so"),
        (NINJA_LOG.split("  [1/")[0], "*** Building project with Ninja..."),
        (CMAKE_LOG, "compiling, cmake 45%: Building CXX object vendor/llama.cpp/src/"),
        ("  [7/9] Building C object ggml.c.o\n", "ninja 7/9 (77%): Building C object ggml.c.o"),
        ("Collecting llama-cpp-python[server]\n", "Collecting llama-cpp-python[server]"),
        ("", "starting"),
    ],
    ids=["ninja-compile", "ninja-link", "scikit-build", "cmake", "ninja-plain", "pip", "empty"],
)
def test_the_phase_is_read_from_ninja_and_cmake_lines(rm, tmp_path: Path, log_text, phase) -> None:
    log = tmp_path / "build.log"
    log.write_text(
        "Using pip 24.0\nCollecting llama-cpp-python[server]\n" * bool(log_text) + log_text
    )
    assert rm.build_phase(log).startswith(phase)


def test_a_sigterm_during_the_build_stops_pip(rm, tmp_path: Path) -> None:
    import os
    import signal
    import threading
    import time

    held = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    pid_file = tmp_path / "pip.pid"
    slow_pip = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    try:
        rm.stop_on_signals()

        def terminate_once_pip_runs() -> None:
            while not pid_file.exists() or not pid_file.read_text():
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=terminate_once_pip_runs, daemon=True).start()
        with pytest.raises(SystemExit) as stopped:
            rm.run_with_heartbeat([sys.executable, "-c", slow_pip], tmp_path / "build.log", 0.2)
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
    assert stopped.value.code == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left building
        os.kill(int(pid_file.read_text()), 0)
