"""`list seeds|benchmarks|runs`: what `init` can start from, and what a workspace has run.

Seeds and benchmarks come from `--store` first and then the built-in store, in the order
`init` looks them up (app/api.py `find_seed`, `find_benchmark`): a built-in one of the same
name as a store's is listed as hidden by it. Runs are a workspace's top-level runs from its
log (read-only, app/harness/workspace/harness_log/reader.py), each with the count of runs it started
(gate, rollout and validation runs of a train). Reads a few small files; calls no model.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from pathlib import Path

from app.cli._output import out, out_json
from app.errors import UserError

WHAT = ("seeds", "benchmarks", "runs")

HELP = (
    "list the seeds or benchmarks init can use (--store's, then the built-in ones), or a "
    "workspace's runs"
)
EXAMPLE = "list runs -w workspaces/demo"
OPTIONS = ("verbose", "store", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=WHAT, help="what to list")
    p.add_argument("--workspace", "-w", type=Path, help="the workspace (list runs)")


@dataclass(frozen=True)
class StoreEntry:
    """A seed or benchmark `init` can use."""

    name: str
    source: str  # "store" (--store) or "built-in"
    path: Path
    description: str
    questions: int | None  # benchmarks: non-blank lines of questions.jsonl
    hidden: bool  # a built-in one that --store's of the same name hides


@dataclass(frozen=True)
class RunEntry:
    """A workspace's top-level run."""

    run_id: str
    kind: str
    status: str
    started_at: str | None
    skills_version: str | None
    accuracy: float | None  # runs that answered questions (baseline, eval, infer, test)
    runs_inside: int  # runs it started (gate, rollout, validation)


def store_entries(kind: str, store: Path | None) -> list[StoreEntry]:
    """The seeds (`kind` "seeds") or benchmarks ("benchmarks") of `store`, then the built-in."""
    from app.harness.workspace.store import benchmark_names, seed_names
    from app.paths import builtin_store

    names = seed_names if kind == "seeds" else benchmark_names
    builtin = builtin_store()
    stores = [("built-in", builtin)]
    if store is not None and store.resolve() != builtin.resolve():
        stores.insert(0, ("store", store))
    entries: list[StoreEntry] = []
    seen: set[str] = set()
    for source, folder in stores:
        for name in names(folder):
            entries.append(_entry(kind, name, source, folder, hidden=name in seen))
            seen.add(name)
    return entries


def _entry(kind: str, name: str, source: str, store: Path, hidden: bool) -> StoreEntry:
    from app.harness.workspace.store import read_toml

    folder = store / ("seeds" if kind == "seeds" else "questions") / name
    meta_file = folder / ("seed.toml" if kind == "seeds" else "benchmark.toml")
    try:
        description = (
            str(read_toml(meta_file).get("description", "")) if meta_file.is_file() else ""
        )
    except UserError:  # a broken file is named when the seed or benchmark is used
        description = "(unreadable)"
    questions = None
    if kind == "benchmarks":
        with (folder / "questions.jsonl").open("rb") as f:
            questions = sum(1 for line in f if line.strip())
    return StoreEntry(name, source, folder, description, questions, hidden)


def run_entries(workspace: Path) -> list[RunEntry]:
    """The workspace's runs that no other run started, oldest first."""
    from app.harness.workspace.harness_log import open_reader
    from app.harness.workspace.workspace import read_manifest

    read_manifest(workspace)  # one line when it is not a workspace
    if not (workspace / "harness.db").is_file():
        return []
    with open_reader(workspace / "harness.db") as log:
        runs = log.runs()
    inside: dict[str, int] = {}
    for r in runs:
        if r.parent_run_id:
            inside[r.parent_run_id] = inside.get(r.parent_run_id, 0) + 1
    return [
        RunEntry(
            r.run_id,
            r.kind,
            r.status,
            r.started_at,
            r.skills_version,
            _accuracy(r.summary.get("accuracy")),
            inside.get(r.run_id, 0),
        )
        for r in runs
        if not r.parent_run_id
    ]


def _accuracy(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def run(args: argparse.Namespace) -> int:
    if args.what == "runs":
        if args.workspace is None:
            raise UserError("list runs: give the workspace with -w DIR")
        runs = run_entries(args.workspace)
        if args.json:
            out_json([asdict(r) for r in runs])
            return 0
        for line in run_lines(runs, args.workspace):
            out(line)
        return 0
    entries = store_entries(args.what, args.store)
    if args.json:
        out_json([asdict(e) for e in entries])
        return 0
    for e in entries:
        size = f" ({e.questions} questions)" if e.questions is not None else ""
        hidden = " [hidden by --store's]" if e.hidden else ""
        text = " ".join(e.description.split())  # the first words; --json has it whole
        described = f": {text[:72]}{'…' if len(text) > 72 else ''}" if text else ""
        out(f"{e.name:<24} {e.source:<8}{size}{hidden}{described}")
    return 0


def run_lines(runs: list[RunEntry], workspace: Path) -> list[str]:
    if not runs:
        return [f"{workspace}: no runs yet"]
    lines = []
    for r in runs:
        accuracy = "" if r.accuracy is None else f" accuracy {r.accuracy:.3f}"
        version = f" {r.skills_version}" if r.skills_version else ""
        more = f" ({r.runs_inside} runs inside)" if r.runs_inside else ""
        started = (r.started_at or "")[:19]
        lines.append(
            f"{r.run_id:<24} {r.kind:<10} {r.status:<8} {started}{version}{accuracy}{more}"
        )
    return lines
