"""The checkers of the imported public benchmarks (`bench.public.checks:NAME` in a row).

Custom checkers in the sense of docs/checkers.md: `NAME(question, prediction)` returns a dict
with `score` and `reason`, and runs in the harness's checker worker, imported from the folder
the command runs in (the repository root). Neither imports the benchmark's package.

- `bfcl_ast`: BFCL's AST check of the Python categories, written here after the rules of
  `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (bfcl-eval, Apache-2.0): the reply is a
  Python list of calls `[f(a=1), g.h(b="x")]`, parsed with `ast` (never evaluated), and each
  call is matched to BFCL's possible answers (string values compared without case, spaces and
  `,./-_*^`; an int accepted for a float; a parameter whose answers hold "" may be left out;
  parallel calls in any order). Irrelevance questions are right when the reply holds no call.
- `humaneval_tests`: the problem's unit tests (`check(entry_point)`) run against the reply's
  code in a child of the project's tool sandbox (app/harness/tools/sandbox.py: CPU, memory
  and file-size limits, a wall-clock bound, its own process group killed at the end, an
  allow-listed environment, a private folder), never in the checker's process.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

MAX_REPLY_CHARS = 20_000  # a longer reply is not parsed (no call list is that long)

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}


# --------------------------------------------------------------------------- BFCL


class NotCalls(ValueError):
    """The reply is not a list of function calls."""


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise NotCalls("a call's function is not a (dotted) name")


def _value(node: ast.expr) -> Any:
    """A keyword's value: a literal (ast.literal_eval: no code runs), or a bare name taken as
    its text, as BFCL's decoder does."""
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise NotCalls(f"a value that is not a literal ({type(e).__name__})") from None


def parse_calls(reply: str) -> list[tuple[str, dict[str, Any]]]:
    """`[f(a=1), g(b=2)]` (or one call without brackets, or in a code fence) as
    [(name, {param: value})]; NotCalls when it is anything else."""
    text = reply.strip()
    if len(text) > MAX_REPLY_CHARS:
        raise NotCalls(f"over {MAX_REPLY_CHARS} characters")
    fence = re.fullmatch(r"```(?:python)?\s*(.*?)\s*```", text, re.S)
    if fence:
        text = fence.group(1)
    text = text.strip("`").strip()
    if not text:
        raise NotCalls("empty")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise NotCalls(f"not Python ({type(e).__name__})") from None
    body = tree.body
    nodes = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    calls: list[tuple[str, dict[str, Any]]] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise NotCalls("an element that is not a call")
        if node.args:
            raise NotCalls("positional arguments (BFCL calls take keywords)")
        args: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise NotCalls("**kwargs")
            args[kw.arg] = _value(kw.value)
        calls.append((_dotted(node.func), args))
    return calls


