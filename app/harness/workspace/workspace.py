"""The workspace: manifest-versioned skills/prompts, frozen benchmark, log, reports
(docs/architecture.md#the-workspace-on-disk).

Versions are immutable. A new version is staged in `.staging/` inside the workspace and renamed
into place, and every JSON write is atomic, so a kill leaves the old state or the new one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger

from app.errors import DamagedFile, UserError
from app.harness.workspace import killpoints
from app.harness.workspace.atomic import (
    check_no_links,
    fsync_dir,
    read_json_object,
    write_json_atomic,
)
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.starter import STARTER_KEY
from app.harness.workspace.store import Benchmark, Seed, load_benchmark, skills_without_task_type
from app.secrets import scrub

MANIFEST_SCHEMA = 1
KINDS = ("skills", "prompts")
META_FILE = "_meta.json"
VERSION_RE = re.compile(r"^v(\d+)$")
# Every path a command writes inside a workspace (files, or the folders it writes into);
# none may be a symbolic link (check_workspace_links).
WRITTEN_ENTRIES = (
    "manifest.json",
    "checkpoint.json",
    "gate_pools.json",
    "baseline_cache.json",
    "model_io.json",
    "harness.db",
    "harness.db-wal",
    "harness.db-shm",
    "response_cache.db",
    "response_cache.db-wal",
    "response_cache.db-shm",
    "writer.lock",
    "train.lock",
    "skills",
    "prompts",
    "questions",
    "reports/steps",
    "reports/epochs",
    "analyses",
    "exports",
    "logs/skill-trainer.log",
    ".staging",
    ".tools",  # declared tools' sandbox and fixture copies (app/harness/tools/runtime.py)
)


@dataclass(frozen=True)
class WorkspacePaths:
    root: Path
    skills_version: str
    prompts_version: str
    questions_ref: str

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills" / self.skills_version

    @property
    def prompts_dir(self) -> Path:
        return self.root / "prompts" / self.prompts_version

    @property
    def questions_dir(self) -> Path:
        return self.root / "questions"

    @property
    def db(self) -> Path:
        return self.root / "harness.db"

    @property
    def cache_db(self) -> Path:
        return self.root / "response_cache.db"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint.json"

    @property
    def gate_pools(self) -> Path:
        return self.root / "gate_pools.json"

    @property
    def baseline_cache(self) -> Path:
        return self.root / "baseline_cache.json"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def analyses(self) -> Path:
        return self.root / "analyses"

    @property
    def log_file(self) -> Path:
        return self.root / "logs" / "skill-trainer.log"


def content_sha256(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()


def file_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def version_folder(folder: Path) -> Path:
    """`folder` (a `<workspace>/<kind>/vN`) if it is a real folder inside its workspace.

    A version is never read through a symbolic link: not the version folder, not the kind
    folder, and nothing that resolves outside the workspace."""
    folder = Path(folder)
    root = folder.parent.parent
    for p in (folder.parent, folder):
        if p.is_symlink():
            raise DamagedFile(
                f"{p}: is a symbolic link; versions are read only from real "
                "folders inside the workspace (remove the link)"
            )
    if not folder.is_dir():
        raise UserError(f"{folder}: no such version")
    if not folder.resolve().is_relative_to(root.resolve()):
        raise DamagedFile(f"{folder}: resolves outside the workspace; refusing to read it")
    return folder


def read_version_files(folder: Path) -> dict[str, str]:
    """A version's files, checked against its `_meta.json`: the listed files, no others, each
    matching its recorded sha256. A missing, extra, linked or edited file names itself."""
    folder = version_folder(folder)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise DamagedFile(f"{meta_path}: missing; the version cannot be checked")
    try:
        meta = read_json_object(meta_path, "version metadata")
    except UserError as e:
        raise DamagedFile(str(e)) from None
    listed, recorded = meta.get("files"), meta.get("file_sha256") or {}
    if (
        not isinstance(listed, list)
        or not all(isinstance(n, str) for n in listed)
        or not isinstance(recorded, dict)
        or not isinstance(meta.get("sha256"), str)
    ):
        raise DamagedFile(
            f"{meta_path}: keys 'files' and 'sha256' must be a list of names and a hex digest"
        )
    files: dict[str, str] = {}
    for name in listed:
        p = folder / name
        if "/" in name or name.startswith(".") or p.is_symlink():
            raise DamagedFile(
                f"{p}: is a symbolic link or not a plain name; version files must be real files"
            )
        if not p.is_file():
            raise DamagedFile(f"{p}: missing (listed in {META_FILE})")
        try:
            files[name] = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DamagedFile(f"{p}: not valid UTF-8") from None
        if name in recorded and file_sha256(files[name]) != recorded[name]:
            raise DamagedFile(
                f"{p}: does not match the sha256 recorded in {META_FILE} "
                "(edited after the version was written?)"
            )
    extra = sorted(p.name for p in folder.iterdir() if p.name != META_FILE and p.name not in files)
    if extra:
        raise DamagedFile(
            f"{folder / extra[0]}: not part of the version (not listed in {META_FILE})"
        )
    if content_sha256(files) != meta["sha256"]:
        raise DamagedFile(
            f"{folder}: files do not match the sha256 recorded in {META_FILE} "
            f"(one of {', '.join(sorted(files))} was edited after the version "
            "was written)"
        )
    return files


def read_manifest(root: Path) -> dict[str, Any]:
    path = Path(root) / "manifest.json"
    if not path.is_file():
        raise UserError(f"{root}: not a workspace (no manifest.json)")
    manifest = read_json_object(path, "manifest")
    schema = manifest.get("schema", 0)
    if not isinstance(schema, int):
        raise UserError(f"{path}: key 'schema' must be an integer (got {schema!r})")
    if schema > MANIFEST_SCHEMA:
        raise UserError(
            f"{path}: schema {schema} is newer than this skill-trainer supports "
            f"({MANIFEST_SCHEMA}); upgrade skill-trainer"
        )
    current = manifest.get("current")
    if not isinstance(current, dict):
        raise UserError(f"{path}: key 'current' must be an object")
    for key in ("skills", "prompts", "questions"):
        if not isinstance(current.get(key), str):
            raise UserError(f"{path}: key 'current.{key}' missing or not a string")
    return manifest


def check_workspace_links(root: Path) -> None:
    """Refuse a workspace where a path a command writes (WRITTEN_ENTRIES) is a symbolic link:
    a linked `analyses/` would take `eval`'s report elsewhere. Checked by every writer before
    it writes (app.harness.workspace.writer_lock.WriterLock.acquire)."""
    for entry in WRITTEN_ENTRIES:
        check_no_links(root, Path(root) / entry)


def resolve_paths(root: Path) -> WorkspacePaths:
    root = Path(root)
    current = read_manifest(root)["current"]
    return WorkspacePaths(
        root=root,
        skills_version=current["skills"].split("/")[-1],
        prompts_version=current["prompts"].split("/")[-1],
        questions_ref=current["questions"],
    )


def list_versions(root: Path, kind: str) -> list[str]:
    folder = Path(root) / kind
    found = (
        [
            (int(m.group(1)), p.name)
            for p in folder.iterdir()
            if p.is_dir() and (m := VERSION_RE.match(p.name))
        ]
        if folder.is_dir()
        else []
    )
    return [name for _, name in sorted(found)]


def version_number(version: str) -> int:
    m = VERSION_RE.match(version.split("/")[-1])
    if not m:
        raise UserError(f"not a version name: {version!r} (expected vN)")
    return int(m.group(1))


def read_meta(root: Path, kind: str, version: str) -> dict[str, Any]:
    path = Path(root) / kind / version / META_FILE
    if not path.is_file():
        raise DamagedFile(f"{path}: missing; the version cannot be checked")
    try:
        return read_json_object(path, "version metadata")
    except UserError as e:
        raise DamagedFile(str(e)) from None


def advance_version(
    root: Path,
    kind: str,
    files: dict[str, str],
    *,
    source: str,
    parent: str | None,
    description: str,
) -> str:
    """Create `kind/v{N+1}` holding `files`; returns the new version name."""
    if kind not in KINDS:
        raise ValueError(f"unknown version kind {kind!r}")
    root = Path(root)
    existing = list_versions(root, kind)
    version = f"v{version_number(existing[-1]) + 1 if existing else 1}"
    files = {name: scrub(text) for name, text in files.items()}
    meta = {
        "source": source,
        "parent": parent,
        "description": description,
        "at": now_iso(),
        "sha256": content_sha256(files),
        "files": sorted(files),
        "file_sha256": {name: file_sha256(text) for name, text in sorted(files.items())},
    }
    staging = _stage_folder(root, files, meta)
    target = root / kind / version
    target.parent.mkdir(exist_ok=True)
    os.rename(staging, target)  # atomic on one filesystem; fails if the target exists
    fsync_dir(target.parent)
    killpoints.reached("version")
    return version


def _stage_folder(root: Path, files: dict[str, str], meta: dict[str, Any]) -> Path:
    staging = root / ".staging" / uuid.uuid4().hex
    staging.mkdir(parents=True)
    try:
        for name, text in files.items():
            if "/" in name or "\\" in name or name.startswith(".") or name == META_FILE:
                raise UserError(f"refusing version file name {name!r}")
            with open(staging / name, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        write_json_atomic(staging / META_FILE, meta)
        fsync_dir(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def clean_staging(root: Path) -> int:
    """Remove staging leftovers of a killed writer. Only a writer may call this."""
    staging = Path(root) / ".staging"
    leftovers = list(staging.iterdir()) if staging.is_dir() else []
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)
    temps = list(Path(root).rglob(".*.tmp"))  # write_text_atomic's temp files of a killed run
    for p in temps:
        p.unlink(missing_ok=True)
    return len(leftovers)


def update_manifest(
    root: Path, *, skills: str | None = None, prompts: str | None = None, run_id: str | None = None
) -> dict[str, Any]:
    manifest = read_manifest(root)
    if skills:
        manifest["current"]["skills"] = f"skills/{skills.split('/')[-1]}"
    if prompts:
        manifest["current"]["prompts"] = f"prompts/{prompts.split('/')[-1]}"
    manifest.setdefault("history", []).append(
        {
            "run_id": run_id,
            "skills": manifest["current"]["skills"],
            "prompts": manifest["current"]["prompts"],
            "at": now_iso(),
        }
    )
    write_json_atomic(Path(root) / "manifest.json", manifest)
    return manifest


def update_best(
    root: Path, *, skills: str, prompts: str, val_acc: float, run_id: str, epoch: int
) -> None:
    manifest = read_manifest(root)
    manifest["best"] = {
        "skills": f"skills/{skills.split('/')[-1]}",
        "prompts": f"prompts/{prompts.split('/')[-1]}",
        "val_acc": val_acc,
        "run_id": run_id,
        "epoch": epoch,
    }
    write_json_atomic(Path(root) / "manifest.json", manifest)


def read_best(root: Path) -> dict[str, Any] | None:
    return read_manifest(root).get("best")


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    write_json_atomic(Path(root) / "manifest.json", manifest)


def init_workspace(
    root: Path, seed: Seed, benchmark_path: Path, lock: Any = None, *, announce: bool = True
) -> WorkspacePaths:
    """Create a workspace from a seed and a benchmark; all-or-nothing.

    `lock` (a WriterLock) is moved onto the new workspace before it becomes visible.
    `announce=False` for a scratch copy (`estimate`'s): the user saw init's warnings once.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: exists and is not a folder; choose another path")
    if root.exists() and any(root.iterdir()):
        what = "a workspace" if (root / "manifest.json").exists() else "a non-empty folder"
        raise UserError(
            f"{root}: already exists ({what}); choose another path or use "
            "`train --fresh` to archive and restart"
        )
    benchmark = load_benchmark(benchmark_path)  # validate before writing anything
    parent = root.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # e.g. a file where a folder of the path should be
        raise UserError(f"{parent}: cannot create the folder ({e.strerror})") from None
    if not os.access(parent, os.W_OK):
        raise UserError(f"{parent}: folder is not writable")
    building = parent / f".{root.name}.init-{uuid.uuid4().hex[:8]}"
    try:
        _populate(building, seed, benchmark_path, benchmark.name)
        if lock is not None:
            lock.move_into(building)
        if root.exists():
            root.rmdir()
        os.rename(building, root)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    HarnessLog(root / "harness.db").close()
    if announce:
        _warn_of_unread_skills(seed, benchmark)
    return resolve_paths(root)


def _warn_of_unread_skills(seed: Seed, benchmark: Benchmark) -> None:
    unread = skills_without_task_type(seed, benchmark)
    if unread:
        logger.warning(
            "skills {} match no task type of questions {} ({}): only skill_mode = "
            '"progressive" shows them; to use one for a task type, map it in the skills '
            "folder's seed.toml [skills] (or rename the file) and init again",
            ", ".join(unread),
            benchmark.name,
            ", ".join(benchmark.task_types),
        )


def _populate(building: Path, seed: Seed, benchmark_path: Path, questions_name: str) -> None:
    building.mkdir()
    source = f"seed:{seed.name}"
    advance_version(
        building,
        "skills",
        seed.skills,
        source=source,
        parent=None,
        description=f"initial skills from seed {seed.name}",
    )
    advance_version(
        building,
        "prompts",
        seed.prompts,
        source=source,
        parent=None,
        description=f"initial prompts from seed {seed.name}",
    )
    _freeze_benchmark(benchmark_path, building / "questions")
    for sub in ("reports/steps", "reports/epochs", "analyses", "logs"):
        (building / sub).mkdir(parents=True)
    shutil.rmtree(building / ".staging", ignore_errors=True)
    (building / "writer.lock").touch()  # the writer lock's file (app.harness.workspace.writer_lock)
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "seed": seed.name,
        # the seed's licence travels with the workspace: export reads it (None: none declared)
        "seed_license": seed.licence,
        "created_at": now_iso(),
        "current": {"skills": "skills/v1", "prompts": "prompts/v1", "questions": questions_name},
        "best": None,
        "history": [],
    }
    if seed.meta.get(STARTER_KEY):  # built from the benchmark: `train --fresh` builds it again
        manifest[STARTER_KEY] = seed.meta[STARTER_KEY]
    write_json_atomic(building / "manifest.json", manifest)


