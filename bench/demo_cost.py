"""What does `python main.py demo` cost a new user? Wall time and peak memory.

A benchmark, not a test: it prints figures. Runs `python main.py demo --workspace
<tmp>/demo --no-progress` as a child process --reps times (a fresh temporary folder each time,
so no run archives a previous one) and reads each child's own resource usage with os.wait4:
wall time, peak resident set size (ru_maxrss), user+system CPU. Medians are reported, because
a shared machine makes single runs differ by 20-30 %.

    .venv/bin/python bench/demo_cost.py [--reps 3] [--tiny]

`--tiny` (tests/bench/test_bench_tiny.py): one demo of one epoch; shows the bench runs, its
figures are not the demo's cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "main.py"
TARGET_WALL_S = 120
TARGET_RSS_MB = 500


def run_demo(tmp: Path, extra: list[str]) -> dict[str, float]:
    out_path = tmp / "demo-output.txt"
    with out_path.open("w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                str(MAIN),
                "demo",
                "--workspace",
                str(tmp / "demo"),
                "--no-progress",
                *extra,
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen consistent
    output = out_path.read_text(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"demo failed ({proc.returncode}):\n{output}")
    summary = next(
        (line.strip() for line in output.splitlines() if line.startswith("test accuracy:")), ""
    )
    return {
        "wall_s": wall,
        "rss_mb": usage.ru_maxrss / 1024,  # Linux: kilobytes
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one demo of one epoch")
    args = parser.parse_args()
    extra = ["--set", "epochs=1"] if args.tiny else []
    if args.tiny:
        args.reps = 1
    runs = []
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
            r = run_demo(Path(tmp), extra)
        runs.append(r)
        print(
            f"run {rep + 1}: {r['wall_s']:5.1f} s wall, {r['cpu_s']:5.1f} s CPU, peak RSS "
            f"{r['rss_mb']:5.0f} MB; {r['summary']}",
            flush=True,
        )
    wall = statistics.median(r["wall_s"] for r in runs)
    rss = statistics.median(r["rss_mb"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    print(
        f"median: {wall:.1f} s wall ({cpu:.1f} s CPU, {cpu / wall:.0%} of one core), peak RSS "
        f"{rss:.0f} MB (max {max(r['rss_mb'] for r in runs):.0f} MB)"
    )
    print(f"RESULT demo.wall_s {wall:.1f} s target <{TARGET_WALL_S}")
    print(f"RESULT demo.peak_rss_mb {rss:.0f} MB target <{TARGET_RSS_MB}")
    print(f"RESULT demo.cpu_s {cpu:.1f} s")


if __name__ == "__main__":
    main()