def standardize(text: str) -> str:
    """BFCL's `standardize_string`: no spaces or `,./-_*^`, lower case, ' as "."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize(value) if isinstance(value, str) else value


def _dict_ok(value: Any, answers: list[Any]) -> str:
    if not isinstance(value, dict):
        return "not a dict"
    why = "no possible dict"
    for answer in answers:
        if answer == "" or not isinstance(answer, dict):
            continue
        why = ""
        for key, v in value.items():
            if key not in answer:
                why = f"unexpected key {key!r}"
                break
            if _std(v) not in [_std(a) for a in answer[key]]:
                why = f"wrong value {v!r} for key {key!r}"
                break
        if not why:
            for key, allowed in answer.items():
                if key not in value and "" not in allowed:
                    why = f"missing key {key!r}"
                    break
        if not why:
            return ""
    return why


def _list_dict_ok(value: Any, answers: list[Any]) -> str:
    if not isinstance(value, list | tuple):
        return "not a list"
    why = "no possible list"
    for answer in answers:
        if not isinstance(answer, list) or len(answer) != len(value):
            why = "wrong number of dicts"
            continue
        why = next(
            (w for w in (_dict_ok(v, [a]) for v, a in zip(value, answer, strict=True)) if w), ""
        )
        if not why:
            return ""
    return why


def _param_ok(value: Any, answers: list[Any], kind: str, item: str) -> str:
    """'' when `value` is one of `answers` for a parameter of BFCL type `kind`."""
    if kind == "tuple" and isinstance(value, tuple):
        value = list(value)
    if kind == "float" and type(value) is int:
        value = float(value)
    expected = PYTHON_TYPES.get(kind)
    nested = PYTHON_TYPES.get(item) if kind in ("array", "tuple") else None
    # BFCL's `is_variable`: the first non-optional answer's type is not the declared one (a
    # None, a variable's name): compared as plain values
    given = [a for a in answers if a != ""]
    is_variable = bool(given) and expected is not None and type(given[0]) is not expected
    if not is_variable:
        if expected is dict:
            return _dict_ok(value, answers)
        if expected is list and nested is dict:
            return _list_dict_ok(value, answers)
        if expected is str:
            if not isinstance(value, str):
                return f"{value!r} is not a string"
            ok = standardize(value) in [standardize(a) for a in answers if isinstance(a, str)]
            return "" if ok else f"{value!r} is not one of {answers!r}"
        if expected is list:
            if not isinstance(value, list | tuple):
                return f"{value!r} is not a list"
            std = [_std(v) for v in value]
            allowed = [[_std(v) for v in a] for a in answers if isinstance(a, list)]
            return "" if std in allowed else f"{value!r} is not one of {answers!r}"
    return "" if value in answers else f"{value!r} is not one of {answers!r}"


def _call_ok(
    call: tuple[str, dict[str, Any]], expected: dict[str, Any], spec: dict[str, Any]
) -> str:
    """'' when one parsed call matches one ground-truth entry {name: {param: answers}}."""
    ((name, possible),) = expected.items()
    got_name, params = call
    if got_name != name:
        return f"called {got_name!r}, not {name!r}"
    types: dict[str, list[str]] = spec.get("types", {})
    for required in spec.get("required", []):
        if required not in params:
            return f"{name}: missing required parameter {required!r}"
    for param, value in params.items():
        if param not in types or param not in possible:
            return f"{name}: unexpected parameter {param!r}"
        kind, item = (types[param] + ["", ""])[:2]
        why = _param_ok(value, possible[param], kind, item)
        if why:
            return f"{name}({param}=...): {why}"
    for param, allowed in possible.items():
        if param not in params and "" not in allowed:
            return f"{name}: parameter {param!r} left out"
    return ""


def bfcl_match(reply: str, args: dict[str, Any]) -> tuple[bool, str]:
    """(right, reason) for a BFCL reply under `checker_args` (category, ground_truth, specs)."""
    category = str(args.get("category", ""))
    try:
        calls = parse_calls(reply)
    except NotCalls as e:
        if "irrelevance" in category and reply.strip():
            return True, f"no function call ({e})"
        return False, f"not a list of function calls: {e}"
    if "irrelevance" in category:
        return (not calls), ("no function call" if not calls else "called a function")
    truth: list[dict[str, Any]] = args.get("ground_truth", [])
    specs: dict[str, Any] = args.get("specs", {})
    if len(calls) != len(truth):
        return False, f"{len(calls)} call(s), expected {len(truth)}"
    if "parallel" not in category:
        (name,) = truth[0]
        why = _call_ok(calls[0], truth[0], specs.get(name, {}))
        return (not why), (why or "calls match")
    used: set[int] = set()
    for expected in truth:  # each expected call takes the first unused call that matches it
        (name,) = expected
        reasons = []
        for i, call in enumerate(calls):
            if i in used:
                continue
            why = _call_ok(call, expected, specs.get(name, {}))
            if not why:
                used.add(i)
                break
            reasons.append(why)
        else:
            return False, f"no call matches {name}: {'; '.join(reasons)[:300]}"
    return True, "calls match"


def bfcl_ast(question: Any, prediction: str) -> dict[str, Any]:
    ok, reason = bfcl_match(prediction or "", dict(question.checker_args))
    return {"score": 1.0 if ok else 0.0, "reason": reason[:500]}


# --------------------------------------------------------------------------- HumanEval

DEFAULT_TEST_TIMEOUT_S = 10.0


def humaneval_code(prediction: str, prompt: str, entry_point: str) -> str:
    """The reply's code: a JSON string (the one-line form the question asks for) or plain
    text; a body without `def <entry_point>` is appended to the prompt, as HumanEval's own
    completions are."""
    text = prediction.strip()
    if text.startswith('"'):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            text = decoded
    if not re.search(rf"\bdef\s+{re.escape(entry_point)}\s*\(", text):
        text = prompt + text
    return text


def run_tests(code: str, test: str, entry_point: str, timeout_s: float) -> tuple[bool, str]:
    """HumanEval's check program (code, the tests, `check(entry_point)`) in a sandbox child."""
    import anyio

    from app.harness.tools.sandbox import Limits, SandboxPool

    program = f"{code}\n\n{test}\n\ncheck({entry_point})\n"
    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        pool = SandboxPool(Path(tmp), concurrency=1)
        cwd = pool.workdir("run")
        (cwd / "program.py").write_text(program, encoding="utf-8")
        limits = Limits(
            timeout_s=timeout_s,
            cpu_s=max(1, int(timeout_s)),
            memory_bytes=1 << 30,
            file_bytes=1 << 20,
            output_bytes=64 << 10,
        )
        argv = [sys.executable, "-I", "-B", "program.py"]
        result = anyio.run(lambda: pool.run_command(argv, cwd, limits=limits))
    if result.ok:
        return True, "tests passed"
    tail = (result.stderr.strip().splitlines() or [result.reason or "failed"])[-1]
    return False, f"{result.reason or 'failed'}: {tail}"[:500]


def humaneval_tests(question: Any, prediction: str) -> dict[str, Any]:
    args = dict(question.checker_args)
    if not (prediction or "").strip():
        return {"score": 0.0, "reason": "no code"}
    code = humaneval_code(prediction, str(args["prompt"]), str(args["entry_point"]))
    timeout = float(args.get("test_timeout_s", DEFAULT_TEST_TIMEOUT_S))
    ok, reason = run_tests(code, str(args["test"]), str(args["entry_point"]), timeout)
    return {"score": 1.0 if ok else 0.0, "reason": reason}
