"""Train the skills of outside agents (docs/agents.md), and move skills between agents.

A benchmark, not a test: it prints figures. On a sim-basic world of --units units per task
type (216 by default) and the default training config, it trains each agent from the same
starter skills, offline, every model call through the recording gateway in front of the
simulated model:

- `builtin`: the trainer's own loop (app/harness/rollouts/inference.py), for reference;
- `command-script`: examples/agents/command-script/agent.py, a process per rollout;
- `openai-agents-sdk`, `langgraph`: examples/agents/<name>/agent.py in this process, when
  their packages are installed (the `agents` extra; `# skipped` otherwise).

For each outside agent A it prints `external_agents.A.baseline_test` and `.final_test` (the
held-out test's accuracy before and after training; `.gain`, final - baseline, target >= 0.3),
`.calls_lost` (model calls the agent got an answer to, counted on the agent's side, minus the
`llm_calls` rows of role `agent` the run logged; target 0) and `.transfer_test` (the built-in
loop's best skills evaluated under A, on the same held-out questions). Then
`external_agents.gateway_overhead_p95_ms` (bench/agents_gateway.py's measurement: the p95 of
a call through the gateway minus the p95 of a direct provider call, same process; target
<= 5) and `external_agents.resume_identical` (1 when `train --resume` after SIGKILL inside an
outside agent's rollout, and at a gate point, ends in the uninterrupted run's state:
tests/app/agents/external_resume.py, a Python agent on a 24-unit world).

    .venv/bin/python bench/external_agents.py [--units 216] [--seed 7] [--agents a,b] [--tiny]

`--tiny` (the suite's bench test): 12 units, one task type, one step, builtin and
command-script only, no resume (tests/app/agents/test_resume_external.py runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere
sys.path.insert(1, str(BENCH))

import agents_gateway  # noqa: E402

from app import api  # noqa: E402
from app.providers.sim.generate import write_benchmark  # noqa: E402
from app.providers.sim.world import build_world  # noqa: E402
from tests.app.agents.external_resume import resume_identical  # noqa: E402
from tests.app.agents.test_train_external import SMALL, rows  # noqa: E402

EXAMPLES = ROOT / "examples" / "agents"
GAIN_TARGET = 0.3
OVERHEAD_TARGET_MS = 5.0
FINAL_TEST_RUN = "train1-final-test"
# --tiny: the small one-epoch config of the agents tests (accept_all, a helpful evolver), on
# one task type for one step, at 12 units
TINY: dict[str, Any] = {**SMALL, "max_steps": 1, "task_types": ["dates"], "sim_units_per_type": 12}


@dataclass(frozen=True)
class AgentUnderTest:
    name: str
    overrides: Callable[[Path], dict[str, Any]]  # the [agent] keys, given a folder for counts
    needs: tuple[str, ...] = ()  # importable packages it needs
    counted_in_process: bool = False  # its calls are counted by the httpx hook below

    def missing(self) -> list[str]:
        return [name for name in self.needs if find_spec(name) is None]


def command_script(counts: Path) -> dict[str, Any]:
    agent = EXAMPLES / "command-script" / "agent.py"
    argv = [sys.executable, str(BENCH / "_count_calls.py"), str(counts / "calls"), str(agent)]
    return {"agent_kind": "command", "agent_command": argv}


def python_example(name: str) -> Callable[[Path], dict[str, Any]]:
    def overrides(counts: Path) -> dict[str, Any]:
        return {"agent_kind": "python", "agent_function": f"{EXAMPLES / name / 'agent.py'}:run"}

    return overrides


AGENTS = (
    AgentUnderTest("builtin", lambda counts: {}),
    AgentUnderTest("command-script", command_script),
    AgentUnderTest(
        "openai-agents-sdk",
        python_example("openai-agents-sdk"),
        ("agents",),
        counted_in_process=True,
    ),
    AgentUnderTest(
        "langgraph",
        python_example("langgraph"),
        ("langgraph", "langchain_openai"),
        counted_in_process=True,
    ),
)


# ------------------------------------------------------------------ counting the agent's calls


class InProcessCalls:
    """Counts the chat completions answered (status 200) to any HTTP client of this process:
    httpx's, and httpx2's (the openai SDK's transport since its 3.x releases, under both
    Python examples' frameworks)."""

    def __init__(self) -> None:
        self.answered = 0

    def count(self, response: Any) -> None:
        if response.status_code == 200 and str(response.request.url.path).endswith(
            "/chat/completions"
        ):
            self.answered += 1

    @contextlib.contextmanager
    def hooked(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for name in ("httpx", "httpx2"):
                if find_spec(name) is not None:
                    stack.enter_context(self._hook(importlib.import_module(name)))
            yield

    @contextlib.contextmanager
    def _hook(self, module: Any) -> Iterator[None]:
        sync_send, async_send = module.Client.send, module.AsyncClient.send

        def send(client: Any, request: Any, **kw: Any) -> Any:
            response = sync_send(client, request, **kw)
            self.count(response)
            return response

        async def asend(client: Any, request: Any, **kw: Any) -> Any:
            response = await async_send(client, request, **kw)
            self.count(response)
            return response

        module.Client.send, module.AsyncClient.send = send, asend
        try:
            yield
        finally:
            module.Client.send, module.AsyncClient.send = sync_send, async_send


def logged_agent_calls(ws: Path) -> int:
    return int(rows(ws, "SELECT COUNT(*) FROM llm_calls WHERE role = 'agent'")[0][0])


def held_out_accuracy(ws: Path, run_id: str) -> float:
    """`run_id`'s accuracy on the questions of the workspace's held-out test run."""
    held_out = {
        qid
        for (qid,) in rows(
            ws, "SELECT question_id FROM predictions WHERE run_id = ?", FINAL_TEST_RUN
        )
    }
    scored = [
        int(correct)
        for qid, correct in rows(
            ws, "SELECT question_id, correct FROM predictions WHERE run_id = ?", run_id
        )
        if qid in held_out
    ]
    return sum(scored) / len(scored) if scored else float("nan")


# ------------------------------------------------------------------ training


@dataclass(frozen=True)
class Trained:
    workspace: Path
    baseline_test: float
    final_test: float
    best_version: str
    calls_lost: int | None
    seconds: float


def new_workspace(root: Path, units: int, seed: int) -> Path:
    store = root / "store"
    write_benchmark(
        build_world("basic", seed, units), store / "questions" / "sim-basic", "sim-basic"
    )
    ws = root / "ws"
    api.init_workspace(ws, seed="sim-starter", questions="sim-basic", store=store)
    return ws


def train(agent: AgentUnderTest, root: Path, settings: Mapping[str, Any], seed: int) -> Trained:
    units = int(settings["sim_units_per_type"])
    ws = new_workspace(root, units, seed)
    counts = root / "counts"
    counts.mkdir()
    overrides = {**settings, **agent.overrides(counts)}
    in_process = InProcessCalls()
    started = time.perf_counter()
    with in_process.hooked() if agent.counted_in_process else contextlib.nullcontext():
        result = api.train(ws, overrides=overrides)
    seconds = time.perf_counter() - started
    if result.status != "done":
        raise SystemExit(f"{agent.name}: training ended {result.status}: {result.reason}")
    lost: int | None = None
    if agent.name != "builtin":
        count_file = counts / "calls"
        answered = (
            in_process.answered
            if agent.counted_in_process
            else (count_file.stat().st_size if count_file.exists() else 0)
        )
        lost = answered - logged_agent_calls(ws)
    return Trained(
        ws,
        result.baseline_test_accuracy,
        result.test_accuracy,
        result.best_skills_version,
        lost,
        seconds,
    )


def transfer(
    builtin: Trained, agent: AgentUnderTest, root: Path, settings: Mapping[str, Any]
) -> float:
    """The built-in loop's best skills under `agent`, on the built-in run's held-out test."""
    counts = root / f"transfer-{agent.name}"
    counts.mkdir()
    overrides = {**settings, **agent.overrides(counts)}
    result = api.evaluate(builtin.workspace, builtin.best_version, overrides=overrides)
    return held_out_accuracy(builtin.workspace, result.run_id)


def gateway_overhead_p95_ms(calls: int) -> float:
    times = anyio.run(agents_gateway.measure, calls)
    return agents_gateway.pct(times["http"], 95) - agents_gateway.pct(times["direct"], 95)


# ------------------------------------------------------------------ main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=216)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--agents", default=",".join(a.name for a in AGENTS))
    parser.add_argument("--tiny", action="store_true", help="12 units, one step: for the suite")
    args = parser.parse_args()
    names = ["builtin", "command-script"] if args.tiny else args.agents.split(",")
    unknown = sorted(set(names) - {a.name for a in AGENTS})
    if unknown:
        parser.error(f"--agents: no agent {unknown} (have {[a.name for a in AGENTS]})")
    settings: dict[str, Any] = dict(TINY) if args.tiny else {"sim_units_per_type": args.units}
    chosen = [a for a in AGENTS if a.name in names or a.name == "builtin"]
    print(f"# sim-basic, {settings['sim_units_per_type']} units per task type, seed {args.seed}")
    trained: dict[str, Trained] = {}
    with tempfile.TemporaryDirectory(prefix="bench-external-") as tmp:
        for agent in chosen:
            if missing := agent.missing():
                print(f"# skipped {agent.name}: not installed: {', '.join(missing)}")
                continue
            root = Path(tmp) / agent.name
            root.mkdir()
            run = train(agent, root, settings, args.seed)
            trained[agent.name] = run
            print(
                f"# {agent.name}: test {run.baseline_test:.3f} -> {run.final_test:.3f} "
                f"(best {run.best_version}), {run.seconds:.0f} s"
            )
            if agent.name == "builtin":
                continue
            prefix = f"RESULT external_agents.{agent.name}"
            gain = run.final_test - run.baseline_test
            print(f"{prefix}.baseline_test {run.baseline_test:.3f} accuracy")
            print(f"{prefix}.final_test {run.final_test:.3f} accuracy")
            print(f"{prefix}.gain {gain:+.3f} accuracy target >= {GAIN_TARGET:g}")
            print(f"{prefix}.calls_lost {run.calls_lost} calls target == 0")
        builtin = trained["builtin"]
        for agent in chosen:
            if agent.name == "builtin" or agent.name not in trained:
                continue
            score = transfer(builtin, agent, Path(tmp), settings)
            print(
                f"# {agent.name}: the built-in loop's {builtin.best_version} (its own test "
                f"{builtin.final_test:.3f}) under this agent"
            )
            print(f"RESULT external_agents.{agent.name}.transfer_test {score:.3f} accuracy")
    overhead = gateway_overhead_p95_ms(20 if args.tiny else 400)
    print(
        f"RESULT external_agents.gateway_overhead_p95_ms {overhead:.2f} ms "
        f"target <= {OVERHEAD_TARGET_MS:g}"
    )
    if args.tiny:
        print("# resume_identical: not in --tiny (tests/app/agents/test_resume_external.py)")
    else:
        print(f"RESULT external_agents.resume_identical {resume_identical()} bool target == 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
