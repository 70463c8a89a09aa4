"""Workspaces and skills moving in and out of them: `init_workspace` (from a seed, or a folder of
Agent Skills), `promote` a trained version into the store as a seed, `import_skills` and
`export_skills` as Agent Skills (app/harness/skills/agent_skills.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from app import paths
from app.api._common import _workspace
from app.api.benchmarks import _warn_of_benchmark_defects
from app.api.store import _store, find_benchmark, find_seed, writable_store
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.errors import UserError
from app.harness.workspace import workspace as ws
from app.harness.workspace.store import Seed, load_benchmark, load_seed
from app.harness.workspace.writer_lock import WriterLock


@dataclass(frozen=True)
class WorkspaceInfo:
    root: Path
    seed: str
    questions: str
    skills_version: str
    prompts_version: str


def init_workspace(
    workspace: str | Path,
    *,
    questions: str,
    seed: str | None = None,
    store: str | Path | None = None,
    skills_from: str | Path | None = None,
    prompts_from: str = "sim-starter",
) -> WorkspaceInfo:
    """Create a workspace from a store seed (or a folder of Agent Skills) and a benchmark."""
    root = _workspace(workspace)
    _expect("questions", questions, isinstance(questions, str), "a benchmark's name")
    _expect("seed", seed, seed is None or isinstance(seed, str), "a seed's name or None")
    _expect("prompts_from", prompts_from, isinstance(prompts_from, str), "a seed's name")
    _expect("skills_from", skills_from, _is_path(skills_from, none=True), "a folder's path")
    store_dir = writable_store(store) if skills_from is not None else _store(store)
    bench = find_benchmark(store_dir, questions)  # a bad name refuses before anything is written
    if skills_from is not None:
        from app.harness.skills.agent_skills import import_skills

        seed = seed or root.name
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise UserError(f"{root}: already exists; choose another path (nothing imported)")
        target = import_skills(
            paths.absolute(skills_from), store_dir, seed, find_seed(store_dir, prompts_from)
        )
        logger.info("imported {} as seed {}", skills_from, target)
    if seed is not None and not seed:
        raise UserError("init: give a seed name, a folder of Agent Skills (skills_from) or none")
    chosen = _init_seed(store_dir, seed, bench, prompts_from)
    seed = chosen.name
    created = ws.init_workspace(root, chosen, bench)
    _warn_of_benchmark_defects(bench, chosen)
    logger.debug(  # the CLI prints it as its result, on stdout
        "created workspace {} (skills/v1, prompts/v1, questions {})",
        created.root,
        created.questions_ref,
    )
    return WorkspaceInfo(
        created.root, seed, created.questions_ref, created.skills_version, created.prompts_version
    )


def _init_seed(store: Path, seed: str | None, bench: Path, prompts_from: str) -> Seed:
    """The named seed, or without one the starter skills of the benchmark's task types
    (app/harness/workspace/starter.py), announced: the user did not name them."""
    if seed is not None:
        return load_seed(find_seed(store, seed))
    from app.harness.workspace.starter import starter_seed, starter_summary

    starter = starter_seed(load_benchmark(bench), load_seed(find_seed(store, prompts_from)))
    logger.info("{}", starter_summary(starter))
    return starter


@dataclass(frozen=True)
class PromoteResult:
    seed: Path  # the new seed's folder in the store
    agent_skills: tuple[Path, ...]  # the SKILL.md files written (agent_skills=OUT)


@dataclass(frozen=True)
class ImportResult:
    seed: Path  # the new seed's folder in the store


@dataclass(frozen=True)
class ExportSkillsResult:
    files: tuple[Path, ...]  # the SKILL.md files written


def promote(
    workspace: str | Path,
    version: str,
    *,
    eval_run: str,
    name: str,
    store: str | Path | None = None,
    agent_skills: str | Path | None = None,
) -> PromoteResult:
    """Copy skills `version` (justified by the finished eval run `eval_run`) into the store as
    seed `name`; with `agent_skills`, also write it as Agent Skills under that folder. All or
    nothing: the Agent Skills are removed again if the seed cannot be written."""
    from app.harness.skills.agent_skills import stage_version
    from app.harness.training.runner import promote as promote_to_store

    root = _workspace(workspace)
    _expect("version", version, isinstance(version, str), "a skills version, e.g. 'v3'")
    _expect("eval_run", eval_run, isinstance(eval_run, str), "an eval run's id")
    _expect("name", name, isinstance(name, str), "the new seed's name")
    _expect("agent_skills", agent_skills, _is_path(agent_skills, none=True), "a folder's path")
    store_dir = writable_store(store)
    written: list[Path] = []
    with WriterLock(root, "promote"):
        # the Agent Skills are written (and every check passed) before the seed is
        staged = None
        if agent_skills is not None:
            staged = stage_version(root, version, paths.absolute(agent_skills), eval_run, store_dir)
            written = staged.publish()
        try:
            target = promote_to_store(root, version, eval_run, name, store_dir)
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
    return PromoteResult(target, tuple(written))


def import_skills(
    skills_dir: str | Path,
    *,
    name: str,
    store: str | Path | None = None,
    prompts_from: str = "sim-starter",
) -> ImportResult:
    """A folder of Agent Skills (`<name>/SKILL.md`) becomes store seed `name`, with the prompts
    of seed `prompts_from` (unless the folder has prompts/system.md)."""
    from app.harness.skills.agent_skills import import_skills as import_to_store

    _expect("skills_dir", skills_dir, _is_path(skills_dir), "a folder's path")
    _expect("name", name, isinstance(name, str), "the new seed's name")
    _expect("prompts_from", prompts_from, isinstance(prompts_from, str), "a seed's name")
    store_dir = writable_store(store)
    target = import_to_store(
        paths.absolute(skills_dir), store_dir, name, find_seed(store_dir, prompts_from)
    )
    return ImportResult(target)


def export_skills(
    workspace: str | Path,
    *,
    out: str | Path,
    version: str = "best",
    eval_run: str | None = None,
    store: str | Path | None = None,
) -> ExportSkillsResult:
    """Write skills `version` ("best", or e.g. "v3") as `<out>/.agents/skills/<name>/SKILL.md`,
    with the accuracy of `eval_run` (default: the version's latest eval) in the metadata."""
    from app.harness.skills.agent_skills import export_version

    root = _workspace(workspace)
    _expect("out", out, _is_path(out), "a folder's path")
    _expect("version", version, isinstance(version, str), "'best' or a version, e.g. 'v3'")
    _expect("eval_run", eval_run, eval_run is None or isinstance(eval_run, str), "a run id")
    # reads only immutable, sha256-checked versions: no writer lock needed (like `report`)
    files = export_version(root, version, paths.absolute(out), eval_run, _store(store))
    return ExportSkillsResult(tuple(files))
