"""BFCL (Berkeley Function Calling Leaderboard) from the `bfcl-eval` package, as a benchmark.

Reads `bfcl_eval/data/BFCL_v4_<category>.json` (the questions, JSON Lines despite the name)
and `bfcl_eval/data/possible_answer/BFCL_v4_<category>.json` (the ground truth), or the
`BFCL_v3_` files of older releases. Licence: Apache-2.0 (the package's metadata).

One benchmark, `bfcl`; its task types are BFCL's single-turn Python categories
(`SINGLE_TURN`), one question per BFCL entry. A question holds the functions (BFCL's JSON
schemas) and the request; the agent answers on its ANSWER line with the calls in Python
syntax, `[f(a=1), g(b="x")]`, and `bench.public.checks:bfcl_ast` matches them to the possible
answers. The reference answer is one of them (each parameter's first listed value, the
optional ones left out), checked here by that same checker before it is written.

A family is one BFCL entry, except that entries whose question text is the same (BFCL's live
categories repeat a few) share one family, so the split never puts a copy in training and
another in the test; a copy whose answers contradict the first one's (three `live_irrelevance`
entries repeat a `live_simple` or `live_multiple` question that needs a call) is left out.

Left out, and why: the Java and JavaScript categories (their arguments are strings in those
languages' syntax, which BFCL type-converts with tree-sitter); `live_relevance` (no ground
truth: any call counts); the multi-turn categories (stateful Python simulators as tools: the
`bfcl_multi_turn` benchmark, bench/public/bfcl_multi_turn.py); memory, web search and format sensitivity (agentic categories that
need a memory backend, the web, or BFCL's prompt variants).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.public.checks import bfcl_match
from bench.public.source import (
    PackageSource,
    SourceError,
    jsonl,
    toml_value,
    write_benchmark,
)
from core.checkers import normalise_answer

DISTRIBUTION = "bfcl-eval"
TOP_LEVEL = "bfcl_eval"
LICENSE = "Apache-2.0"
NAME = "bfcl"
CHECKER = "bench.public.checks:bfcl_ast"
SINGLE_TURN = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
)
# BFCL's own names of older releases: simple_python was `simple`
ALIASES = {"simple_python": ("simple_python", "simple")}
INSTRUCTION = (
    "Reply with the function call(s) this request needs, on your ANSWER line, as a Python list "
    'of calls with keyword arguments, e.g. ANSWER: [get_weather(city="Oslo", days=2)]. '
    "Call several functions, or one several times, when the request needs it. If none of the "
    "functions fits the request, reply ANSWER: []"
)


@dataclass
class Imported:
    name: str
    path: Path
    questions: int
    per_task_type: dict[str, int]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count


def _data_file(source: PackageSource, category: str, answers: bool) -> str:
    sub = "possible_answer/" if answers else ""
    for version in ("v4", "v3"):
        for name in ALIASES.get(category, (category,)):
            member = f"{TOP_LEVEL}/data/{sub}BFCL_{version}_{name}.json"
            if source.exists(member):
                return member
    raise SourceError(f"{DISTRIBUTION}: no data file for category {category!r}")


def _request(turns: Any) -> str:
    """The single turn's messages as text (a system message is shown as such)."""
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], list):
        raise ValueError("question is not a list of turns")
    messages = turns[0]
    parts = []
    for m in messages:
        role, content = str(m.get("role", "user")), str(m.get("content", ""))
        parts.append(content if (role == "user" and len(messages) == 1) else f"{role}: {content}")
    return "\n".join(parts).strip()


def _specs(functions: list[dict[str, Any]]) -> dict[str, Any]:
    """What the checker needs of each function: its parameters' types and the required ones."""
    specs: dict[str, Any] = {}
    for f in functions:
        params = f.get("parameters") or {}
        props = params.get("properties") or {}
        types = {}
        for p, d in props.items():
            d = d if isinstance(d, dict) else {}
            item = d.get("items") if isinstance(d.get("items"), dict) else {}
            types[p] = [str(d.get("type", "")), str(item.get("type", ""))]
        specs[str(f.get("name", ""))] = {
            "types": types,
            "required": [str(r) for r in params.get("required") or []],
        }
    return specs


def _first(answers: list[Any]) -> tuple[bool, Any]:
    for a in answers:
        if a != "":
            return True, a
    return False, None


def _reference_value(value: Any) -> Any:
    """A dict answer {key: [allowed...]} (or a list of them) as one concrete value."""
    if isinstance(value, dict):
        out = {}
        for key, allowed in value.items():
            found, v = _first(allowed) if isinstance(allowed, list) else (True, allowed)
            if found:
                out[key] = v
        return out
    return value


def reference_calls(truth: list[dict[str, Any]], specs: dict[str, Any]) -> str:
    """One right reply: each call's parameters at their first possible value."""
    calls = []
    for entry in truth:
        ((name, possible),) = entry.items()
        types = specs.get(name, {}).get("types", {})
        required = specs.get(name, {}).get("required", [])
        args = []
        for param, answers in possible.items():
            if "" in answers and param not in required:
                continue  # optional: left out, the smallest right call
            found, v = _first(answers)
            if not found:
                continue
            kind, item = (types.get(param, []) + ["", ""])[:2]
            if kind == "dict":
                v = _reference_value(v)
            elif kind in ("array", "tuple") and item == "dict" and isinstance(v, list):
                v = [_reference_value(x) for x in v]
            args.append(f"{param}={v!r}")
        calls.append(f"{name}({', '.join(args)})")
    return "[" + ", ".join(calls) + "]"


