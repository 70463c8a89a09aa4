"""A benchmark checked before anything trains on it: `validate_benchmark` (can it tell right from
wrong; docs/benchmarks.md), the warnings `init` prints from it, and `check_tools` (a benchmark's
declared tools started once; docs/tools.md)."""

from __future__ import annotations

from pathlib import Path

from loguru import logger

from app import paths
from app.api._common import _run_sync
from app.api.store import _store, find_benchmark, find_seed
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.errors import UserError
from app.harness.rollouts.benchmark_validation import ValidationReport
from app.harness.tools.check import ToolsCheck
from app.harness.workspace.store import Seed, load_seed

BenchmarkValidation = ValidationReport  # the API's name for the validation report


def validate_benchmark(
    name: str, *, store: str | Path | None = None, seed: str | None = None
) -> BenchmarkValidation:
    """Check that a store benchmark can tell right from wrong (docs/benchmarks.md), and run
    every check `train` runs before its first model call (with default settings; the skill
    files only with `seed`): format errors raise UserError (file:line: field); defects come
    back as findings in file and line order, each with its severity. Writes nothing."""
    from app.harness.rollouts.benchmark_validation import validate_benchmark_dir

    _expect("name", name, isinstance(name, str), "a benchmark's name")
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    _expect("seed", seed, seed is None or isinstance(seed, str), "a seed's name or None")
    store_dir = _store(store)
    bench = find_benchmark(store_dir, name)
    if seed is None:
        return validate_benchmark_dir(bench)
    skills = load_seed(find_seed(store_dir, seed)).skills
    return validate_benchmark_dir(bench, skills=skills, skills_source=f"seed {seed}")


def _warn_of_benchmark_defects(bench: Path, seed: Seed) -> None:
    """`init` prints the validate-benchmark findings as warnings (errors, too-small pools and
    untrainable task types one by one, the rest counted) and never refuses on them."""
    from app.harness.rollouts.benchmark_validation import init_lines, validate_benchmark_dir

    try:
        report = validate_benchmark_dir(
            bench, skills=seed.skills, skills_source=f"seed {seed.name}"
        )
    except UserError as e:  # the workspace exists: a file changed since must not fail init
        logger.warning("benchmark not validated: {}", e)
        return
    if report.findings:
        for line in init_lines(report):
            logger.warning("{}", line)


async def check_tools_async(questions: str | Path) -> ToolsCheck:
    """Start a benchmark folder's declared tools once and validate its fixtures' oracles
    (docs/tools.md). Calls no model; writes only a temporary folder it removes."""
    from app.harness.tools.check import check_tools

    _expect("questions", questions, _is_path(questions), "a benchmark folder's path")
    folder = paths.absolute(questions)
    if not (folder / "benchmark.toml").is_file():
        raise UserError(f"{folder}: no benchmark.toml there")
    return await check_tools(folder)


def check_tools(questions: str | Path) -> ToolsCheck:
    return _run_sync(check_tools_async, questions)
