"""The store: seeds (skills + prompts) and benchmarks (questions), validated before use.

Loading checks everything before anything is written, and a bad line is reported as
`path:line: reason`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.workspace.atomic import check_no_links
from app.harness.workspace.benchmark_format import (
    TASK_TYPE_RE,
    CheckerDefaults,
    parse_meta,
    row_to_question,
)
from app.harness.workspace.spdx import LICENCE_KEY, checked_expression
from app.toml_compat import tomllib
from core.evolution.budget import DEFAULT_SKILL_FILE, resolve_skill_file
from core.types import Question

SKILLS_SIDECAR = "_skills.json"


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    split: dict[str, float]
    seed: int
    task_types: tuple[str, ...]
    questions: tuple[Question, ...]
    content_hash: str
    # How to find an answer in a reply without an `ANSWER:` line, per task type ("*": all).
    answer_fallbacks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The raw `tools`, `faults` and `fixtures` tables (parsed by app/harness/tools/spec.py)
    tool_tables: dict[str, Any] = field(default_factory=dict)
    # `family_units = "independent"`: a family's units are separate draws, so the gate counts
    # each unit (app/harness/training/gate_ladder.py); the split keeps families whole either way
    independent_units: bool = False


@dataclass(frozen=True)
class Seed:
    name: str
    description: str
    skills: dict[str, str]
    prompts: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def licence(self) -> str | None:
        """The SPDX expression of `license` in seed.toml (checked by load_seed)."""
        value = self.meta.get(LICENCE_KEY)
        return value if isinstance(value, str) else None


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: missing") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: invalid TOML: {e}") from None


def check_store_name(name: object, label: str, kind: str = "seed") -> str:
    """A seed or benchmark name names one folder of the store: never a path ('../x', '/x')."""
    if not isinstance(name, str) or not TASK_TYPE_RE.fullmatch(name):
        raise UserError(
            f"{label} {name!r}: a {kind} name is 1-64 letters, digits, '_', '-' or "
            "'.', starting with a letter or digit (it names a folder)"
        )
    return name


def benchmark_dir(store: Path, name: str) -> Path:
    path = store / "questions" / check_store_name(name, "questions", "benchmark")
    if not (path / "questions.jsonl").is_file():
        known = benchmark_names(store)
        raise UserError(f"unknown benchmark '{name}' in {store / 'questions'} (known: {known})")
    return path


def seed_names(store: Path) -> list[str]:
    """The seeds of `store`: its folders `seeds/<name>/` (hidden staging folders left out)."""
    return sorted(p.name for p in (store / "seeds").glob("*") if _named_folder(p))


def benchmark_names(store: Path) -> list[str]:
    """The benchmarks of `store`: its folders `questions/<name>/` with a questions.jsonl."""
    return sorted(
        p.name
        for p in (store / "questions").glob("*")
        if _named_folder(p) and (p / "questions.jsonl").is_file()
    )


def _named_folder(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith(".")


def seed_dir(store: Path, name: str) -> Path:
    path = store / "seeds" / check_store_name(name, "seed")
    if not path.is_dir():
        known = seed_names(store)
        raise UserError(f"unknown seed '{name}' in {store / 'seeds'} (known: {known})")
    return path


def skills_without_task_type(seed: Seed, benchmark: Benchmark) -> list[str]:
    """The seed's skill files that no task type of the benchmark reads (`<task type>.md`;
    the shared default is read by every other type). Outside progressive mode no question
    ever sees them, and no edit ever reaches them."""
    read = {resolve_skill_file(t, seed.skills) for t in benchmark.task_types}
    unread = set(seed.skills) - read - {DEFAULT_SKILL_FILE}
    return sorted(f for f in unread if f.endswith(".md"))


def load_benchmark(path: Path) -> Benchmark:
    meta_path = path / "benchmark.toml"
    meta = read_toml(meta_path)
    parsed = parse_meta(meta, str(meta_path))
    jsonl = path / "questions.jsonl"
    raw = jsonl.read_bytes()
    questions = parse_questions(raw, jsonl, parsed.checker)
    split = meta.get("split", {"diagnosis": 0.5, "validation": 0.25, "test": 0.25})
    _check_split(split, meta_path)
    declared = tuple(parsed.task_types)
    found = sorted({q.task_type for q in questions})
    if declared and sorted(declared) != found:
        raise UserError(
            f"{meta_path}: task_types {sorted(declared)} do not match the questions' "
            f"task types {found}"
        )
    return Benchmark(
        name=parsed.name if parsed.name is not None else path.name,
        description=parsed.description,
        split={k: float(v) for k, v in split.items()},
        seed=parsed.seed,
        task_types=tuple(found),
        questions=tuple(questions),
        content_hash=hashlib.sha256(raw + json.dumps(meta, sort_keys=True).encode()).hexdigest(),
        answer_fallbacks=_answer_fallbacks(meta.get("answer_fallbacks"), meta_path, found),
        tool_tables={k: meta[k] for k in ("tools", "faults", "fixtures") if k in meta},
        independent_units=parsed.family_units == "independent",
    )


def _answer_fallbacks(value: Any, where: Path, task_types: list[str]) -> dict[str, tuple[str, ...]]:
    """`answer_fallbacks = [...]` (every task type) or `[answer_fallbacks] <task type> = [...]`."""
    from core.checkers import ANSWER_FALLBACKS

    if value is None:
        return {}
    table = {"*": value} if isinstance(value, list) else value
    if not isinstance(table, dict):
        raise UserError(f"{where}: key 'answer_fallbacks' must be a list or a table of lists")
    out: dict[str, tuple[str, ...]] = {}
    for task_type, names in table.items():
        if task_type != "*" and task_type not in task_types:
            raise UserError(f"{where}: answer_fallbacks names unknown task type {task_type!r}")
        if not isinstance(names, list) or any(n not in ANSWER_FALLBACKS for n in names):
            raise UserError(
                f"{where}: answer_fallbacks.{task_type} must be a list of "
                f"{list(ANSWER_FALLBACKS)} (got {names!r})"
            )
        out[task_type] = tuple(names)
    return out


def _check_split(split: Any, where: Path) -> None:
    keys = {"diagnosis", "validation", "test"}
    if not isinstance(split, dict) or set(split) != keys:
        raise UserError(f"{where}: key 'split' needs exactly {sorted(keys)}")
    values = list(split.values())
    if any(not isinstance(v, int | float) or v <= 0 for v in values) or abs(sum(values) - 1) > 1e-6:
        raise UserError(f"{where}: key 'split' ratios must be > 0 and sum to 1 (got {split})")


def parse_questions(
    raw: bytes, path: Path, defaults: CheckerDefaults | None = None
) -> list[Question]:
    """questions.jsonl's rows (app/harness/workspace/benchmark_format.py), checked whole."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    defaults = defaults or CheckerDefaults()
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        q = row_to_question(parse_row(line, f"{path}:{lineno}"), defaults, f"{path}:{lineno}")
        if q.question_id in seen:
            raise UserError(
                f"{path}:{lineno}: duplicate question_id '{q.question_id}' "
                f"(first on line {seen[q.question_id]})"
            )
        seen[q.question_id] = lineno
        questions.append(q)
    if not questions:
        raise UserError(f"{path}: no questions")
    _check_units(questions, path, seen)
    return questions