def _question_key(text: str) -> str:
    # the key validate-benchmark's duplicate check uses (core/benchmark_checks.py)
    return re.sub(r"\s+", "", normalise_answer(text)).rstrip("?.!")


def build_rows(
    source: PackageSource, categories: tuple[str, ...], limit: int | None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    first_of: dict[str, dict[str, Any]] = {}  # question key -> its first row
    for category in categories:
        entries = source.read_jsonl(_data_file(source, category, answers=False))
        truth: dict[str, Any] = {}
        if "irrelevance" not in category:
            for a in source.read_jsonl(_data_file(source, category, answers=True)):
                truth[str(a.get("id"))] = a.get("ground_truth")
        taken = 0
        for entry in entries:
            if limit is not None and taken >= limit:
                break
            qid = str(entry.get("id", ""))
            try:
                functions = entry["function"]
                if not isinstance(functions, list) or not (functions or "irrelevance" in category):
                    raise ValueError("no functions")
                request = _request(entry["question"])
            except (KeyError, ValueError, AttributeError, TypeError):
                skipped["malformed entry"] = skipped.get("malformed entry", 0) + 1
                continue
            specs = _specs(functions)
            args: dict[str, Any] = {"category": category}
            if "irrelevance" in category:
                answer = "[]"
            else:
                gt = truth.get(qid)
                if (
                    not isinstance(gt, list)
                    or not gt
                    or not all(isinstance(g, dict) and len(g) == 1 for g in gt)
                ):
                    skipped["no ground truth"] = skipped.get("no ground truth", 0) + 1
                    continue
                args |= {"ground_truth": gt, "specs": specs}
                answer = reference_calls(gt, specs)
            ok, why = bfcl_match(answer, args)
            if not ok:
                skipped["reference rejected"] = skipped.get("reference rejected", 0) + 1
                continue
            text = (
                "You can call these functions (JSON schemas):\n"
                f"{json.dumps(functions, ensure_ascii=False)}\n\n"
                f"Request:\n{request}\n\n{INSTRUCTION}"
            )
            key = _question_key(text)
            earlier = first_of.get(key)
            if earlier is not None and not (
                bfcl_match(earlier["answer"], args)[0]
                and bfcl_match(answer, earlier["checker_args"])[0]
            ):  # the same question with another right answer (BFCL lists a few): no agent
                # could get both, and a model sees one text: the first one is kept
                skipped["contradicts an earlier copy"] = (
                    skipped.get("contradicts an earlier copy", 0) + 1
                )
                continue
            rows.append(
                {
                    "question_id": qid,
                    "task_type": category,
                    "question": text,
                    "answer": answer,
                    "family": earlier["family"] if earlier is not None else qid,
                    "checker": CHECKER,
                    "checker_args": args,
                    "pass_threshold": 1.0,
                    "metadata": {"source": f"{DISTRIBUTION} {source.version}", "bfcl_id": qid},
                }
            )
            first_of.setdefault(key, rows[-1])
            taken += 1
    return rows, skipped


def import_bfcl(
    source: PackageSource,
    out: Path,
    categories: tuple[str, ...] = SINGLE_TURN,
    limit: int | None = None,
) -> Imported:
    """Write `<out>/questions/bfcl/`; `limit` keeps the first N entries of each category."""
    rows, skipped = build_rows(source, categories, limit)
    per_type: dict[str, int] = {}
    for r in rows:
        per_type[r["task_type"]] = per_type.get(r["task_type"], 0) + 1
    toml = "\n".join(
        [
            "format_version = 1",
            f"name = {toml_value(NAME)}",
            "description = "
            + toml_value(
                f"BFCL single-turn Python categories from {DISTRIBUTION} {source.version} "
                "(bench/public/bfcl.py); AST-checked calls."
            ),
            f"license = {toml_value(LICENSE)}  # {DISTRIBUTION}'s licence (its package metadata)",
            f"task_types = {toml_value(sorted(per_type))}",
            "",
            "[checker]",
            "timeout_s = 10",
            "",
        ]
    )
    notice = (
        f"# {NAME}: imported from {DISTRIBUTION} {source.version}\n\n"
        f"Read from {source.origin} by bench/public_import.py (bench/public/bfcl.py) of "
        "skill-trainer. The questions, function schemas and possible answers are BFCL's "
        "(Berkeley Function Calling Leaderboard, ShishirPatil/gorilla), licensed under "
        f"{LICENSE} (http://www.apache.org/licenses/LICENSE-2.0); the question wording around "
        "them and the reference answers (one of the possible answers) were added by the "
        "importer.\n\n"
        f"Categories: {', '.join(f'{k} ({v})' for k, v in sorted(per_type.items()))}.\n"
        f"Skipped: {json.dumps(skipped, sort_keys=True)}.\n"
    )
    path = write_benchmark(
        out,
        NAME,
        {"questions.jsonl": jsonl(rows), "benchmark.toml": toml, "NOTICE.md": notice},
    )
    return Imported(NAME, path, len(rows), per_type, skipped)
