"""Every function of `app/` and `core/` is annotated: each parameter and the return.

`make typecheck` enforces this through pyproject.toml's `disallow_untyped_defs` and
`disallow_incomplete_defs`; this test keeps `make test-fast` (which runs no type checker) from
letting an unannotated function in, and names it. The rule is mypy's: `self`/`cls` need no
annotation, and `__init__` needs no return annotation once one parameter has one.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "core")
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST) -> Iterator[tuple[Function, bool]]:
    """Each function, at any depth, with whether it is a method (takes self or cls first)."""
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, Function):
                static = any(
                    isinstance(d, ast.Name) and d.id == "staticmethod" for d in child.decorator_list
                )
                yield child, isinstance(parent, ast.ClassDef) and not static


def _missing(fn: Function, method: bool) -> list[str]:
    a = fn.args
    params = [*a.posonlyargs, *a.args][1 if method else 0 :] + a.kwonlyargs
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    missing = [p.arg for p in params if p.annotation is None]
    init_ok = fn.name == "__init__" and len(missing) < len(params)
    if fn.returns is None and not init_ok:
        missing.append("return")
    return missing


def unannotated_here() -> list[str]:
    found = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for fn, method in _functions(tree):
                if missing := _missing(fn, method):
                    where = f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}"
                    found.append(f"{where}: {', '.join(missing)}")
    return found


def missing_by_function_here(source: str) -> dict[str, list[str]]:
    return {fn.name: _missing(fn, method) for fn, method in _functions(ast.parse(source))}


def in_fresh_interpreter(call: str) -> Any:
    """`call` (of this module) evaluated in a new Python process, its result through JSON.
    Parsing happens there, as in tests/test_layering.py `import_graph`: in a CPython 3.11
    process where earlier code broke the parser's recursion bookkeeping, `ast.parse` can raise
    "SystemError: AST constructor recursion depth mismatch", so what earlier tests of the
    suite did must not decide these."""
    script = f"import json; from tests.test_annotations import *; print(json.dumps({call}))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout)


def test_every_function_of_app_and_core_is_annotated() -> None:
    assert in_fresh_interpreter("unannotated_here()") == []


def test_the_check_finds_an_unannotated_parameter_and_return(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> ast.Module:
        raise SystemError("AST constructor recursion depth mismatch (before=0, after=1)")

    monkeypatch.setattr(ast, "parse", broken)  # as it may be in the suite's process
    source = (
        "class C:\n"
        "    def m(self, x: int, y) -> None: ...\n"
        "    def __init__(self, a: int): ...\n"
        "    @staticmethod\n"
        "    def s(z: int): ...\n"
        "def f(p, *args: int, **kw) -> int:\n"
        "    def inner(q: int): ...\n"
        "    return 0\n"
    )
    assert in_fresh_interpreter(f"missing_by_function_here({source!r})") == {
        "m": ["y"],
        "__init__": [],
        "s": ["return"],
        "f": ["p", "kw"],
        "inner": ["return"],
    }
