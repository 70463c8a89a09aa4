"""What does a tool call through a local stdio MCP server cost? (docs/tools.md#mcp-tools)

A benchmark, not a test: it prints figures. Starts tests/fakes/mcp_server.py (written with the
`mcp` package) through `app.harness.tools.mcp_tools.McpServer`, the path a rollout uses (the
client in its own thread, the call handed over from the caller's event loop), and times
--calls calls of its `add` tool against --calls direct in-process calls of the same function.
For scale it also times a few calls of the same function as a sandboxed Python tool (one
child process per call, app/harness/tools/python_tools.py).

`mcp.overhead_ms_p50` is the MCP call's median minus the direct call's median.

    .venv/bin/python bench/mcp_overhead.py [--calls 500] [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` and `tests` importable from anywhere

from app.harness.tools import python_tools  # noqa: E402
from app.harness.tools.mcp_tools import McpServer  # noqa: E402
from app.harness.tools.sandbox import SandboxPool  # noqa: E402
from app.harness.tools.spec import McpTool, PythonTool  # noqa: E402

TARGET_MS = 5.0
SERVER = ROOT / "tests" / "fakes" / "mcp_server.py"


def add(a: int, b: int) -> int:
    return a + b


async def timed_mcp(server: McpServer, calls: int) -> list[float]:
    times = []
    for i in range(calls):
        started = time.perf_counter()
        result = await server.call("add", {"a": i, "b": 1}, 10.0)
        times.append((time.perf_counter() - started) * 1000)
        if not result.ok or result.output != str(i + 1):
            raise SystemExit(f"mcp call {i} failed: {result}")
    return times


async def timed_sandboxed(tmp: Path, calls: int) -> list[float]:
    tools = tmp / "tools"
    tools.mkdir()
    (tools / "bench_tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    pool = SandboxPool(tmp / "sandbox")
    decl = PythonTool(name="add", kind="python", target="bench_tools:add")
    times = []
    for i in range(calls):
        result = await python_tools.call(decl, tmp, pool, {"a": i, "b": 1}, pool.workdir("w"))
        if not result.ok:
            raise SystemExit(f"sandboxed call failed: {result}")
        times.append(result.latency_ms)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--tiny", action="store_true", help="20 calls")
    args = ap.parse_args()
    if args.tiny:
        args.calls = 20
    direct = []
    for i in range(args.calls):
        started = time.perf_counter()
        add(i, 1)
        direct.append((time.perf_counter() - started) * 1000)
    with tempfile.TemporaryDirectory(prefix="mcp-overhead-") as tmp:
        decl = McpTool(name="bench", kind="mcp", command=[sys.executable, str(SERVER)])
        server = McpServer(decl, Path(tmp) / "server")
        started = time.perf_counter()
        server.start()
        start_ms = (time.perf_counter() - started) * 1000
        try:
            anyio.run(timed_mcp, server, min(20, args.calls))  # warm-up, not counted
            mcp = anyio.run(timed_mcp, server, args.calls)
        finally:
            server.close()
        sandboxed = anyio.run(timed_sandboxed, Path(tmp), max(3, args.calls // 50))
    p50 = {
        k: statistics.median(v)
        for k, v in (("direct", direct), ("mcp", mcp), ("sandboxed", sandboxed))
    }
    print(f"server start (spawn, initialize, list tools): {start_ms:.0f} ms")
    for name, value in p50.items():
        print(f"  {name:<10} p50 {value:8.3f} ms")
    print(f"  mcp p90 {statistics.quantiles(mcp, n=10)[-1]:.3f} ms over {len(mcp)} calls")
    print(f"RESULT mcp.overhead_ms_p50 {p50['mcp'] - p50['direct']:.2f} ms target <= {TARGET_MS:g}")
    print(f"RESULT mcp.server_start_ms {start_ms:.0f} ms")
    print(f"RESULT tools.python_sandboxed_call_ms_p50 {p50['sandboxed']:.1f} ms")


if __name__ == "__main__":
    main()
