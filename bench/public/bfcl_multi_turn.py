"""BFCL's multi-turn categories from `bfcl-eval`, as a benchmark with tools and fixtures.

Reads `bfcl_eval/data/BFCL_v4_<category>.json` (the entries: user turns, `initial_config`,
`involved_classes`, `excluded_function`), `bfcl_eval/data/possible_answer/` (the ground truth:
one list of calls per turn), the function docs `bfcl_eval/data/multi_turn_func_doc/*.json`
and the simulator classes' source `bfcl_eval/eval_checker/multi_turn_eval/func_source_code/`.
Licence: Apache-2.0. Only `multi_turn_base` (`CATEGORIES`): `miss_func` and `miss_param` hold
turns BFCL judges as "the model should ask", and `long_context` loads the simulators with
BFCL's long-context padding; neither is mapped yet.

One benchmark, `bfcl_multi_turn` (docs/public-benchmarks.md):

- each BFCL function of the 8 simulator classes is a declared Python tool (docs/tools.md),
  with BFCL's description and parameters (its `dict` type as `object`, `float` as `number`),
  whose target is a generated wrapper in `tools/bfcl_tools.py` calling `bfcl_runtime.call`
  (bench/public/bfcl_runtime.py, copied in): the simulator state lives in the rollout's fixture
  copy as the calls made so far, replayed on the initial config at each call;
- each entry is one question (all its user turns in order, since a store question has one
  user message) offered the functions of its classes minus its `excluded_function`, with a
  fixture of its own: `config.json`, an empty `calls.json` and the sealed ground truth
  `expected.json`; the fixture's oracle, `bfcl_runtime:state_ok`, replays both in the sandbox
  and compares BFCL's way. `reference` is the fixture with the ground-truth calls made, which
  `check-tools` checks the oracle accepts;
- `metadata.oracle_tool_calls` holds the ground-truth calls, which `sim/oracle` makes through
  the tools when it answers right (app/providers/sim/oracle.py), so the oracle run exercises
  the tools, the state files and the fixture oracle end to end.

The simulator sources are copied with two changes, both recorded in NOTICE.md: their import
of BFCL's `long_context` module is made local, and `math_api`'s `import mpmath` is guarded
(only `logarithm` uses it; an entry whose ground truth calls it is left out when `mpmath` is
not installed). Nothing of the package is imported or run by the importer: the methods'
parameter order (BFCL writes some ground-truth calls with positional arguments) is read from
the source with `ast`.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import keyword
import re
from pathlib import Path
from typing import Any

from bench.public.bfcl import DISTRIBUTION, LICENSE, TOP_LEVEL, Imported
from bench.public.source import PackageSource, SourceError, jsonl, toml_value, write_benchmark

NAME = "bfcl_multi_turn"
CATEGORIES = ("multi_turn_base",)
SIM_DIR = f"{TOP_LEVEL}/eval_checker/multi_turn_eval/func_source_code"
DOC_DIR = f"{TOP_LEVEL}/data/multi_turn_func_doc"
CLASSES = {  # class -> (its module in SIM_DIR, its function doc) as BFCL's constants map them
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
LONG_CONTEXT = "long_context"
LONG_CONTEXT_IMPORT = f"from {SIM_DIR.replace('/', '.')}.{LONG_CONTEXT} import"
MPMATH_IMPORT = "import mpmath\n"
MPMATH_GUARDED = (
    "try:\n    import mpmath\nexcept ImportError:  # skill-trainer\n    mpmath = None\n"
)
RUNTIME = Path(__file__).with_name("bfcl_runtime.py")
ANSWER = "all requests handled"
TOOL_TIMEOUT_S = 20
ORACLE_TIMEOUT_S = 30
SEALED = ["config.json", "expected.json"]
INSTRUCTION = (
    "A user makes the requests below one after the other, in one conversation. Carry out each "
    "request in order with the tools you are given (they act on the user's file system, "
    "accounts and devices; what one call changes, the next one sees). When you have carried "
    "them all out, end with an ANSWER line saying so."
)
TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def json_schema(node: Any) -> Any:
    """A BFCL parameter schema as JSON schema: `dict` is `object`, `float` is `number`."""
    if isinstance(node, list):
        return [json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            mapped = TYPES.get(value, value)
            if mapped is not None:
                out[key] = mapped
        elif key == "properties" and isinstance(value, dict):
            out[key] = {p: json_schema(v) for p, v in value.items()}
        else:
            out[key] = json_schema(value)
    return out


def toml_inline(value: Any) -> str:
    """A TOML value, inline tables included (a JSON value without nulls)."""
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(str(k))} = {toml_inline(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_inline(v) for v in value) + "]"
    return toml_value(value)


def method_params(source: str, cls: str) -> dict[str, list[str]]:
    """The public methods of `cls` in `source` and their parameter names, in order (ast)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {
                f.name: [a.arg for a in f.args.posonlyargs + f.args.args][1:]
                + [a.arg for a in f.args.kwonlyargs]
                for f in node.body
                if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
            }
    raise SourceError(f"{DISTRIBUTION}: no class {cls} in its simulator source")