def _freeze_benchmark(source: Path, target: Path) -> None:
    """Copy the benchmark; secret values from the environment become keyed placeholders."""
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".toml", ".json", ".md"):
            text = path.read_text(encoding="utf-8")
            clean = scrub(text)
            if clean != text:
                path.write_text(clean, encoding="utf-8")


def archive_workspace(root: Path) -> Path:
    root = Path(root)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = root.parent / f"{root.name}.archived-{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = root.parent / f"{root.name}.archived-{stamp}-{n}"
    os.rename(root, target)
    return target


def train_start_mode(root: Path, *, resume: bool, fresh: bool) -> str:
    """Decide between 'resume', 'fresh' and 'start' (three workspace states,
    docs/architecture.md#the-workspace-on-disk)."""
    if resume and fresh:
        raise UserError("--resume and --fresh (resume, fresh) exclude each other: pick one")
    has_progress = (Path(root) / "checkpoint.json").is_file()
    if resume:
        if not has_progress:
            raise UserError(
                f"{root}: no checkpoint.json: refusing to silently retrain from "
                "scratch: drop --resume (resume=False) to start, or pass --fresh (fresh=True) "
                "to archive and restart"
            )
        return "resume"
    if fresh:
        return "fresh"
    if has_progress:
        raise UserError(
            f"{root}: this workspace already has training progress; pass --resume "
            "(resume=True) to continue it or --fresh (fresh=True) to archive it and start "
            "from the seed"
        )
    return "start"
