"""bench/real_model.py picks the llama server's threads from the machine: one per core that is
not busy, at least 1, REAL_MODEL_THREADS overriding. The 2-thread default served 0.27-0.34
tokens/s at load 17 on the 2-core machine, against 6-8 with 1 thread."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("cpus", "physical", "load1", "threads"),
    [
        (2, 2, 17.0, 1),  # the measured case: 2 threads crawled at 0.3 tokens/s
        (2, 2, 0.9, 1),
        (2, 2, 0.2, 2),  # an idle 2-core machine
        (8, 4, 0.0, 4),  # hyper-threads are not cores
        (8, 8, 5.2, 3),
        (1, 1, 0.0, 1),
    ],
)
def test_one_thread_per_core_not_busy(rm, cpus, physical, load1, threads) -> None:
    chosen, why = rm.choose_threads(cpus, physical, load1)
    assert chosen == threads
    assert f"load {load1:.2f}" in why and "REAL_MODEL_THREADS" in why


def test_the_environment_overrides(rm, monkeypatch) -> None:
    monkeypatch.setenv("REAL_MODEL_THREADS", "3")
    assert rm.server_threads() == (3, "REAL_MODEL_THREADS=3")
    monkeypatch.delenv("REAL_MODEL_THREADS")
    threads, why = rm.server_threads()  # this machine's own figures
    assert threads >= 1 and "physical cores" in why


def test_physical_cores_reads_cpuinfo(rm) -> None:
    found = rm.physical_cores()
    assert found is None or 1 <= found <= (rm.os.cpu_count() or 1)