def parse_call(text: str, params: dict[str, list[str]]) -> dict[str, Any]:
    """A ground-truth call `f(1, b='x')` as {"name", "arguments"} (values literal only)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call: {text[:80]}")
    name = node.func.id
    if name not in params:
        raise ValueError(f"unknown function {name}")
    if len(node.args) > len(params[name]):
        raise ValueError(f"too many positional arguments: {text[:80]}")
    args = {p: ast.literal_eval(a) for p, a in zip(params[name], node.args, strict=False)}
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError("**kwargs")
        args[kw.arg] = ast.literal_eval(kw.value)
    return {"name": name, "arguments": args}


def _tool_target(name: str) -> str:
    return f"t_{name}"


def _schema_error(schema: dict[str, Any], arguments: dict[str, Any]) -> str:
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(arguments)
    )
    return "" if error is None else error.message


def _data_file(source: PackageSource, category: str, answers: bool) -> str:
    sub = "possible_answer/" if answers else ""
    for version in ("v4", "v3"):
        member = f"{TOP_LEVEL}/data/{sub}BFCL_{version}_{category}.json"
        if source.exists(member):
            return member
    raise SourceError(f"{DISTRIBUTION}: no data file for category {category!r}")


def _load_classes(
    source: PackageSource, needed: list[str], files: dict[str, str | bytes]
) -> tuple[dict[str, Any], dict[str, str], dict[str, list[str]], list[str]]:
    """The simulator modules of `needed` into `files` (`tools/<module>.py`, with
    `long_context.py` when one imports it), and their functions: (function -> BFCL doc,
    function -> class, function -> parameter names in order, the changes made to the source)."""
    docs: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    params: dict[str, list[str]] = {}
    changes: list[str] = []
    for cls in needed:
        module, doc_file = CLASSES[cls]
        code = source.read_text(f"{SIM_DIR}/{module}.py")
        methods = method_params(code, cls)
        if LONG_CONTEXT_IMPORT in code:
            code = code.replace(LONG_CONTEXT_IMPORT, f"from {LONG_CONTEXT} import")
            changes.append(f"`{module}.py`: imports `{LONG_CONTEXT}` from its own folder")
        if module == "math_api" and MPMATH_IMPORT in code:
            code = code.replace(MPMATH_IMPORT, MPMATH_GUARDED, 1)
            changes.append(f"`{module}.py`: `import mpmath` guarded (mpmath is None without it)")
        if "bfcl_eval" in code:
            raise SourceError(f"{DISTRIBUTION}: {module}.py imports more of bfcl_eval")
        files[f"tools/{module}.py"] = code
        for d in source.read_jsonl(f"{DOC_DIR}/{doc_file}"):
            name = str(d.get("name", ""))
            if name in methods and name.isidentifier() and not keyword.iskeyword(name):
                docs[name], owner[name], params[name] = d, cls, methods[name]
    if any(f"from {LONG_CONTEXT} import" in str(code) for code in files.values()):
        long_context = source.read_text(f"{SIM_DIR}/{LONG_CONTEXT}.py")
        if "bfcl_eval" in long_context:
            raise SourceError(f"{DISTRIBUTION}: {LONG_CONTEXT}.py imports more of bfcl_eval")
        files[f"tools/{LONG_CONTEXT}.py"] = long_context
    files["tools/bfcl_runtime.py"] = RUNTIME.read_text(encoding="utf-8")
    return docs, owner, params, changes


def import_bfcl_multi_turn(
    source: PackageSource,
    out: Path,
    categories: tuple[str, ...] = CATEGORIES,
    limit: int | None = None,
) -> Imported:
    """Write `<out>/questions/bfcl_multi_turn/`; `limit` keeps the first N entries of each
    category."""
    collected: list[tuple[str, dict[str, Any], Any]] = []  # (category, entry, ground truth)
    for category in categories:
        entries = source.read_jsonl(_data_file(source, category, answers=False))
        truth = {
            str(a.get("id")): a.get("ground_truth")
            for a in source.read_jsonl(_data_file(source, category, answers=True))
        }
        chosen = entries if limit is None else entries[:limit]
        collected += [(category, e, truth.get(str(e.get("id", "")))) for e in chosen]
    needed = sorted(
        {
            str(c)
            for _, e, _ in collected
            for c in (e.get("involved_classes") or [])
            if str(c) in CLASSES
        }
    )
    files: dict[str, str | bytes] = {}
    docs, owner, params, changes = _load_classes(source, needed, files)
    schemas = {n: json_schema(d.get("parameters") or {"type": "dict"}) for n, d in docs.items()}
    mpmath = importlib.util.find_spec("mpmath") is not None

    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    used: set[str] = set()
    fixtures: list[str] = []

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    for category, entry, entry_truth in collected:
        qid = str(entry.get("id", ""))
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", qid):
            skip("an id that cannot name a fixture")
            continue
        try:
            classes = [str(c) for c in entry["involved_classes"]]
            turns = [
                "\n".join(str(m["content"]) for m in turn if m.get("role") == "user")
                for turn in entry["question"]
            ]
            config = entry.get("initial_config") or {}
            excluded = set(entry.get("excluded_function") or [])
            if not turns or not all(turns) or not isinstance(config, dict):
                raise ValueError("empty turn")
        except (KeyError, TypeError, ValueError, AttributeError):
            skip("malformed entry")
            continue
        if any(c not in CLASSES for c in classes):
            skip("a class that is not one of the 8 simulators")
            continue
        tools = sorted(n for n, c in owner.items() if c in classes and n not in excluded)
        try:
            gt = [[parse_call(c, params) for c in turn] for turn in entry_truth]
        except (KeyError, TypeError, ValueError, SyntaxError):
            skip("ground truth not literal calls of its tools")
            continue
        flat = [c for turn in gt for c in turn]
        if any(c["name"] not in tools for c in flat) or any(
            _schema_error(schemas[c["name"]], c["arguments"]) for c in flat
        ):
            skip("ground truth not valid calls of its tools")
            continue
        if not mpmath and any(c["name"] == "logarithm" for c in flat):
            skip("needs mpmath (not installed)")
            continue
        requests = "\n".join(f"Request {i}: {t}" for i, t in enumerate(turns, 1))
        text = f"{INSTRUCTION}\n\n{requests}"
        state = {
            "involved_classes": classes,
            "initial_config": config,
            "owner": {n: owner[n] for n in tools},
        }
        base = f"fixtures/{qid}"
        files[f"{base}/config.json"] = json.dumps(state, ensure_ascii=False)
        files[f"{base}/calls.json"] = "[]"
        files[f"{base}/expected.json"] = json.dumps({"turns": gt}, ensure_ascii=False)
        files[f"{base}.reference/config.json"] = files[f"{base}/config.json"]
        files[f"{base}.reference/calls.json"] = json.dumps(flat, ensure_ascii=False)
        files[f"{base}.reference/expected.json"] = files[f"{base}/expected.json"]
        fixtures.append(qid)
        used.update(tools)
        rows.append(
            {
                "question_id": qid,
                "task_type": category,
                "question": text,
                "answer": ANSWER,
                "family": qid,
                "checker": "exact",
                "tools": tools,
                "fixture": qid,
                "metadata": {
                    "source": f"{DISTRIBUTION} {source.version}",
                    "bfcl_id": qid,
                    "turns": len(turns),
                    "oracle_tool_calls": flat,
                },
            }
        )

    wrappers = [
        '"""Generated by bench/public/bfcl_multi_turn.py: one wrapper per BFCL function."""',
        "",
        "from bfcl_runtime import call",
        "",
    ]
    per_type: dict[str, int] = {}
    for r in rows:
        per_type[r["task_type"]] = per_type.get(r["task_type"], 0) + 1
    toml = [
        "format_version = 1",
        f"name = {toml_value(NAME)}",
        "description = "
        + toml_value(
            f"BFCL multi-turn categories from {DISTRIBUTION} {source.version} "
            "(bench/public/bfcl_multi_turn.py): BFCL's simulators as tools, final state "
            "checked against the ground truth's."
        ),
        f"license = {toml_value(LICENSE)}  # {DISTRIBUTION}'s licence (its package metadata)",
        f"task_types = {toml_value(sorted(per_type))}",
        "",
    ]
    for name in sorted(used):
        target = _tool_target(name)
        wrappers += [
            "",
            f"def {target}(**arguments):",
            f"    return call({name!r}, arguments)",
            "",
        ]
        toml += [
            "[[tools]]",
            f"name = {toml_value(name)}",
            'kind = "python"',
            f"target = {toml_value('bfcl_tools:' + target)}",
            'path = "tools"',
            f"timeout_s = {TOOL_TIMEOUT_S}",
            f"description = {toml_value(str(docs[name].get('description', '')))}",
            f"parameters = {toml_inline(schemas[name])}",
            "",
        ]
    for qid in fixtures:
        toml += [
            f"[fixtures.{qid}]",
            f'dir = "fixtures/{qid}"',
            f"sealed = {toml_value(SEALED)}",
            'oracle_function = "bfcl_runtime:state_ok"',
            'path = "tools"',
            f'reference = "fixtures/{qid}.reference"',
            f"timeout_s = {ORACLE_TIMEOUT_S}",
            "",
        ]
    files["tools/bfcl_tools.py"] = "\n".join(wrappers).rstrip() + "\n"
    files["benchmark.toml"] = "\n".join(toml)
    files["questions.jsonl"] = jsonl(rows)
    files["NOTICE.md"] = (
        f"# {NAME}: imported from {DISTRIBUTION} {source.version}\n\n"
        f"Read from {source.origin} by bench/public_import.py (bench/public/bfcl_multi_turn.py) "
        "of skill-trainer. The user turns, initial configurations, function docs, possible "
        "answers and the simulator classes in `tools/` (`"
        + "`, `".join(sorted(m for m, _ in CLASSES.values()) + [LONG_CONTEXT])
        + ".py`, from `bfcl_eval/eval_checker/multi_turn_eval/func_source_code/`) are BFCL's "
        "(Berkeley Function Calling Leaderboard, ShishirPatil/gorilla), licensed under "
        f"{LICENSE} (http://www.apache.org/licenses/LICENSE-2.0). Changes to the copied "
        f"source: {'; '.join(changes) or 'none'}. `tools/bfcl_runtime.py` and "
        "`tools/bfcl_tools.py` (the tool wrappers and the fixture oracle), the question "
        "wording and the fixtures' layout were added by the importer.\n\n"
        f"Categories: {', '.join(f'{k} ({v})' for k, v in sorted(per_type.items()))}.\n"
        f"Skipped: {json.dumps(skipped, sort_keys=True)}.\n"
    )
    path = write_benchmark(out, NAME, files)
    return Imported(NAME, path, len(rows), per_type, skipped)
