"""store/questions/real-conventions is what bench/_make_real_conventions.py writes, and its
gate pools are large enough for an edit of every task type to be accepted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.harness.rollouts import benchmark_validation as validation
from app.harness.workspace.store import load_benchmark
from app.paths import builtin_store
from core.benchmark_checks import min_families_for_accept

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_benchmark_is_the_generators_output() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "_make_real_conventions.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_task_type_has_enough_families_for_the_gate() -> None:
    bench = load_benchmark(builtin_store() / "questions" / "real-conventions")
    families = {g.task_type: g.families for g in validation.gate_families(bench)}
    assert 3 <= len(families) <= 5
    per_type = {t: len({q.family for q in bench.questions if q.task_type == t}) for t in families}
    assert min(per_type.values()) >= 12
    assert min(families.values()) >= 2 * min_families_for_accept(0.05)
