"""What runs inside a sandboxed child (app/harness/tools/sandbox.py); standard library only.

    python -I child.py LIMITS_JSON exec ARGV...     apply limits, then exec ARGV
    python -I child.py LIMITS_JSON call MOD:FUNC    apply limits, call FUNC(**json stdin)
    python -I child.py LIMITS_JSON schema MOD:FUNC  apply limits, print FUNC's JSON schema

Limits are applied here, in the child, rather than through Popen's `preexec_fn`, which is
unsafe in a process with threads. The parent's `sys.path` entries for the tool's modules
arrive in LIMITS_JSON["path"] (`-I` ignores PYTHONPATH and the current folder).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import resource
import sys
from typing import Any

RESULT_MARK = "\x1e"  # the line holding the JSON result starts with it; print() output is kept

_LIMITS = {
    "cpu_s": resource.RLIMIT_CPU,
    "memory_bytes": resource.RLIMIT_AS,
    "file_bytes": resource.RLIMIT_FSIZE,
    "processes": resource.RLIMIT_NPROC,
}
_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}
_TYPES_BY_NAME = {t.__name__: name for t, name in _TYPES.items()} | {"dict": "object"}


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL when the harness process dies (even by SIGKILL), so a killed run does
    not leave this child behind. Its own children are not covered (they stay in the group)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):  # not Linux: nothing to do
        return
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)


def apply_limits(limits: dict[str, Any]) -> None:
    for key, which in _LIMITS.items():
        value = limits.get(key)
        if value:
            # CPU: SIGXCPU at the soft limit says why; SIGKILL a second later if it is caught
            hard = int(value) + 1 if which == resource.RLIMIT_CPU else int(value)
            resource.setrlimit(which, (int(value), hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core files in the tool's folder


def load(target: str) -> Any:
    module_name, _, func_name = target.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    if not callable(func):
        raise TypeError(f"{target} is not callable")
    return func


def _json_type(annotation: Any) -> str | None:
    if isinstance(annotation, str):  # `from __future__ import annotations`
        return _TYPES_BY_NAME.get(annotation.split("[")[0].strip())
    origin = getattr(annotation, "__origin__", annotation)
    return "object" if origin is dict else _TYPES.get(origin)


def _param_docs(doc: str) -> dict[str, str]:
    """`name: text` or `:param name: text` lines of a docstring."""
    found: dict[str, str] = {}
    for raw in doc.splitlines():
        line = raw.strip().removeprefix(":param ")
        name, sep, text = line.partition(":")
        name = name.split(" (")[0].strip()
        if sep and name.isidentifier() and text.strip():
            found[name] = text.strip()
    return found


def schema(func: Any) -> dict[str, Any]:
    """Description and JSON schema from the signature and docstring."""
    doc = inspect.getdoc(func) or ""
    param_docs = _param_docs(doc)
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"*args/**kwargs parameter {name!r} has no schema")
        prop: dict[str, Any] = {}
        kind = _json_type(param.annotation) if param.annotation is not param.empty else None
        if kind:
            prop["type"] = kind
        if name in param_docs:
            prop["description"] = param_docs[name]
        props[name] = prop
        if param.default is param.empty:
            required.append(name)
    return {
        "description": doc.split("\n\n")[0].strip(),
        "parameters": {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        },
    }


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(payload, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    limits = json.loads(argv[1])
    mode = argv[2]
    if limits.get("parent"):
        die_with_parent(int(limits["parent"]))
    apply_limits(limits)
    if mode == "exec":
        try:
            os.execvp(argv[3], argv[3:])
        except OSError as e:
            sys.stderr.write(f"cannot run {argv[3]!r}: {e.strerror}\n")
            return 127
    sys.path[:0] = list(limits.get("path", []))
    try:
        func = load(argv[3])
        if mode == "schema":
            _emit({"ok": True, "value": schema(func)})
            return 0
        args = json.loads(sys.stdin.read() or "{}")
        if not isinstance(args, dict):
            raise TypeError("arguments must be a JSON object")
        _emit({"ok": True, "value": func(**args)})
    except Exception as e:  # the tool's own failure: reported, not raised
        _emit({"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
