"""How close does inference get to the model's own limits? (docs/architecture.md#models.)

A benchmark, not a test: it prints figures. Three parts, all on the built-in simulated model
over the `sim-basic` benchmark with the `sim-starter` seed:

1. Concurrency with latency: `SimProvider(SimSettings(latency_ms=100))` (no jitter) behind
   `run_inference` (its CapacityLimiter, answer loop and batched log writes into a real
   harness.db) at concurrency 1, 8, 32, 64. The questions are the benchmark's, repeated under
   new ids until a run lasts about --seconds. A perfect harness sustains concurrency / 0.1 s
   calls/s; efficiency = achieved calls/s / that. What is lost is harness CPU between calls and
   the tail (fewer questions than slots near the end of a run).
2. End to end without latency: `Session.infer` on a fresh workspace (response cache, call
   telemetry into llm_calls, predictions into harness.db), --samples sample indices so every
   call misses the cache; then the same questions again, so every call is a cache hit.
3. The simulated model alone: the agent requests recorded in part 2 replayed one after another
   into a fresh `SimProvider.complete` (one core, no cache, no log).

Each figure is the median of --reps runs (a shared machine makes single runs differ by
20-30 %). `bench/litellm_overhead.py` measures the litellm path; it is not repeated here.

    .venv/bin/python bench/inference_throughput.py [--reps 3] [--seconds 6] [--samples 4] [--tiny]
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere
for _name in ("pandas", "numpy"):  # sqlite-utils imports pandas if present; not needed here
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from loguru import logger  # noqa: E402

from app.harness.rollouts.agent_prompts import AgentPrompts  # noqa: E402
from app.harness.rollouts.inference import AgentSettings, run_inference  # noqa: E402
from app.harness.rollouts.session import Session  # noqa: E402
from app.harness.workspace.config import RunConfig  # noqa: E402
from app.harness.workspace.harness_log import HarnessLog  # noqa: E402
from app.harness.workspace.store import benchmark_dir, load_benchmark, load_seed, seed_dir  # noqa: E402
from app.harness.workspace.workspace import init_workspace  # noqa: E402
from app.paths import builtin_store  # noqa: E402
from app.providers.sim.provider import SimProvider, SimSettings  # noqa: E402
from core.types import Question  # noqa: E402

SEED, BENCHMARK, MODEL = "sim-starter", "sim-basic", "sim/basic"
LATENCY_S = 0.1
CONCURRENCIES = (1, 8, 32, 64)
TARGET_EFFICIENCY = 0.9  # at 32 and 64
TARGET_E2E = 1_000  # predictions/s, every call a cache miss
TARGET_RAW = 5_000  # SimProvider.complete calls/s on one core


class Counting:
    """Counts calls; optionally records each request for replay."""

    def __init__(self, inner: Any, record: list | None = None) -> None:
        self.inner, self.calls, self.record = inner, 0, record

    async def complete(self, messages, **kwargs):
        self.calls += 1
        if self.record is not None:
            self.record.append((messages, kwargs))
        return await self.inner.complete(messages, **kwargs)


def load_inputs(tmp: Path) -> tuple[list[Question], AgentPrompts]:
    """The benchmark and the seed's v1 versions, read as training reads them: from a workspace
    (a version's files are checked against its _meta.json, which a store seed does not have)."""
    bench = load_benchmark(benchmark_dir(builtin_store(), BENCHMARK))
    paths = init_workspace(
        tmp / "inputs-ws",
        load_seed(seed_dir(builtin_store(), SEED)),
        benchmark_dir(builtin_store(), BENCHMARK),
    )
    prompts = AgentPrompts.load(paths.skills_dir, paths.prompts_dir, "inline")
    return list(bench.questions), prompts


def repeated(questions: list[Question], n: int) -> list[Question]:
    """n questions: the benchmark's, copied under new ids (pairs stay pairs) as needed."""
    out = []
    for r in range(n // len(questions) + 1):
        for q in questions:
            if len(out) == n:
                return out
            suffix = f"~r{r}" if r else ""
            out.append(
                dataclasses.replace(
                    q,
                    question_id=q.question_id + suffix,
                    unit_id=q.unit_id + suffix,
                    family=q.family + suffix,
                )
            )
    return out


# -- part 1: concurrency with latency ---------------------------------------------------------
async def latency_run(
    tmp: Path, questions: list[Question], prompts: AgentPrompts, concurrency: int, tag: str
) -> tuple[float, float, int]:
    provider = Counting(SimProvider(MODEL, SimSettings(latency_ms=LATENCY_S * 1000)))
    with HarnessLog(tmp / f"lat-{tag}.db") as log:
        start, cpu = time.perf_counter(), time.process_time()
        await run_inference(
            questions,
            provider=provider,
            prompts=prompts,
            log=log,
            run_id=f"lat-{tag}",
            settings=AgentSettings(concurrency=concurrency),
        )
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, provider.calls


def best_makespan(calls: list[int], slots: int) -> float:
    """Seconds a zero-overhead harness needs: questions start in order on the first free slot
    (the CapacityLimiter is FIFO), each taking calls x latency. Above calls / (slots / latency)
    by the tail, when fewer questions than slots are left."""
    free = [0.0] * slots
    for n in calls:
        t = heapq.heappop(free)
        heapq.heappush(free, t + n * LATENCY_S)
    return max(free)


async def part_latency(
    tmp: Path, base: list[Question], prompts: AgentPrompts, reps: int, seconds: float
) -> dict[int, float]:
    # Calls per question (the sim's replies do not depend on latency), to size each run to
    # about `seconds` and to compute the best possible schedule.
    probe = Counting(SimProvider(MODEL))
    with HarnessLog(tmp / "probe.db") as log:
        await run_inference(
            base,
            provider=probe,
            prompts=prompts,
            log=log,
            run_id="probe",
            settings=AgentSettings(concurrency=16),
        )
        per_question = {
            r["question_id"]: sum(s.get("type") == "model" for s in json.loads(r["steps_json"]))
            for r in log.query("SELECT question_id, steps_json FROM predictions")
        }
    per_q = probe.calls / len(base)
    print(
        f"part 1: sim latency {LATENCY_S * 1000:.0f} ms, {per_q:.2f} model calls per question; "
        "efficiency = calls/s / (concurrency / 0.1 s); 'bound' = the best a zero-overhead "
        "harness could reach with this question mix (tail); 'harness' = efficiency / bound"
    )
    efficiency: dict[int, float] = {}
    for c in CONCURRENCIES:
        ideal = c / LATENCY_S
        n = max(4 * c, round(seconds * ideal / per_q))
        questions = repeated(base, n)
        calls_each = [per_question[q.question_id.split("~")[0]] for q in questions]
        bound = sum(calls_each) / ideal / best_makespan(calls_each, c)
        rates, cpus = [], []
        for rep in range(reps):
            wall, cpu, calls = await latency_run(tmp, questions, prompts, c, f"{c}-{rep}")
            rates.append(calls / wall)
            cpus.append(cpu * 1e6 / calls)
        rate = statistics.median(rates)
        efficiency[c] = rate / ideal
        print(
            f"  concurrency {c:>3}: {n:5d} questions, {rate:7.1f} calls/s (ideal {ideal:5.0f}), "
            f"efficiency {efficiency[c]:.3f}, bound {bound:.3f}, harness "
            f"{efficiency[c] / bound:.3f}, {statistics.median(cpus):.0f} us CPU/call  [runs: "
            + ", ".join(f"{r / ideal:.3f}" for r in rates)
            + "]",
            flush=True,
        )
    return efficiency


# -- part 2: end to end without latency -------------------------------------------------------
def fresh_workspace(tmp: Path, name: str) -> Path:
    root = tmp / name
    init_workspace(
        root, load_seed(seed_dir(builtin_store(), SEED)), benchmark_dir(builtin_store(), BENCHMARK)
    )
    return root


async def e2e_pass(session: Session, samples: int, tag: str) -> tuple[float, float, int]:
    questions = list(session.benchmark.questions)
    start, cpu = time.perf_counter(), time.process_time()
    for k in range(samples):
        await session.infer(questions, f"bench-{tag}-s{k}", "infer", sample=k)
    session.recorder.flush()
    return time.perf_counter() - start, time.process_time() - cpu, samples * len(questions)


async def part_e2e(
    tmp: Path, reps: int, samples: int, record: list
) -> tuple[float, float, float, float]:
    miss_rates, hit_rates, miss_cpu, hit_cpu = [], [], [], []
    for rep in range(reps):
        root = fresh_workspace(tmp, f"ws{rep}")
        with Session(root, RunConfig()) as session:
            agent = session.providers["agent"]
            inner = agent.inner
            if rep == 0:  # record the agent requests the sim receives, for part 3
                agent.inner = Counting(inner, record)
            wall, cpu, n = await e2e_pass(session, samples, "miss")
            agent.inner = inner
            t = dict(session.recorder.totals)
            assert t["cache_hits"] == 0, f"fresh workspace but {t['cache_hits']} cache hits"
            miss_rates.append(n / wall)
            miss_cpu.append(n / cpu)
            wall2, cpu2, n2 = await e2e_pass(session, samples, "hit")
            t2 = dict(session.recorder.totals)
            hits = t2["cache_hits"] - t["cache_hits"]
            assert hits == t2["calls"] - t["calls"], "second pass made non-cached calls"
            hit_rates.append(n2 / wall2)
            hit_cpu.append(n2 / cpu2)
            print(
                f"  rep {rep + 1}: {n} predictions, {t['calls']} model calls (all misses) "
                f"{n / wall:6.0f} predictions/s ({n / cpu:6.0f} per CPU-s); again from cache "
                f"({hits} hits) {n2 / wall2:6.0f} predictions/s ({n2 / cpu2:6.0f} per CPU-s)",
                flush=True,
            )
    return (
        statistics.median(miss_rates),
        statistics.median(hit_rates),
        statistics.median(miss_cpu),
        statistics.median(hit_cpu),
    )


# -- part 3: the simulated model alone --------------------------------------------------------
async def part_raw(record: list, reps: int) -> tuple[float, float]:
    rates, cpu_us = [], []
    for _ in range(reps):
        sim = SimProvider(MODEL)
        wall, cpu = time.perf_counter(), time.process_time()
        for messages, kwargs in record:
            await sim.complete(messages, **kwargs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rates.append(len(record) / wall)
        cpu_us.append(cpu * 1e6 / len(record))
    return statistics.median(rates), statistics.median(cpu_us)


def load_note() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


async def main(reps: int, seconds: float, samples: int) -> None:
    logger.remove()  # Session adds its own workspace-file sink; keep the console quiet
    print(
        f"machine: {load_note()} at start; wall-clock figures shrink when other processes "
        "compete for the CPU, the per-CPU-second figures much less"
    )
    with tempfile.TemporaryDirectory(prefix="bench-infer-") as tmp_name:
        tmp = Path(tmp_name)
        base, prompts = load_inputs(tmp)
        efficiency = await part_latency(tmp, base, prompts, reps, seconds)
        print(
            f"part 2: Session.infer, no latency, fresh workspace, {samples} samples x "
            f"{len(base)} questions"
        )
        record: list = []
        miss, hit, miss_cpu, hit_cpu = await part_e2e(tmp, reps, samples, record)
        print(
            f"  median: {miss:.0f} predictions/s (all misses), {hit:.0f} predictions/s "
            f"(all hits), hit/miss {hit / miss:.1f}x; per CPU-second {miss_cpu:.0f} / "
            f"{hit_cpu:.0f}"
        )
    print(f"part 3: {len(record)} recorded agent requests replayed into SimProvider.complete")
    raw, cpu_us = await part_raw(record, reps)
    print(
        f"  median: {raw:.0f} calls/s, {cpu_us:.0f} us CPU/call "
        f"({1e6 / cpu_us:.0f} calls per CPU-second)"
    )
    print(f"machine: {load_note()} at end")
    for c in CONCURRENCIES:
        target = f" target >={TARGET_EFFICIENCY}" if c >= 32 else ""
        print(f"RESULT inference.efficiency_c{c} {efficiency[c]:.3f} ratio{target}")
    print(
        f"RESULT inference.e2e_predictions_per_s_miss {miss:.0f} predictions/s "
        f"target >={TARGET_E2E}"
    )
    print(f"RESULT inference.e2e_predictions_per_cpu_s_miss {miss_cpu:.0f} predictions/CPU-s")
    print(f"RESULT inference.e2e_predictions_per_s_hit {hit:.0f} predictions/s")
    print(f"RESULT inference.sim_complete_calls_per_s {raw:.0f} calls/s target >={TARGET_RAW}")
    print(f"RESULT inference.sim_complete_calls_per_cpu_s {1e6 / cpu_us:.0f} calls/CPU-s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    # 6 s runs: at 2.5 s the start-up and the tail of a run (fewer questions left than slots)
    # cost c64 about 2 points of efficiency that no harness could avoid.
    parser.add_argument(
        "--seconds", type=float, default=6.0, help="approximate length of each latency run"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=4,
        help="sample indices per end-to-end pass (each a full benchmark)",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="one short run of each part (tests/bench/test_bench_tiny.py): checks the bench runs",
    )
    args = parser.parse_args()
    if args.tiny:
        args.reps, args.seconds, args.samples = 1, 0.5, 1
    anyio.run(main, args.reps, args.seconds, args.samples)
