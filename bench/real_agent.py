"""An outside agent on a real model: examples/agents/command-script/agent.py, a process per
question, answers through the recording gateway, which forwards to the local
Qwen2.5-Coder-1.5B-Instruct server of bench/real_learning.py.

    .venv/bin/python bench/real_agent.py            # after `make real-model` built .venv-real
    .venv/bin/python bench/real_agent.py --tiny     # the same pipeline on sim/oracle, seconds
    .venv/bin/python bench/real_agent.py --train    # then bench/real_learning.py's training

1. reuses `.venv-real/` and the model file bench/real_learning.py assembles and checks;
2. serves it on 127.0.0.1 (bench/llama_server.py) as the agent model (bench/real_learning.toml:
   its token bound, timeout and concurrency 1);
3. `init` (seed real-conventions-starter) and `infer --task-types TYPE` with `[agent] kind =
   "command"` running the example agent under bench/_count_calls.py, which counts on the
   agent's side every completion it got an answer to;
4. prints RESULT lines (and writes them to bench/out/real_agent/results.txt): questions
   answered with an `ANSWER:` line, accuracy (the starter skills state no convention, so it is
   near 0: this run checks the path, not learning), model calls the agent got against the
   calls the log holds (`calls_lost`, target 0), the model latency per call and the gateway's
   share of a rollout, wall time.

Not in CI and not in `make bench` (bench/run_all.py NOT_IN_RUN_ALL).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

OUT = ROOT / "bench" / "out" / "real_agent"
AGENT = ROOT / "examples" / "agents" / "command-script" / "agent.py"
COUNTER = BENCH / "_count_calls.py"
CONFIG = BENCH / "real_learning.toml"
SEED, QUESTIONS = "real-conventions-starter", "real-conventions"


def harness(*args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=ROOT, check=True)


def agent_config(base: str, counts: Path) -> str:
    argv = [sys.executable, str(COUNTER), str(counts), str(AGENT)]
    command = ", ".join(f'"{a}"' for a in argv)
    # before `base`: its `[gate]` table would take any key written after it
    return f'agent_kind = "command"\nagent_command = [{command}]\nagent_timeout_s = 600.0\n{base}'


def run(root: Path, base_config: str, task_type: str, extra: list[str]) -> list[str]:
    ws, counts = root / "ws", root / "calls"
    config = root / "agent.toml"
    config.write_text(agent_config(base_config, counts))
    harness("init", "-w", str(ws), "--seed", SEED, "--questions", QUESTIONS)
    started = time.monotonic()
    harness("infer", "-w", str(ws), "--config", str(config), "--task-types", task_type,
            "--no-progress", *extra)  # fmt: skip
    wall = time.monotonic() - started
    return figures(ws, counts, wall, task_type)


def figures(ws: Path, counts: Path, wall: float, task_type: str) -> list[str]:
    db = sqlite3.connect(ws / "harness.db")
    try:
        rows = db.execute("SELECT stop_reason, correct FROM predictions").fetchall()
        calls = db.execute(
            "SELECT latency_s FROM llm_calls WHERE role = 'agent' AND status = 'ok'"
        ).fetchall()
        logged = db.execute("SELECT COUNT(*) FROM llm_calls WHERE role = 'agent'").fetchone()[0]
    finally:
        db.close()
    answered = sum(1 for stop, _ in rows if stop == "final")
    correct = sum(int(c or 0) for _, c in rows)
    got = counts.stat().st_size if counts.exists() else 0
    latencies = sorted(float(s) for (s,) in calls) or [0.0]
    p = "RESULT real_agent"
    return [
        f"# task type {task_type}",
        f"{p}.questions {len(rows)} questions",
        f"{p}.answered {answered} questions",
        f"{p}.accuracy {correct / max(1, len(rows)):.3f} accuracy",
        f"{p}.agent_calls {got} calls",
        f"{p}.calls_lost {got - logged} calls target == 0",
        f"{p}.model_latency_p50_s {statistics.median(latencies):.3f} s",
        f"{p}.wall_s {wall:.1f} s",
    ]


def train(root: Path, base_config: str) -> list[str]:
    """bench/real_learning.py's default-gate training, with this agent in every rollout."""
    import real_learning

    config = root / "train.toml"
    config.write_text(agent_config(base_config, root / "train-calls"))
    workspace = root / "train-ws"
    outcome = real_learning.train_one(workspace, config, real_learning.STRATEGIES[0], [])
    return real_learning.result_lines(real_learning.figures(workspace, outcome, "real_agent.train"))


def tiny() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-real-agent-tiny-") as tmp:
        base = CONFIG.read_text().replace("openai/qwen-coder-1.5b", "sim/oracle")
        lines = run(Path(tmp), base, "dates", [])
    print("# --tiny: the agent model is sim/oracle, no server: these figures check the path")
    print("\n".join(lines))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="the pipeline on sim/oracle")
    parser.add_argument("--task-type", default="dates", help="the task type answered")
    parser.add_argument("--train", action="store_true", help="then train with this agent")
    args = parser.parse_args()
    if args.tiny:
        return tiny()
    import real_learning
    import real_model

    python = real_model.ensure_llama_cpp()
    model = real_learning.ensure_model(python)
    OUT.mkdir(parents=True, exist_ok=True)
    real_model.OUT = OUT
    real_model.ALIAS = real_learning.ALIAS
    port = real_model.free_port()
    with (
        real_model.serving(python, model, port),  # stopped on SIGTERM/SIGHUP too
        tempfile.TemporaryDirectory(prefix="bench-real-agent-") as tmp,
    ):
        api_base = f'api_base = "http://{real_model.HOST}:{port}/v1"'
        base = f"{api_base}\n{CONFIG.read_text()}"
        lines = run(Path(tmp), base, args.task_type, [])
        print("\n".join(lines), flush=True)
        if args.train:
            lines += train(Path(tmp), base)
    (OUT / "results.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