def parse_row(line: bytes, where: str) -> dict[str, Any]:
    """One line of questions.jsonl as a JSON object (its fields are checked by the format)."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not valid UTF-8 ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected a JSON object")
    return obj


def _check_units(questions: list[Question], path: Path, lines: dict[str, int]) -> None:
    units: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        units[q.unit_id].append(q)
    for unit_id, members in units.items():
        where = f"{path}:{lines[members[-1].question_id]}"
        if len(members) > 2:
            raise UserError(f"{where}: unit '{unit_id}' has {len(members)} questions (max 2)")
        if len({m.task_type for m in members}) > 1:
            raise UserError(f"{where}: unit '{unit_id}' mixes task types")
        if len({m.family for m in members}) > 1:
            raise UserError(f"{where}: unit '{unit_id}' is split across families")


def read_sidecar(files: dict[str, str], where: str = SKILLS_SIDECAR) -> dict[str, dict[str, Any]]:
    """The per-file frontmatter of a skills version or seed ({} when it has none).

    Imported Agent Skills keep their frontmatter here (app/harness/skills/agent_skills.py).
    """
    text = files.get(SKILLS_SIDECAR)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"{where}:1: must map skill file names to frontmatter objects")
    return data


def write_sidecar(entries: dict[str, dict[str, Any]]) -> str:
    return json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_seed(path: Path) -> Seed:
    meta = read_toml(path / "seed.toml")
    skills = _read_md_folder(path / "skills")
    sidecar = (
        path / "skills" / SKILLS_SIDECAR
    )  # imported frontmatter (app/harness/skills/agent_skills.py)
    if sidecar.is_file() and not sidecar.is_symlink():
        skills[SKILLS_SIDECAR] = sidecar.read_text(encoding="utf-8")
        read_sidecar(skills, str(sidecar))
    # the seed's own licence (docs/curation.md#licences), checked before anything uses it
    checked_expression(meta.get(LICENCE_KEY), f"{path / 'seed.toml'}: {LICENCE_KEY}")
    prompts = _read_md_folder(path / "prompts")
    if "system.md" not in prompts:
        raise UserError(f"{path / 'prompts' / 'system.md'}: missing (every seed needs one)")
    return Seed(
        name=str(meta.get("name", path.name)),
        description=str(meta.get("description", "")),
        skills=skills,
        prompts=prompts,
        meta=meta,
    )


def _read_md_folder(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise UserError(f"{folder}: missing folder")
    files = {}
    for p in sorted(folder.glob("*.md")):
        if p.is_symlink():
            raise UserError(f"{p}: symlinks are not allowed in a seed (copy the file instead)")
        try:
            files[p.name] = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{p}: not valid UTF-8") from None
    if not files:
        raise UserError(f"{folder}: no .md files")
    return files


def promote_to_seed(
    store: Path,
    name: str,
    skills: dict[str, str],
    prompts: dict[str, str],
    provenance: dict[str, Any],
    licence: str | None = None,
) -> Path:
    """Write a workspace's (verified) version files as a new seed; commit when the store is a
    git repo. Only file contents are written: nothing is copied through a link. `licence`:
    the seed's SPDX `license` (the workspace's seed's)."""
    check_store_name(name, "--name")
    checked_expression(licence, f"manifest.json: seed_license (promoting seed {name})")
    target = check_no_links(store, store / "seeds" / name)
    if os.path.lexists(target):
        raise UserError(f"{target}: seed '{name}' already exists")
    staging = store / "seeds" / f".staging-{name}-{uuid.uuid4().hex[:8]}"
    try:
        _write_promoted(staging, name, skills, prompts, provenance, licence)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _commit_store(store, target, f"promote seed {name}")
    return target


def _write_promoted(
    staging: Path,
    name: str,
    skills: dict[str, str],
    prompts: dict[str, str],
    provenance: dict[str, Any],
    licence: str | None,
) -> None:
    for sub, files in (("skills", skills), ("prompts", prompts)):
        (staging / sub).mkdir(parents=True)
        for file_name, text in files.items():
            (staging / sub / file_name).write_text(text, encoding="utf-8")
    lines = [
        f'name = "{name}"',
        f'description = "promoted {datetime.now(UTC).isoformat()}"',
        *([f"{LICENCE_KEY} = {json.dumps(licence)}"] if licence is not None else []),
        "",
        "[promoted_from]",
    ]
    lines += [f"{k} = {json.dumps(str(v))}" for k, v in sorted(provenance.items())]
    (staging / "seed.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _commit_store(store: Path, target: Path, message: str) -> None:
    import git

    try:
        repo = git.Repo(store)  # only a store that is itself a repository
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return
    if repo.working_tree_dir is None:
        return  # a bare repository has no files to commit
    repo.index.add([str(target.resolve().relative_to(Path(repo.working_tree_dir).resolve()))])
    repo.index.commit(message)
