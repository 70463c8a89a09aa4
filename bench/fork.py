"""Best-of-N rollouts on the simulated world (README "Best-of-N rollouts"):
fork -> rank -> memories.

A benchmark, not a test: it prints figures. On a fresh workspace (seed `sim-starter`,
benchmark `sim-basic`, model `sim/basic`):

1. fork: every question of the diagnosis pool as N = 8 branches, temperatures 0.2 .. 1.2,
   one concurrency limit of 32 (app/harness/data/fork.py). branches/s is the fork's own wall
   time (model calls, response cache, call telemetry and branch rows in harness.db), median
   of --reps forks on fresh workspaces (so every call misses the cache).
   pass@1 = the mean share of a question's branches right; pass@8 = any branch right.
2. rank (app/harness/data/rank.py) with a simulated judge that is noisy (--judge-noise) and
   position-biased (--judge-bias), a cap of --judge-cap calls per batch (one question's
   branches): the share of questions whose top-ranked branch is objectively right among
   those where one is; judge calls over the cap (the largest batch minus the cap: must be 0);
   also the same share when the ranker is given no objective score (judge + Bradley-Terry
   alone), to show what the judge contributes by itself.
3. memories: the verified winners of the fork are stored (app/harness/rollouts/memory.py); the test
   pool (held out: never forked) is answered with memory_k = 3 and without, same versions,
   paired per question; exact McNemar p on the discordant questions (core/stats.py).

    .venv/bin/python bench/fork.py [--reps 3] [--branches 8] [--judge-cap 24] [--tiny]

`--tiny` (tests/bench/test_bench_tiny.py): one fork of 2 branches; the exit code then leaves
out the throughput target, which a loaded machine misses without any fault in the code.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for _name in ("pandas", "numpy"):  # sqlite-utils imports pandas if present; not needed here
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from loguru import logger  # noqa: E402

from app.harness.data.fork import (  # noqa: E402
    ForkSpec,
    branch_temperatures,
    run_fork,
    select_questions,
)
from app.harness.data.rank import rank_rollout  # noqa: E402
from app.harness.rollouts.pools import split_pools  # noqa: E402
from app.harness.rollouts.session import Session  # noqa: E402
from app.harness.workspace.config import load_config  # noqa: E402
from app.harness.workspace.store import benchmark_dir, load_seed, seed_dir  # noqa: E402
from app.harness.workspace.workspace import init_workspace  # noqa: E402
from app.paths import builtin_store  # noqa: E402
from core.stats import mcnemar_exact  # noqa: E402

TARGET_BRANCHES_PER_S = 1000
TARGET_TOP_CORRECT = 0.95


def fresh_workspace(folder: Path) -> Path:
    ws = folder / "ws"
    init_workspace(
        ws,
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )
    return ws


def do_fork(ws: Path, branches: int, overrides: dict) -> tuple[float, dict]:
    with Session(ws, load_config(None, overrides)) as s:
        questions = select_questions(s.benchmark, "diagnosis", None, None, None)
        spec = ForkSpec(
            tuple(q.question_id for q in questions),
            branch_temperatures(branches, temperature_range=(0.2, 1.2)),
            32,
        )
        result = anyio.run(lambda: run_fork(s, spec, "bench-fork"))
        summary = s.log.run("bench-fork").summary_json
    import json

    return result.branches_per_s, json.loads(summary)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--branches", type=int, default=8)
    ap.add_argument("--judge-cap", type=int, default=24)
    ap.add_argument("--judge-noise", type=float, default=0.2)
    ap.add_argument("--judge-bias", type=float, default=0.3)
    ap.add_argument("--tiny", action="store_true", help="one fork of 2 branches")
    args = ap.parse_args()
    if args.tiny:
        args.reps, args.branches = 1, 2
    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    overrides = {
        "judge_max_calls_per_batch": args.judge_cap,
        "sim_judge_noise": args.judge_noise,
        "sim_judge_position_bias": args.judge_bias,
    }
    rates = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            ws = fresh_workspace(Path(tmp) / f"r{rep}")
            rate, summary = do_fork(ws, args.branches, overrides)
            rates.append(rate)
        print(
            f"fork: {summary['questions']} questions x {args.branches} branches, "
            f"branches/s per rep {[round(r) for r in rates]}"
        )
        config = load_config(None, overrides)
        with Session(ws, config) as s:
            judge_only = anyio.run(
                lambda: rank_rollout(
                    s,
                    "bench-fork",
                    weights={"objective": 0.0, "judge": 1.0, "bt": 1.0},
                    remember=False,
                )
            )
            report = anyio.run(lambda: rank_rollout(s, "bench-fork"))
            test = list(
                split_pools(s.benchmark.questions, s.benchmark.split, s.benchmark.seed).test
            )
            off = anyio.run(lambda: s.infer(test, "mem-off", "infer"))
        with Session(ws, load_config(None, {**overrides, "memory_k": 3})) as s:
            on = anyio.run(lambda: s.infer(test, "mem-on", "infer"))
    j = report["judge"]
    print(
        f"rank: judge calls {j['calls']} ({j['batches_at_cap']} of {report['questions']} "
        f"batches at the cap of {j['cap_per_batch']}, {j['capped_samples']} samples capped); "
        f"memories {report['memories']}"
    )
    print(f"top vs branch 0: {report['top_vs_branch0']}")
    w = sum(1 for q in on.correctness if on.correctness[q] and not off.correctness.get(q))
    l = sum(1 for q in on.correctness if off.correctness.get(q) and not on.correctness[q])  # noqa: E741
    print(
        f"memory: {len(test)} held-out test questions, {w} gained, {l} lost with memories "
        "(simulated model: a memory of the same rule acts as a worked example)"
    )
    rate = statistics.median(rates)
    print(f"RESULT fork.branches_per_s {rate:.0f} branches/s target >={TARGET_BRANCHES_PER_S}")
    print(f"RESULT fork.pass_at_1 {summary['pass_at_1']:.3f} rate")
    print(f"RESULT fork.pass_at_8 {summary['pass_at_n']:.3f} rate")
    print(
        f"RESULT fork.ranker_top_correct_share {report['ranker_top_correct_share']:.3f} rate "
        f"target >={TARGET_TOP_CORRECT}"
    )
    print(
        f"RESULT fork.ranker_top_correct_share_judge_only "
        f"{judge_only['ranker_top_correct_share']:.3f} rate"
    )
    print(f"RESULT fork.judge_calls_over_cap {j['calls_over_cap']} calls target ==0")
    print(
        f"RESULT fork.judge_max_calls_in_a_batch {j['max_calls_in_a_batch']} calls "
        f"target <={j['cap_per_batch']}"
    )
    print(f"RESULT memory.accuracy_on {on.accuracy:.3f} rate")
    print(f"RESULT memory.accuracy_off {off.accuracy:.3f} rate")
    print(f"RESULT memory.mcnemar_p {mcnemar_exact(w, l):.3g} p")
    ok = (
        (args.tiny or rate >= TARGET_BRANCHES_PER_S)
        and j["calls_over_cap"] == 0
        and report["ranker_top_correct_share"] >= TARGET_TOP_CORRECT
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
