"""A user's own benchmark, written to a temporary store: three task types (numeric, exact,
choice checkers), 16 families each, and a seed with one skill per task type. Used by the
`sim/oracle` and `estimate` tests."""

from __future__ import annotations

import json
from pathlib import Path

TASK_TYPES = ("sums", "words", "picks")
FAMILIES = 16
NAME = "user-bench"
SEED = "user-seed"


def _rows() -> list[dict]:
    rows = []
    for i in range(FAMILIES):
        for j in range(2):  # two questions per family
            n = i * 2 + j
            rows.append(
                {
                    "question_id": f"sum-{n:03d}",
                    "task_type": "sums",
                    "question": f"What is {n} + {n + 7}?",
                    "answer": str(2 * n + 7),
                    "checker": "numeric",
                    "family": f"sums-f{i}",
                }
            )
            rows.append(
                {
                    "question_id": f"word-{n:03d}",
                    "task_type": "words",
                    "question": f"Spell the number {n} backwards in digits.",
                    "answer": str(n)[::-1],
                    "checker": "exact",
                    "family": f"words-f{i}",
                    "context": f"Record {n}: the digits of {n} are {' '.join(str(n))}.",
                }
            )
            rows.append(
                {
                    "question_id": f"pick-{n:03d}",
                    "task_type": "picks",
                    "question": f"Which letter comes {n % 4 + 1} places after A? "
                    "A) B  B) C  C) D  D) E",
                    "answer": "ABCD"[n % 4],
                    "checker": "choice",
                    "family": f"picks-f{i}",
                }
            )
    return rows


def write_store(store: Path) -> Path:
    """The store folder with the benchmark NAME and the seed SEED."""
    bench = store / "questions" / NAME
    bench.mkdir(parents=True)
    (bench / "benchmark.toml").write_text(
        f'name = "{NAME}"\ndescription = "a user benchmark"\nseed = 5\n'
        f"task_types = {json.dumps(list(TASK_TYPES))}\n"
        "[split]\ndiagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n",
        encoding="utf-8",
    )
    (bench / "questions.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8"
    )
    seed = store / "seeds" / SEED
    (seed / "skills").mkdir(parents=True)
    (seed / "prompts").mkdir()
    (seed / "seed.toml").write_text(f'name = "{SEED}"\ndescription = "mine"\n', encoding="utf-8")
    for task_type in (*TASK_TYPES, "default-strategy"):
        (seed / "skills" / f"{task_type}.md").write_text(
            f"# {task_type}\n\n## Rules\n- Answer briefly.\n\n"
            "<!-- momentum:start -->\n<!-- momentum:end -->\n",
            encoding="utf-8",
        )
    (seed / "prompts" / "system.md").write_text(
        "# Assistant\n\n## Instructions\n- End with `ANSWER: <answer>`.\n", encoding="utf-8"
    )
    (seed / "prompts" / "tool_read_context.md").write_text(
        "Read the question's context.\n", encoding="utf-8"
    )
    (seed / "prompts" / "tool_read_skill.md").write_text(
        "Read the skill file of a task type.\n", encoding="utf-8"
    )
    return store
