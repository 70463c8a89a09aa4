"""`[[tools]]`, `[faults]` and `[fixtures.<name>]` of benchmark.toml, and a question's `tools`
and `fixture` fields (docs/tools.md#declaring-tools).

Parsed with pydantic into frozen models; a bad entry is one `UserError` naming the file and
the key (`benchmark.toml: tools[1].target: ...`).
"""

from __future__ import annotations

import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.errors import UserError
from core.types import Question

NAME = r"^[A-Za-z0-9_-]{1,64}$"  # what the OpenAI function-name field allows
TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")
BUILT_IN = frozenset({"read_skill", "read_context"})
_FROZEN = ConfigDict(extra="forbid", frozen=True, strict=True)


class FaultKind(StrEnum):
    ERROR = "error"  # the call fails as with a non-zero exit
    TRUNCATED = "truncated"  # half of the output
    MALFORMED_JSON = "malformed_json"  # output that does not parse
    EMPTY = "empty"
    TIMEOUT = "timeout"


class PythonTool(BaseModel):
    model_config = _FROZEN
    name: str = Field(pattern=NAME)
    kind: Literal["python"]
    target: str  # module:function
    path: str = "tools"  # folder of the benchmark the module is imported from
    description: str | None = None  # else the docstring's first paragraph
    parameters: dict[str, Any] | None = None  # JSON schema; else from the signature
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    default: bool = False  # offered to questions that declare no `tools`

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        if not TARGET.fullmatch(value):
            raise ValueError("must be module:function (dotted module, identifier)")
        return value


class McpTool(BaseModel):
    """One stdio MCP server; each of its tools (or the `tools` subset) becomes an agent tool."""

    model_config = _FROZEN
    name: str = Field(pattern=NAME)
    kind: Literal["mcp"]
    command: list[str] = Field(min_length=1)
    tools: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    start_timeout_s: float = Field(default=30.0, gt=0, le=600)
    default: bool = False


class ReplayTool(BaseModel):
    """A tool answered from recorded observations (app/harness/tools/replay.py)."""

    model_config = _FROZEN
    name: str = Field(pattern=NAME)
    kind: Literal["replay"]
    recordings: str = "replay.jsonl"  # a JSON Lines file of the benchmark folder
    description: str | None = None
    parameters: dict[str, Any] | None = None  # JSON schema; default: any object
    timeout_s: float = Field(default=10.0, gt=0, le=600)  # what a `timeout` fault reports
    default: bool = False


ToolDecl = Annotated[PythonTool | McpTool | ReplayTool, Field(discriminator="kind")]


class Faults(BaseModel):
    model_config = _FROZEN
    tool_rate: float = Field(default=0.0, ge=0, le=1)
    kinds: list[FaultKind] = Field(default_factory=lambda: list(FaultKind), min_length=1)
    seed: int = 0

    @field_validator("kinds", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        known = {k.value: k for k in FaultKind}
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            unknown = [v for v in value if v not in known]
            if unknown:
                raise ValueError(f"unknown fault kind {unknown[0]!r} (known: {sorted(known)})")
            return [known[v] for v in value]
        return value


class Fixture(BaseModel):
    """An initial folder, the files nobody may change, and how the final state is judged."""

    model_config = _FROZEN
    dir: str
    sealed: list[str] = Field(default_factory=list)  # glob patterns relative to the folder
    oracle: list[str] | None = None  # a command run in the final folder: exit 0 passes
    oracle_function: str | None = None  # module:function(workdir) -> bool, from `path`
    path: str = "tools"
    reference: str | None = None  # a solved folder the oracle must accept
    timeout_s: float = Field(default=30.0, gt=0, le=600)

    @field_validator("oracle_function")
    @classmethod
    def _function(cls, value: str | None) -> str | None:
        if value is not None and not TARGET.fullmatch(value):
            raise ValueError("must be module:function")
        return value


class ToolTables(BaseModel):
    model_config = _FROZEN
    tools: list[ToolDecl] = Field(default_factory=list)
    faults: Faults = Faults()
    fixtures: dict[str, Fixture] = Field(default_factory=dict)


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in (
            "python",
            "mcp",
            "replay",
        ):  # the union's branch names say nothing to a user
            out += f".{part}" if out else str(part)
    return out


def parse_tables(meta: dict[str, Any], root: Path) -> ToolTables:
    """The tool tables of a benchmark folder `root`, checked against its files and questions."""
    where = root / "benchmark.toml"
    raw = {k: meta[k] for k in ("tools", "faults", "fixtures") if k in meta}
    try:
        tables = ToolTables.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"{where}: {_key(err['loc'])}: {err['msg']}") from None
    names = [t.name for t in tables.tools]
    dupes = sorted({n for n in names if names.count(n) > 1} | (set(names) & BUILT_IN))
    if dupes:
        raise UserError(f"{where}: tools: name {dupes[0]!r} is declared twice or is built in")
    for tool in tables.tools:
        if isinstance(tool, ReplayTool) and not inside(root, tool.recordings).is_file():
            raise UserError(f"{where}: tools.{tool.name}.recordings: no file {tool.recordings!r}")
    for name, fixture in tables.fixtures.items():
        for key in ("dir", "reference"):
            value = getattr(fixture, key)
            if value is not None and not inside(root, value).is_dir():
                raise UserError(f"{where}: fixtures.{name}.{key}: no folder {value!r} there")
        if not fixture.oracle and not fixture.oracle_function:
            raise UserError(f"{where}: fixtures.{name}: needs `oracle` or `oracle_function`")
    return tables


def with_python(argv: list[str]) -> list[str]:
    """A command whose program is `python` runs on skill-trainer's own interpreter (its
    environment has the `mcp` package), whatever PATH says."""
    return [sys.executable, *argv[1:]] if argv and argv[0] == "python" else list(argv)


def inside(root: Path, relative: str) -> Path:
    """`root/relative`, refused when it leaves `root` (an absolute path or `..`)."""
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise UserError(f"{root / 'benchmark.toml'}: {relative!r} leaves the benchmark folder")
    return path


def check_questions(tables: ToolTables, questions: tuple[Question, ...], where: Path) -> None:
    """Every tool and fixture a question names is declared."""
    declared = {t.name for t in tables.tools}
    for q in questions:
        for name in q.tools or ():
            if name not in declared:
                raise UserError(f"{where}: question {q.question_id}: unknown tool {name!r}")
        if q.fixture and q.fixture not in tables.fixtures:
            raise UserError(f"{where}: question {q.question_id}: unknown fixture {q.fixture!r}")


def declared_for(tables: ToolTables, question: Question) -> list[ToolDecl]:
    """Least privilege: the question's own list, else the tools marked `default`."""
    if question.tools is not None:
        wanted = set(question.tools)
        return [t for t in tables.tools if t.name in wanted]
    return [t for t in tables.tools if t.default]
