"""Every function of `app/` and `core/` is annotated: each parameter and the return.

`make typecheck` enforces this through pyproject.toml's `disallow_untyped_defs` and
`disallow_incomplete_defs`; this test keeps `make test-fast` (which runs no type checker) from
letting an unannotated function in, and names it. The rule is mypy's: `self`/`cls` need no
annotation, and `__init__` needs no return annotation once one parameter has one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

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


def unannotated() -> list[str]:
    found = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for fn, method in _functions(tree):
                if missing := _missing(fn, method):
                    where = f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}"
                    found.append(f"{where}: {', '.join(missing)}")
    return found


def test_every_function_of_app_and_core_is_annotated() -> None:
    assert unannotated() == []


def test_the_check_finds_an_unannotated_parameter_and_return(tmp_path: Path) -> None:
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
    found = {fn.name: _missing(fn, method) for fn, method in _functions(ast.parse(source))}
    assert found == {
        "m": ["y"],
        "__init__": [],
        "s": ["return"],
        "f": ["p", "kw"],
        "inner": ["return"],
    }
