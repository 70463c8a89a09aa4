"""`train --resume` after SIGKILL in the middle of an outside agent's rollouts ends in the
state an uninterrupted run reaches: the pieces of tests/app/agents/test_resume_external.py,
and `resume_identical` for bench scripts.

The run: the 24-unit sim-basic world of tests/app/agents/test_train_external.py, one epoch,
the default e-process gate (an accept, rejects and a probation, so a resume crosses real
state), every rollout the Python agent `tests.app.agents.agent_plugins:reads_skills` through
the recording gateway. Each train is a `main.py train` process, so SIGKILL
(`SKILL_TRAINER_KILL_AT`, app/harness/workspace/killpoints.py) kills the trainer, its gateway
and the agent together. The states are compared by tests/support/snapshot.py, as
tests/app/training/test_train.py compares the built-in loop's.

    from tests.app.agents.external_resume import resume_identical
    print(f"RESULT external_agents.resume_identical {resume_identical()}")
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.snapshot import _strip as strip_volatile
from tests.support.snapshot import diff_states, workspace_state

ROOT = Path(__file__).resolve().parents[3]
AGENT = "tests.app.agents.agent_plugins:reads_skills"
CONFIG = f"""
sim_units_per_type = 24  # the world of tests/app/agents/test_train_external.py small_workspace
epochs = 1
concurrency = 8
sim_harmful_share = 0.0
sim_useless_share = 0.0
evolve_prompts = false
momentum_samples = 0
holdout_each_epoch = false
eval_min_per_class = 3
trainable_min_units = 8
[agent]
kind = "python"
function = "{AGENT}"
"""
# `agent_call:n`: the gateway's n-th answered model call, before the agent reads the reply
# (app/harness/agents/gateway.py), here in step 1's rollouts, after step 0's checkpoint (of
# about 530 agent calls in the run); `gate:n`: after the n-th candidate batch of the gate,
# here in step 1's gate
KILL_POINTS = ("agent_call:340", "gate:16")
TIMEOUT_S = 600


def write_config(folder: Path) -> Path:
    path = folder / "external.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def fresh_workspace(folder: Path) -> Path:
    """An initialised workspace on the 24-unit world, not trained."""
    from tests.app.agents.test_train_external import small_workspace

    return small_workspace(folder)


def train(
    ws: Path, config: Path, *, resume: bool = False, kill_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`main.py train` in its own process (SIGKILL must not take the caller with it)."""
    env = {k: v for k, v in os.environ.items() if k != "SKILL_TRAINER_KILL_AT"}
    if kill_at is not None:
        env["SKILL_TRAINER_KILL_AT"] = kill_at
    argv = ["train", "-w", str(ws), "--config", str(config), "--no-progress"]
    return subprocess.run(
        [sys.executable, "main.py", *argv, *(["--resume"] if resume else [])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )


def reference_run(fresh: Path, folder: Path, config: Path) -> Path:
    """A copy of `fresh` trained without interruption."""
    ws = folder / "ws"
    shutil.copytree(fresh, ws)
    done = train(ws, config)
    if done.returncode != 0:
        raise RuntimeError(f"the reference train failed: {done.stderr[-2000:]}")
    return ws


def killed_and_resumed(fresh: Path, folder: Path, config: Path, kill_at: str) -> Path:
    """A copy of `fresh` trained until SIGKILL at `kill_at`, then `train --resume`d to the end."""
    ws = folder / "ws"
    shutil.copytree(fresh, ws)
    killed = train(ws, config, kill_at=kill_at)
    if killed.returncode != -9:
        why = f": {killed.stderr[-500:]}" if killed.returncode else " (the run finished)"
        raise RuntimeError(f"kill point {kill_at} was never reached{why}")
    resumed = train(ws, config, resume=True)
    if resumed.returncode != 0:
        raise RuntimeError(f"train --resume after {kill_at} failed: {resumed.stderr[-2000:]}")
    return ws


def resume_differences(reference: Path, resumed: Path) -> list[str]:
    """What differs between the two workspaces' final states (tests/support/snapshot.py:
    manifest, skills and prompts, step and epoch reports, the final test, the gate's evidence,
    every prediction, the runs; and checkpoint.json), plus what a resume must not leave
    behind: a prediction written twice, a damaged log, staged files."""
    problems = diff_states(workspace_state(reference), workspace_state(resumed))
    if checkpoint(reference) != checkpoint(resumed):
        problems.append("differs: checkpoint.json")
    conn = sqlite3.connect(resumed / "harness.db")
    try:
        dupes = conn.execute(
            "SELECT COUNT(*) FROM (SELECT run_id, question_id FROM predictions "
            "GROUP BY run_id, question_id HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    if dupes:
        problems.append(f"{dupes} prediction(s) written twice")
    if integrity != "ok":
        problems.append(f"harness.db integrity: {integrity}")
    staging = resumed / ".staging"
    if staging.exists() and any(staging.iterdir()):
        problems.append("files left in .staging")
    return problems


def checkpoint(ws: Path) -> Any:
    """checkpoint.json without its timestamps; the spend rounded to 1e-9 USD: a resumed run
    adds the same costs in another order (0.065275000000000001 or ...03)."""
    data = json.loads((ws / "checkpoint.json").read_text(encoding="utf-8"))
    data["progress"]["spent_usd"] = round(data["progress"]["spent_usd"], 9)
    return strip_volatile(data)


def resume_identical(
    kill_points: Sequence[str] = KILL_POINTS, workdir: Path | str | None = None
) -> int:
    """1 if, for every kill point, a run killed there and resumed ends in the state of an
    uninterrupted run; else 0 (what differs goes to stderr). A kill point never reached, or a
    train that fails, counts as 0. About 8 s per run on a quiet 2-core machine: one reference,
    then a killed and a resumed process per kill point. `workdir`: where the workspaces go (a
    temporary folder, removed after, when None)."""
    with tempfile.TemporaryDirectory(prefix="external-resume-") as scratch:
        base = Path(workdir) if workdir is not None else Path(scratch)
        base.mkdir(parents=True, exist_ok=True)
        config = write_config(base)
        fresh = fresh_workspace(base / "fresh")
        try:
            reference = reference_run(fresh, base / "reference", config)
            for kill_at in kill_points:
                folder = base / f"killed-{kill_at.replace(':', '-')}"
                resumed = killed_and_resumed(fresh, folder, config, kill_at)
                if problems := resume_differences(reference, resumed):
                    print(f"resume after {kill_at}: {problems}", file=sys.stderr)
                    return 0
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"resume_identical: {e}", file=sys.stderr)
            return 0
    return 1
