"""Write a simulated world's benchmark into the store: `python -m app.providers.sim.generate`.

`--seed` and `--units` pick the world; train on it with the matching config keys
`sim_world_seed` and `sim_units_per_type` (defaults 7 and 72: the built-in `sim-basic`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.paths import checkout_root
from app.providers.sim import tool_world
from app.providers.sim.world import TASK_TYPES, World, build_world

# Worlds whose benchmark has no exact answer to compare: every question is `rubric`-checked
# by the judge role (the simulated judge grades against the hidden answer key,
# app/providers/sim/judge.py `rubric_reply`). Train on it with `sim/judged` models.
JUDGED_WORLDS = ("judged",)
RUBRIC_PASS_THRESHOLD = 0.5


def rubric_for(task_type: str) -> str:
    return (
        f"The answer applies every rule of the {task_type} task that this case calls for "
        "and gives the final value the case asks for."
    )


def benchmark_lines(world: World) -> list[str]:
    lines = []
    judged = world.name in JUDGED_WORLDS
    for spec in world.cases.values():
        row: dict[str, object] = {  # JSON values: strings, and checker_args a table
            "question_id": spec.question_id,
            "task_type": spec.task_type,
            "question": spec.question,
            "answer": spec.answer,
            "unit_id": spec.unit_id,
            "family": spec.family,
            "checker": spec.checker,
        }
        if spec.context:
            row["context"] = spec.context
        if spec.checker_args:
            row["checker_args"] = spec.checker_args
        if spec.tools:  # the tool world (app/providers/sim/tool_world.py)
            row["tools"] = list(spec.tools)
        if spec.fixture:
            row["fixture"] = spec.fixture
        if judged:  # the reference answer stays, for reports; the judge decides
            row["checker"] = "rubric"
            row["checker_args"] = {
                "rubric": rubric_for(spec.task_type),
                "pass_threshold": RUBRIC_PASS_THRESHOLD,
            }
        lines.append(json.dumps(row, ensure_ascii=False, sort_keys=True))
    return lines


def judge_case_lines(world: World, per_type: int = 6) -> list[str]:
    """Labelled cases for `judge-quality` (app/harness/rollouts/judge_quality.py) on a judged
    world's benchmark: per task type, `per_type` questions each with its reference answer
    (band [0.8, 1]), a wrong answer the world knows (band [0, 0.2]) and an empty control
    (band [0, 0.1])."""
    lines = []
    for task_type in TASK_TYPES:
        specs = [c for c in world.cases.values() if c.task_type == task_type][:per_type]
        for spec in specs:
            qid = spec.question_id
            wrong = spec.wrong_answers[0] if spec.wrong_answers else "none"
            for kind, answer, band in (
                ("reference", spec.answer, [0.8, 1.0]),
                ("known_bad", wrong, [0.0, 0.2]),
                ("control", "", [0.0, 0.1]),
            ):
                case = {"case_id": f"{qid}-{kind}", "question_id": qid, "answer": answer}
                lines.append(json.dumps({**case, "band": band, "kind": kind}, sort_keys=True))
    return lines


def write_benchmark(world: World, out: Path, name: str) -> None:
    if tool_world.is_tool_world(world.name):
        write_tool_benchmark(world, out, name)
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "questions.jsonl").write_text("\n".join(benchmark_lines(world)) + "\n", encoding="utf-8")
    types = ", ".join(f'"{t}"' for t in TASK_TYPES)
    how = (
        "answers are scored by the judge model against a rubric (the simulated judge grades "
        "them against the world's hidden rules)."
        if world.name in JUDGED_WORLDS
        else "answers are checked against the world's hidden rules."
    )
    (out / "benchmark.toml").write_text(
        f'name = "{name}"\n'
        f'description = "Generated from simulated world {world.name!r} (seed {world.seed}); '
        f'{how}"\n'
        f'seed = 11\nlicense = "MIT"  # written for this repository (LICENSE)\n'
        # every answer is drawn per question (app/providers/sim/provider.py `_agent_draw`): a
        # family's three units need different rules and are not near-duplicates
        f'family_units = "independent"\n'
        f"task_types = [{types}]\n\n[split]\n"
        "diagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n",
        encoding="utf-8",
    )


TOOL_FAULT_RATE = 0.4  # share of first tool calls that fail: what a retry rule recovers


def write_tool_benchmark(world: World, out: Path, name: str) -> None:
    """The tool world's benchmark: questions that declare tools (and, for `repair`, a ledger
    fixture), the tools module with its records table, and the fixtures with their solutions."""
    cases = list(world.cases.values())
    tools_dir = out / "tools"
    tools_dir.mkdir(parents=True, exist_ok=True)
    kit = Path(tool_world.__file__).with_name("tool_kit") / "records_tools.py"
    (tools_dir / "records_tools.py").write_text(kit.read_text(encoding="utf-8"), encoding="utf-8")
    table = tool_world.records_table(cases)
    (tools_dir / tool_world.RECORDS_FILE).write_text(
        json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    fixture_tables = []
    for ledger in tool_world.ledgers(world.seed):
        for solved, folder in ((False, ledger.name), (True, f"{ledger.name}-fixed")):
            for rel, text in tool_world.fixture_files(ledger, solved).items():
                path = out / "fixtures" / folder / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        fixture_tables.append(
            f"[fixtures.{ledger.name}]\n"
            f'dir = "fixtures/{ledger.name}"\n'
            'sealed = ["tests/*", "schema.json"]\n'
            'oracle_function = "records_tools:ledger_ok"\n'
            f'reference = "fixtures/{ledger.name}-fixed"\n'
        )
    (out / "questions.jsonl").write_text("\n".join(benchmark_lines(world)) + "\n", encoding="utf-8")
    types = ", ".join(f'"{t}"' for t in tool_world.TOOL_TASK_TYPES)
    tools = "".join(
        f'[[tools]]\nname = "{t}"\nkind = "python"\ntarget = "records_tools:{t}"\n\n'
        for t in (*tool_world.RECORD_TOOLS, *tool_world.REPAIR_TOOLS)
    )
    (out / "benchmark.toml").write_text(
        f'name = "{name}"\n'
        f'description = "Generated from simulated world {world.name!r} (seed {world.seed}); '
        'success needs the right use of declared tools (docs/tools.md)."\n'
        f'seed = 11\nlicense = "MIT"  # written for this repository (LICENSE)\n'
        f"task_types = [{types}]\n\n[split]\n"
        "diagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n\n"
        f"{tools}[faults]\ntool_rate = {TOOL_FAULT_RATE}\nseed = 0\n\n" + "\n".join(fixture_tables),
        encoding="utf-8",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", default="basic")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--units", type=int, default=72, help="units per task type")
    parser.add_argument("--name", default="sim-basic")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--judge-cases", type=Path, default=None, help="also write judge-quality cases here"
    )
    args = parser.parse_args()
    out = args.out or _checkout_benchmark(parser, args.name)
    world = build_world(args.world, args.seed, args.units)
    write_benchmark(world, out, args.name)
    if args.judge_cases is not None:
        args.judge_cases.write_text("\n".join(judge_case_lines(world)) + "\n", encoding="utf-8")
    print(f"wrote {out}")


def _checkout_benchmark(parser: argparse.ArgumentParser, name: str) -> Path:
    """The default target: the checkout's built-in store (an installed one is not written to)."""
    root = checkout_root()
    if root is None:
        parser.error("--out is required when not running from a checkout")
    return root / "store" / "questions" / name


if __name__ == "__main__":
    main()
