"""What does a model call through the agents' recording gateway cost? (docs/agents.md)

A benchmark, not a test: it prints figures. sim/basic (no latency) answers --calls calls made
three ways, one at a time, alternating: (a) `provider.complete` directly, the path the
built-in loop takes; (b) raw HTTP through the gateway with a kept-alive httpx client (the
gateway's own cost: routing, validation, recording, JSON out, the loopback round trip);
(c) the openai SDK through the gateway (what an outside Python agent pays, its client
included). Client and gateway share this process and its event loop, as with a Python agent.

`agents.gateway_overhead_ms_p50` is (b)'s median minus (a)'s.

    .venv/bin/python bench/agents_gateway.py [--calls 200] [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere

from app.harness.agents.gateway import running_gateway  # noqa: E402
from app.harness.workspace.config import RunConfig  # noqa: E402
from app.providers.factory import make_model  # noqa: E402
from app.providers.litellm_provider import CostBudget  # noqa: E402

TARGET_MS = 5.0  # the gateway's own cost per call, p50
WARMUP = 10


def messages(i: int) -> list[dict[str, object]]:
    question = f"[ledger] Case b{i}. For client {i} the figures are 3, 4, {i}. What is the total?"
    return [{"role": "system", "content": "Answer."}, {"role": "user", "content": question}]


async def measure(calls: int) -> dict[str, list[float]]:
    provider = make_model("sim/basic", RunConfig(), CostBudget(None))
    times: dict[str, list[float]] = {"direct": [], "http": [], "sdk": []}
    async with running_gateway(provider, model_name="sim/basic") as gateway:
        key = gateway.open_rollout("bench", call_cap=10 * (calls + WARMUP), time_limit_s=3600)
        headers = {"Authorization": f"Bearer {key}"}
        sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)
        async with httpx.AsyncClient(base_url=gateway.base_url, headers=headers) as http:
            ways: dict[str, Callable[[int], Awaitable[object]]] = {
                "direct": lambda i: provider.complete(messages(i)),  # type: ignore[arg-type]
                "http": lambda i: http.post(
                    "/chat/completions", json={"model": "m", "messages": messages(i)}
                ),
                "sdk": lambda i: sdk.chat.completions.create(model="m", messages=messages(i)),  # type: ignore[arg-type]
            }
            for i in range(WARMUP + calls):
                for name, call in ways.items():
                    started = time.perf_counter()
                    await call(i)
                    if i >= WARMUP:
                        times[name].append((time.perf_counter() - started) * 1000)
        recorded = gateway.close_rollout(key)
    assert len(recorded) == 2 * (WARMUP + calls), "every gateway call is recorded"
    return times


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tiny", action="store_true", help="20 calls, for the test suite")
    args = parser.parse_args()
    calls = 20 if args.tiny else args.calls
    times = anyio.run(measure, calls)
    for name, values in times.items():
        print(f"{name:>6}: p50 {pct(values, 50):7.2f} ms   p95 {pct(values, 95):7.2f} ms")
    over50 = pct(times["http"], 50) - pct(times["direct"], 50)
    over95 = pct(times["http"], 95) - pct(times["direct"], 95)
    print(f"RESULT agents.gateway_overhead_ms_p50 {over50:.2f} ms target <= {TARGET_MS:g}")
    print(f"RESULT agents.gateway_overhead_ms_p95 {over95:.2f} ms")
    sdk50 = pct(times["sdk"], 50) - pct(times["direct"], 50)
    print(f"RESULT agents.gateway_sdk_overhead_ms_p50 {sdk50:.2f} ms")


if __name__ == "__main__":
    main()
