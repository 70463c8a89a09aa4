"""check-tools: start a benchmark's declared tools once and validate its fixtures.

Every tool entry is started as a run would (schemas read, MCP servers started and listed) and
stopped again; every fixture's oracle must reject the untouched initial state and accept the
reference solution where one is given (app/harness/tools/fixtures.py `validate`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.errors import UserError
from app.harness.tools import fixtures
from app.harness.tools.runtime import ToolRuntime
from app.harness.workspace.store import load_benchmark


@dataclass(frozen=True)
class ToolsCheck:
    benchmark: str
    offered: dict[str, tuple[str, ...]]  # declared entry -> the agent tools it offers
    unavailable: dict[str, str]  # declared entry -> why it is not offered
    fixtures: dict[str, str]  # fixture name -> content hash
    problems: tuple[str, ...]  # fixture oracle problems and unavailable tools

    @property
    def ok(self) -> bool:
        return not self.problems


async def check_tools(questions_dir: Path) -> ToolsCheck:
    benchmark = load_benchmark(questions_dir)
    with tempfile.TemporaryDirectory(prefix="skill-trainer-check-tools-") as scratch:
        runtime = ToolRuntime.for_benchmark(
            benchmark.tool_tables, benchmark.questions, questions_dir, Path(scratch)
        )
        if runtime is None:
            raise UserError(f"{questions_dir / 'benchmark.toml'}: declares no tools or fixtures")
        try:
            await runtime.ready()
            problems = [f"tools.{name}: {why}" for name, why in runtime.unavailable.items()]
            hashes = {}
            for name, fixture in runtime.tables.fixtures.items():
                hashes[name] = fixtures.content_hash(questions_dir / fixture.dir)
                problems += await fixtures.validate(name, fixture, questions_dir, runtime.pool)
            offered = {
                decl.name: tuple(s.name for s in runtime.offered(decl.name))
                for decl in runtime.tables.tools
            }
        finally:
            runtime.close()
    return ToolsCheck(benchmark.name, offered, dict(runtime.unavailable), hashes, tuple(problems))
