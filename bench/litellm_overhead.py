"""What the harness adds on top of litellm per model call.

Starts the fake OpenAI server in a child process (so its CPU is not charged here), then makes
N calls at concurrency C (a) with raw `litellm.acompletion` and (b) through
`CachingProvider(LiteLLMProvider)` with a unique seed per call, so every call misses the cache
and pays the full path: key hash, SELECT, litellm, parse, cost, budget, INSERT, telemetry.
Prints calls/s and CPU ms per call (`time.process_time` of this process) and harness/raw ratios.
The two alternate over --reps rounds (order flipped each round) and medians are compared,
because a shared 2-core machine makes single runs differ by 20-30 %.

    .venv/bin/python bench/litellm_overhead.py [--n 300] [--concurrency 32] [--reps 3] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `tests.fakes` importable from anywhere

from app.providers.cache import CachingProvider, ResponseCache  # noqa: E402
from app.providers.litellm_provider import CostBudget, LiteLLMProvider, load_litellm  # noqa: E402
from tests.fakes.openai_server import serve_in_subprocess  # noqa: E402

MODEL = "openai/fake-model"
KEY_ENV = "BENCH_FAKE_API_KEY"
WARMUP = 20


def messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You answer questions about ledgers. " * 20},
        {"role": "user", "content": f"Question {i}: what is the balance?"},
    ]


class ListRecorder:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record_call(self, row: dict[str, Any]) -> None:
        self.rows.append(row)


async def drive(
    call: Callable[[int], Awaitable[Any]], n: int, concurrency: int, start: int
) -> None:
    """`concurrency` workers share the call indices start..start+n-1."""
    indices = iter(range(start, start + n))

    async def worker() -> None:
        for i in indices:
            await call(i)

    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)


async def measure(
    name: str, call: Callable[[int], Awaitable[Any]], n: int, concurrency: int, start: int
) -> dict[str, float]:
    await drive(call, WARMUP, concurrency, start)  # connection pool, first-call setup
    wall, cpu = time.perf_counter(), time.process_time()
    await drive(call, n, concurrency, start + WARMUP)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    result = {"calls_per_s": n / wall, "cpu_ms_per_call": cpu * 1000 / n}
    print(
        f"{name:<8} {n} calls, concurrency {concurrency}: {result['calls_per_s']:7.1f} calls/s, "
        f"{result['cpu_ms_per_call']:6.2f} ms CPU/call, {wall:5.2f} s wall"
    )
    return result


async def main(n: int, concurrency: int, reps: int) -> None:
    os.environ[KEY_ENV] = "sk-bench"
    litellm = load_litellm()
    with serve_in_subprocess() as base_url, tempfile.TemporaryDirectory() as tmp:

        async def raw(i: int) -> Any:
            return await litellm.acompletion(
                model=MODEL,
                messages=messages(i),
                api_base=base_url,
                api_key="sk-bench",
                num_retries=0,
                timeout=30,
                temperature=0.0,
                max_tokens=64,
                seed=i,
            )

        inner = LiteLLMProvider(
            MODEL,
            api_base=base_url,
            api_key_env=KEY_ENV,
            timeout_s=30,
            price_in_per_mtok=1.0,
            price_out_per_mtok=2.0,
            budget=CostBudget(max_usd=1000.0),
        )
        recorder = ListRecorder()
        harness = CachingProvider(
            inner, ResponseCache(Path(tmp) / "cache.sqlite"), model_name=MODEL, recorder=recorder
        )

        async def wrapped(i: int) -> Any:
            return await harness.complete(messages(i), max_tokens=64, seed=i)

        runs: dict[str, list[dict[str, float]]] = {"raw": [], "harness": []}
        calls = {"raw": raw, "harness": wrapped}
        for rep in range(reps):
            order = ["raw", "harness"] if rep % 2 == 0 else ["harness", "raw"]
            for name in order:
                start = (rep * 2 + order.index(name)) * (n + WARMUP)  # unique seeds: all misses
                runs[name].append(await measure(name, calls[name], n, concurrency, start))
        assert not any(row["cache_hit"] for row in recorder.rows), "a call hit the cache"
    report(runs)


def report(runs: dict[str, list[dict[str, float]]]) -> None:
    med = {
        name: {k: statistics.median(r[k] for r in results) for k in results[0]}
        for name, results in runs.items()
    }
    a, b = med["raw"], med["harness"]
    for name, m in med.items():
        print(
            f"median {name:<8} {m['calls_per_s']:7.1f} calls/s, "
            f"{m['cpu_ms_per_call']:6.2f} ms CPU/call"
        )
    print(
        f"ratio harness/raw: calls/s {b['calls_per_s'] / a['calls_per_s']:.2f}, "
        f"CPU/call {b['cpu_ms_per_call'] / a['cpu_ms_per_call']:.2f} "
        f"({b['cpu_ms_per_call'] - a['cpu_ms_per_call']:+.2f} ms CPU/call)"
    )
    # machine-readable figures for bench/run_all.py's table (it reads RESULT lines only)
    print(f"RESULT litellm.raw_calls_per_s {a['calls_per_s']:.1f} calls/s")
    print(f"RESULT litellm.harness_calls_per_s {b['calls_per_s']:.1f} calls/s")
    print(f"RESULT litellm.raw_cpu_ms_per_call {a['cpu_ms_per_call']:.2f} ms")
    print(f"RESULT litellm.harness_cpu_ms_per_call {b['cpu_ms_per_call']:.2f} ms")
    print(
        f"RESULT litellm.harness_over_raw_cpu_per_call "
        f"{b['cpu_ms_per_call'] / a['cpu_ms_per_call']:.2f} ratio"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="10 calls at concurrency 2, once (tests/bench/test_bench_tiny.py): checks the "
        "bench runs",
    )
    args = parser.parse_args()
    if args.tiny:
        args.n, args.concurrency, args.reps = 10, 2, 1
    anyio.run(main, args.n, args.concurrency, args.reps)
