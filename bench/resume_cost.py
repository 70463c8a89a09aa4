"""What does a crash cost? Time to get going again after `train --resume`, and calls paid twice.

A benchmark, not a test: it prints figures. In a temporary folder, two workspaces are created
from the store (seed sim-starter, benchmark sim-basic) and trained with the same config
(--set epochs=2 by default), each as its own `python main.py` process:

  reference   `train` uninterrupted
  killed      `train` with SKILL_TRAINER_KILL_AT=gate:5 (app/harness/workspace/killpoints.py: the
              process SIGKILLs itself the 5th time a gate chunk finishes), then
              `train --resume` on the same workspace

Figures:
  resume -> first step   seconds from starting the `--resume` process to the first
                         checkpoint.json that records more progress than the killed process
                         had (polled every 10 ms), split into start-up (until the log's
                         "resuming" line) and the step itself; compared with the reference's
                         median step time (from the step lines of its log file).
  repeated calls         non-cached model calls the crash cost. Every completed non-cached
                         call is one new row of the response cache (response_cache.db), so
                         extra = rows(killed+resumed) - rows(reference). Also from the
                         harness log, as asked of `llm_calls` (cache_hit=0), with why it
                         under-counts. Bound: the reference's non-cached calls of the step
                         that was interrupted.
  same end state         the resumed workspace's manifest best and final test accuracy equal
                         the reference's (docs/architecture.md#checkpoint-and-resume).

Noise: process start-up and step times vary 20-30 % on a shared machine; the kill point is
deterministic, so the call counts do not.

    .venv/bin/python bench/resume_cost.py [--kill-at gate:5] [--set epochs=2] [--keep] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "main.py"
STEP_LINE = re.compile(r"^(\S+ \S+) .*? e(\d+) s(\d+) ")
RESUMING_LINE = re.compile(r"^(\S+ \S+) .*? resuming ")


def cli(
    *args: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(MAIN), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def progress(ws: Path) -> dict[str, Any] | None:
    try:
        return json.loads((ws / "checkpoint.json").read_text())["progress"]
    except (OSError, ValueError, KeyError):
        return None


def rank(p: dict[str, Any] | None) -> tuple:
    """Progress order: (epoch, phase, step)."""
    if p is None:
        return (-1, -1, -1)
    phases = {"setup": 0, "in_epoch": 1, "epoch_done": 2, "finished": 3}
    return (p["epoch"], phases[p["phase"]], p["step_completed"])


def interrupted_step(p: dict[str, Any]) -> tuple[int, int] | None:
    if p["phase"] == "in_epoch":
        return p["epoch"], p["step_completed"] + 1
    if p["phase"] == "epoch_done":
        return p["epoch"] + 1, 0
    return None  # killed during setup (baseline) or after the end


def query(db: Path, sql: str, params: tuple = ()) -> Any:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


def cache_rows(ws: Path) -> int:
    return query(ws / "response_cache.db", "SELECT count(*) FROM responses")


def noncached_calls(ws: Path, run_prefix: str | None = None) -> int:
    if run_prefix is None:
        return query(ws / "harness.db", "SELECT count(*) FROM llm_calls WHERE cache_hit = 0")
    return query(
        ws / "harness.db",
        "SELECT count(*) FROM llm_calls WHERE cache_hit = 0 AND substr(run_id, 1, ?) = ?",
        (len(run_prefix), run_prefix),
    )


def log_times(ws: Path) -> tuple[list[tuple[datetime, int, int]], list[datetime]]:
    steps, resumes = [], []
    for line in (ws / "logs" / "skill-trainer.log").read_text(errors="replace").splitlines():
        if m := STEP_LINE.match(line):
            steps.append((datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S.%f"), int(m[2]), int(m[3])))
        elif m := RESUMING_LINE.match(line):
            resumes.append(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S.%f"))
    return steps, resumes


def median_step_seconds(ws: Path) -> float | None:
    """Between the last step line of consecutive steps in an epoch (step 0 has no start)."""
    steps, _ = log_times(ws)
    last: dict[tuple[int, int], datetime] = {}
    for t, e, s in steps:
        last[(e, s)] = t
    gaps = [
        (last[(e, s)] - last[(e, s - 1)]).total_seconds() for (e, s) in last if (e, s - 1) in last
    ]
    return statistics.median(gaps) if gaps else None


def end_state(ws: Path) -> dict[str, Any]:
    manifest = json.loads((ws / "manifest.json").read_text())
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    return {
        "current": manifest["current"],
        "best": {k: manifest["best"].get(k) for k in ("skills", "prompts", "val_acc", "epoch")},
        "test_accuracy": final["test_accuracy"],
        "curve": final["curve"],
    }


def run_resume(ws: Path, args: list[str]) -> dict[str, Any]:
    """Start `train --resume`, poll the checkpoint for the first new progress."""
    before = rank(progress(ws))
    start_wall, start_clock = time.perf_counter(), datetime.now()
    proc = subprocess.Popen(
        [sys.executable, str(MAIN), "train", "-w", str(ws), "--resume", "--no-progress", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    first_step = None
    while proc.poll() is None:
        if first_step is None and rank(progress(ws)) > before:
            first_step = time.perf_counter() - start_wall
        time.sleep(0.01)
    output = proc.stdout.read() if proc.stdout else ""
    total = time.perf_counter() - start_wall
    if proc.returncode != 0:
        sys.exit(f"train --resume failed ({proc.returncode}):\n{output}")
    if first_step is None and rank(progress(ws)) > before:
        first_step = total  # finished between two polls
    _, resumes = log_times(ws)
    startup = None
    if resumes:
        startup = (resumes[-1] - start_clock).total_seconds()
    return {"first_step_s": first_step, "total_s": total, "startup_s": startup}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-at", default="gate:5", help="SKILL_TRAINER_KILL_AT value")
    parser.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="config override for every train (default: epochs=2)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="epochs=1 unless --set says otherwise (tests/bench/test_bench_tiny.py): checks "
        "the bench runs",
    )
    args = parser.parse_args()
    default_sets = ["epochs=1"] if args.tiny else ["epochs=2"]
    overrides = [a for kv in (args.set or default_sets) for a in ("--set", kv)]

    tmp = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        ref, killed = tmp / "reference", tmp / "killed"
        for ws in (ref, killed):
            cli("init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic")

        t = time.perf_counter()
        cli("train", "-w", str(ref), "--no-progress", *overrides)
        ref_wall = time.perf_counter() - t
        ref_step = median_step_seconds(ref)
        print(
            f"reference: train {' '.join(overrides)} uninterrupted in {ref_wall:.1f} s, "
            f"median step {ref_step:.2f} s"
            if ref_step
            else f"reference: {ref_wall:.1f} s"
        )

        t = time.perf_counter()
        proc = cli(
            "train",
            "-w",
            str(killed),
            "--no-progress",
            *overrides,
            env={"SKILL_TRAINER_KILL_AT": args.kill_at},
            check=False,
        )
        kill_wall = time.perf_counter() - t
        if proc.returncode != -9:
            sys.exit(
                f"expected the process to SIGKILL itself at {args.kill_at}; exit code "
                f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        at_kill = progress(killed)
        where = interrupted_step(at_kill) if at_kill else None
        rows_at_kill = cache_rows(killed)
        print(
            f"killed: SIGKILL at {args.kill_at} after {kill_wall:.1f} s; checkpoint: epoch "
            f"{at_kill['epoch']} {at_kill['phase']} step_completed {at_kill['step_completed']}"
            f"; interrupted step: "
            + (f"e{where[0]} s{where[1]}" if where else "setup/baseline")
            + f"; {rows_at_kill} non-cached calls made so far (response cache rows)"
        )

        resumed = run_resume(killed, overrides)
        split = ""
        if resumed["startup_s"] is not None and resumed["first_step_s"] is not None:
            split = (
                f" (start-up and restore {resumed['startup_s']:.2f} s, then the step "
                f"{resumed['first_step_s'] - resumed['startup_s']:.2f} s)"
            )
        print(
            f"resumed: first new step finished {resumed['first_step_s'] or 0:.2f} s after the "
            f"resume command started{split}; whole resumed run {resumed['total_s']:.1f} s"
        )

        ref_rows, final_rows = cache_rows(ref), cache_rows(killed)
        extra = final_rows - ref_rows
        ref_log, final_log = noncached_calls(ref), noncached_calls(killed)
        bound = None
        if where:
            bound = noncached_calls(ref, f"{at_kill['train_id']}-e{where[0]}-s{where[1]}-")
        print(
            f"non-cached calls: reference {ref_rows}; killed+resumed {final_rows} "
            f"({rows_at_kill} before the kill + {final_rows - rows_at_kill} after) -> "
            f"extra {extra}"
            + (f"; the interrupted step made {bound} in the reference" if bound is not None else "")
        )
        print(
            f"llm_calls rows with cache_hit=0: reference {ref_log}, killed+resumed "
            f"{final_log}, difference {final_log - ref_log:+d}. (Under-counts the crash: the "
            "resume deletes the interrupted step's rows with the step, and rows still "
            "buffered in the recorder die with the process; the response cache rows above "
            "count every completed call.)"
        )
        same = end_state(ref) == end_state(killed)
        print(
            f"end state (manifest current/best, final test accuracy, curve) equal to the "
            f"reference: {'yes' if same else 'NO'}"
        )
        if not same:
            print(f"  reference: {end_state(ref)}\n  resumed:   {end_state(killed)}")

        first = resumed["first_step_s"]
        if first is None:
            sys.exit("the resumed run finished without recording new progress")
        print(f"RESULT resume.first_step_s {first:.2f} s")
        if ref_step:
            print(f"RESULT resume.first_step_over_median_step {first / ref_step:.2f} ratio")
        if resumed["startup_s"] is not None:
            print(f"RESULT resume.startup_s {resumed['startup_s']:.2f} s")
        if bound is not None:
            print(f"RESULT resume.extra_noncached_calls {extra} calls target <={bound}")
        else:
            print(f"RESULT resume.extra_noncached_calls {extra} calls")
        print(f"RESULT resume.llm_calls_noncached_diff {final_log - ref_log} calls")
        print(f"RESULT resume.same_end_state {int(same)} bool target >=1")
    finally:
        if args.keep:
            print(f"workspaces kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
