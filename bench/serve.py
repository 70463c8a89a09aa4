"""Does serving cost throughput? `serve` against `infer` on the same questions (docs/serving.md).

On the built-in simulated model (sim-basic benchmark, sim-starter seed), with a per-call
latency (--latency-ms, default 50: a model call is never free, and at zero latency the
simulated model answers in well under a millisecond, so the figure would compare HTTP
parsing with nothing) and concurrency 32 for both:

1. `infer`: `Session.infer` over the questions in this process (the agent loop, the limiter,
   batched log writes), timed around the call only.
2. `serve`: the real `serve` command as a child process on 127.0.0.1, and 32 concurrent
   clients (httpx, one connection each) sending the same questions, each with its task type
   and context in the request's `skill_trainer` field so the agent sees exactly what infer
   shows it. Each client first opens its connection with one untimed warm-up request (a server
   in use is warm); then timed from the first request to the last reply.

Each side has its own fresh workspace, so both start with a cold response cache.

    RESULT serve.infer_requests_per_s       questions/s through infer
    RESULT serve.requests_per_s             questions/s through serve (target >= 0.8 x infer)
    RESULT serve.ratio                      serve / infer (target >= 0.8)
    RESULT serve.p95_overhead_ms            per request, in the server: arrival to last byte
                                            sent minus the agent loop's own time, p95 (the
                                            serve run's summary, warm-up requests included)
    RESULT serve.client_p95_overhead_ms     the same seen by the clients: round trip minus
                                            `skill_trainer.agent_ms` (client CPU and the
                                            machine's load included)
    RESULT serve.server_cpu_ms_per_request  CPU of the server process per timed request
    RESULT serve.infer_cpu_ms_per_question  CPU of infer per question
    RESULT serve.answers_match_infer        share of answers identical to infer's
    RESULT serve.openai_parses / litellm_parses   1 when that client parsed a reply

    .venv/bin/python bench/serve.py [--questions 518] [--latency-ms 50] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for _name in ("pandas", "numpy"):  # sqlite-utils imports pandas if present; not needed here
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from loguru import logger  # noqa: E402

from app.cli import main as cli  # noqa: E402
from app.harness.rollouts.session import Session  # noqa: E402
from app.harness.workspace.config import build_config  # noqa: E402
from core.types import Question  # noqa: E402

CLIENTS = 32
TARGET_RATIO = 0.8
TARGET_OVERHEAD_MS = 20.0
READY = re.compile(r"serving (\S+) at (http://\S+)/v1 ")


def init(root: Path) -> Path:
    assert cli(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def overrides(latency_ms: float) -> dict[str, Any]:
    return {"concurrency": CLIENTS, "sim_latency_ms": latency_ms}


async def through_infer(root: Path, n: int, latency_ms: float) -> Timed:
    config = build_config(overrides(latency_ms), "bench")
    with Session(root, config) as session:
        questions = list(session.benchmark.questions)[:n]
        start, cpu = time.perf_counter(), time.process_time()
        await session.infer(questions, "bench-infer", "infer", guard=False)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        rows = session.log.conn.execute(
            "SELECT question_id, prediction FROM predictions WHERE run_id = 'bench-infer'"
        ).fetchall()
    return Timed(wall, cpu, answers={qid: pred for qid, pred in rows})


def start_server(root: Path, latency_ms: float) -> tuple[subprocess.Popen, str, str]:
    sets = [f"--set={k}={v}" for k, v in overrides(latency_ms).items()]
    proc = subprocess.Popen(
        [sys.executable, "main.py", "serve", "-w", str(root), "--port", "0", *sets],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = READY.search(line)
    if found is None:
        proc.kill()
        sys.exit(f"serve did not start: {line!r} {proc.communicate()[1][-2000:]}")
    return proc, found.group(1), found.group(2)


def body(q: Question, name: str) -> dict[str, Any]:
    return {
        "model": name,
        "messages": [{"role": "user", "content": q.question}],
        "skill_trainer": {"task_type": q.task_type, "context": q.context},
    }


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Timed:
    wall_s: float
    cpu_s: float  # of the process that answers (infer: this one; serve: the server)
    overheads_ms: list[float] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)  # the serve run's summary


async def through_serve(url: str, name: str, questions: list[Question], pid: int) -> Timed:
    """The questions through CLIENTS concurrent clients (after one warm-up request each)."""
    overheads: list[float] = []
    answers: dict[str, str] = {}
    queue = list(reversed(questions))

    async def client(ready: anyio.Event, warm: list[int]) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            # warm-up, untimed: the connection, and one request off the benchmark each
            warm_up = {
                "model": name,
                "messages": [{"role": "user", "content": "warm-up"}],
                # named: a request no task type fits is refused (docs/serving.md#routing)
                "skill_trainer": {"task_type": questions[0].task_type},
            }
            (await http.post("/v1/chat/completions", json=warm_up)).raise_for_status()
            warm.append(1)
            if len(warm) == CLIENTS:
                ready.set()
            await ready.wait()
            if "start" not in timed:
                timed["start"], timed["cpu"] = time.perf_counter(), cpu_s(pid)
            while queue:
                q = queue.pop()
                sent = time.perf_counter()
                reply = await http.post("/v1/chat/completions", json=body(q, name))
                took_ms = (time.perf_counter() - sent) * 1000
                reply.raise_for_status()
                extra = reply.json()["skill_trainer"]
                overheads.append(took_ms - extra["agent_ms"])
                answers[q.question_id] = extra["answer"]

    timed: dict[str, float] = {}
    ready, warm = anyio.Event(), []
    async with anyio.create_task_group() as tg:
        for _ in range(CLIENTS):
            tg.start_soon(client, ready, warm)
    wall = time.perf_counter() - timed["start"]
    return Timed(wall, cpu_s(pid) - timed["cpu"], overheads, answers)


def parses_with_clients(url: str, name: str, q: Question, with_litellm: bool) -> tuple[int, int]:
    import openai

    reply = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    done = reply.chat.completions.create(
        model=name,
        messages=[{"role": "user", "content": q.question}],
        extra_body={"skill_trainer": {"task_type": q.task_type, "context": q.context}},
    )
    openai_ok = int("ANSWER:" in (done.choices[0].message.content or ""))
    if not with_litellm:
        return openai_ok, -1
    from app.providers.litellm_provider import load_litellm

    got = load_litellm().completion(
        model=f"openai/{name}",
        api_base=f"{url}/v1",
        api_key="none",
        messages=[{"role": "user", "content": q.question}],
        num_retries=0,
    )
    return openai_ok, int("ANSWER:" in (got.choices[0].message.content or ""))


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def one_rep(
    tmp: Path, n: int, latency_ms: float, with_litellm: bool
) -> tuple[Timed, Timed, str, tuple[int, int]]:
    """One fresh pair of workspaces: (infer, serve, serve's closing line, client parses)."""
    infer_ws, serve_ws = init(tmp / "infer"), init(tmp / "serve")
    infer = anyio.run(through_infer, infer_ws, n, latency_ms)
    proc, name, url = start_server(serve_ws, latency_ms)
    try:
        with Session(serve_ws, build_config({}, "bench")) as session:  # the same questions
            questions = list(session.benchmark.questions)[:n]
        serve = anyio.run(through_serve, url, name, questions, proc.pid)
        parses = parses_with_clients(url, name, questions[0], with_litellm)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        sys.exit(f"serve exited {proc.returncode}: {err[-2000:]}")
    with sqlite3.connect(serve_ws / "harness.db") as conn:
        (summary,) = conn.execute("SELECT summary_json FROM _runs WHERE kind = 'serve'").fetchone()
    serve.server = json.loads(summary)
    return infer, serve, out.strip().splitlines()[-1], parses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=518, help="how many (518: all)")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--reps", type=int, default=3, help="figures are the median rep's")
    parser.add_argument("--tiny", action="store_true", help="96 questions, one rep, no litellm")
    args = parser.parse_args()
    n, reps = (96, 1) if args.tiny else (args.questions, args.reps)
    logger.remove()
    runs = []
    for rep in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_rep(Path(tmp), n, args.latency_ms, not args.tiny and rep == 0))
    print(
        f"{n} questions, {CLIENTS} concurrent, simulated latency {args.latency_ms:g} ms/call, "
        f"{reps} rep(s); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for infer, serve, closing, _ in runs:
        print(
            f"  infer {infer.wall_s:.2f} s ({infer.cpu_s * 1000 / n:.2f} ms CPU/question), "
            f"serve {serve.wall_s:.2f} s (server {serve.cpu_s * 1000 / n:.2f} ms CPU/request), "
            f"ratio {infer.wall_s / serve.wall_s:.3f}"
        )
        print(
            f"    overhead at the clients: median {statistics.median(serve.overheads_ms):.1f} ms,"
            f" p95 {p95(serve.overheads_ms):.1f} ms; in the server (warm-ups included): p50 "
            f"{serve.server['overhead_ms_p50']} ms, p95 {serve.server['overhead_ms_p95']} ms"
        )
        print(f"    serve said: {closing}")
    infer, serve, _, _ = sorted(runs, key=lambda r: r[0].wall_s / r[1].wall_s)[len(runs) // 2]
    infer_rps, serve_rps = n / infer.wall_s, n / serve.wall_s
    same = min(
        sum(s.answers.get(q) == a for q, a in i.answers.items()) / len(i.answers)
        for i, s, _, _ in runs
    )
    openai_ok, litellm_ok = runs[0][3]
    print(f"RESULT serve.infer_requests_per_s {infer_rps:.1f} questions/s")
    print(
        f"RESULT serve.requests_per_s {serve_rps:.1f} questions/s "
        f"target >={TARGET_RATIO * infer_rps:.1f}"
    )
    print(f"RESULT serve.ratio {serve_rps / infer_rps:.3f} ratio target >={TARGET_RATIO}")
    print(
        f"RESULT serve.p95_overhead_ms {serve.server['overhead_ms_p95']:.2f} ms "
        f"target <={TARGET_OVERHEAD_MS:g}"
    )
    print(f"RESULT serve.client_p95_overhead_ms {p95(serve.overheads_ms):.2f} ms")
    print(f"RESULT serve.server_cpu_ms_per_request {serve.cpu_s * 1000 / n:.2f} ms")
    print(f"RESULT serve.infer_cpu_ms_per_question {infer.cpu_s * 1000 / n:.2f} ms")
    print(f"RESULT serve.answers_match_infer {same:.3f} share target ==1.000")
    print(f"RESULT serve.openai_parses {openai_ok} bool target ==1")
    if litellm_ok >= 0:
        print(f"RESULT serve.litellm_parses {litellm_ok} bool target ==1")


if __name__ == "__main__":
    main()
