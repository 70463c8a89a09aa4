"""Agent Skills (`<name>/SKILL.md`) in and out of skill-trainer.

A skill is a folder holding `SKILL.md`: YAML frontmatter (`name`, `description`, optional
`license`, `compatibility`, `metadata`, `allowed-tools`) then markdown instructions, with
optional `scripts/`, `references/` and `assets/` beside it.

Inside skill-trainer a skill's body is the task type's skill file (`<task_type>.md`, the file
core/evolution/budget.py resolve_skill_file picks) and its frontmatter is kept, per file, in the
version's sidecar `_skills.json`. The sidecar is a version file like any other, so its sha256
is checked on every load and version diffs show description changes like body changes; edits
(core/evolution/edits.py check_target) can only ever target `.md` files, never the sidecar.

Import validates everything before writing anything and names `file:line` for each problem;
export writes a tree any client discovers at `<out>/.agents/skills/<name>/SKILL.md`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from loguru import logger

from app.errors import UserError
from app.harness.workspace.atomic import check_no_links
from app.harness.workspace.benchmark_format import TASK_TYPE_RE
from app.harness.workspace.harness_log import HarnessLog, RunRecord, RunStatus
from app.harness.workspace.ids import check_run_id, check_version
from app.harness.workspace.spdx import LICENCE_KEY
from app.harness.workspace.store import (
    SKILLS_SIDECAR,
    _commit_store,
    check_store_name,
    load_seed,
    read_sidecar,
    read_toml,
    write_sidecar,
)
from app.harness.workspace.workspace import read_best, read_manifest, read_meta, read_version_files
from core.evolution.budget import resolve_skill_file
from core.evolution.edits import strip_momentum
from core.stats import wilson_interval

SIDECAR = SKILLS_SIDECAR
SKILL_FILE = "SKILL.md"
RESOURCE_DIRS = ("scripts", "references", "assets")
NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
KNOWN_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_SKILL_BYTES = 1_000_000
# The format's fields are short (name 64, description 1024, compatibility 500 characters);
# this bounds what the YAML parser is ever given, whatever the metadata holds.
MAX_FRONTMATTER_BYTES = 64_000


@dataclass(frozen=True)
class ParsedSkill:
    folder: Path
    frontmatter: dict[str, Any]
    body: str
    resources: tuple[str, ...] = field(default_factory=tuple)  # relative paths


# --------------------------------------------------------------------------- parsing


def _key_line(lines: list[str], key: str) -> int:
    """1-based line of `key:` inside the frontmatter lines (which start at file line 2)."""
    for i, line in enumerate(lines):
        if re.match(rf"{re.escape(key)}\s*:", line):
            return i + 2
    return 1


class _PlainYamlLoader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]  # untyped yaml
    """SafeLoader without anchors and aliases: a few lines of nested aliases ("billion
    laughs") expand to gigabytes once a value is used, and the Agent Skills format needs
    neither, so they are refused at the event that names them, before any node is built."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            kind = "alias" if isinstance(event, yaml.AliasEvent) else "anchor"
            raise yaml.MarkedYAMLError(
                problem=f"YAML {kind} '{event.anchor}' (anchors and aliases are not allowed "
                "in a skill's frontmatter; write the value out)",
                problem_mark=event.start_mark,
            )
        return super().compose_node(parent, index)


def _load_frontmatter(fm_lines: list[str], where: Path) -> Any:
    """The frontmatter's YAML, bounded in size and free of aliases (_PlainYamlLoader)."""
    source = "\n".join(fm_lines)
    size = len(source.encode("utf-8"))
    if size > MAX_FRONTMATTER_BYTES:
        raise UserError(
            f"{where}:2: frontmatter is {size} bytes (max {MAX_FRONTMATTER_BYTES}); "
            "keep long text in the body"
        )
    try:
        return yaml.load(source, Loader=_PlainYamlLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UserError(f"{where}:{line}: bad YAML in frontmatter: {problem}") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise UserError(f"{where}:1: bad value in frontmatter: {str(e).split(':')[0]}") from None
    except RecursionError:
        raise UserError(f"{where}:1: frontmatter nested too deeply") from None


def split_frontmatter(text: str, where: Path) -> tuple[dict[str, Any], str, list[str]]:
    """(frontmatter, body, frontmatter lines); a malformed block names `file:line`."""
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise UserError(f"{where}:1: no YAML frontmatter (the file must start with a '---' line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise UserError(f"{where}:1: frontmatter is not closed by a '---' line") from None
    fm_lines = lines[1:end]
    data = _load_frontmatter(fm_lines, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{where}:2: frontmatter must be a YAML mapping of keys to values")
    body = "\n".join(lines[end + 1 :])
    return data, body.lstrip("\n"), fm_lines


def validate_frontmatter(
    data: dict[str, Any], where: Path, fm_lines: list[str], folder_name: str | None
) -> dict[str, Any]:
    """Check each field against the Agent Skills format; returns the kept frontmatter."""

    def fail(key: str, reason: str) -> UserError:
        return UserError(f"{where}:{_key_line(fm_lines, key)}: {reason}")

    name = data.get("name")
    if name is None:
        raise fail("name", "missing 'name'")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or len(name) > MAX_NAME:
        raise fail(
            "name",
            f"'name' {str(name)[:80]!r} must be 1-{MAX_NAME} lowercase letters, "
            "digits and single hyphens (kebab-case), not starting or ending with '-'",
        )
    if folder_name is not None and name != folder_name:
        raise fail("name", f"'name' {name!r} differs from its folder {folder_name!r}")
    desc = data.get("description")
    if desc is None:
        raise fail("description", "missing 'description'")
    if not isinstance(desc, str) or not desc.strip():
        raise fail("description", "'description' must be a non-empty string")
    if len(desc) > MAX_DESCRIPTION:
        raise fail(
            "description", f"'description' is {len(desc)} characters (max {MAX_DESCRIPTION})"
        )
    for key in ("license", "allowed-tools"):
        if key in data and not isinstance(data[key], str):
            raise fail(key, f"'{key}' must be a string")
    if "compatibility" in data:
        comp = data["compatibility"]
        if not isinstance(comp, str) or not comp.strip() or len(comp) > MAX_COMPATIBILITY:
            raise fail(
                "compatibility",
                f"'compatibility' must be a non-empty string of at most "
                f"{MAX_COMPATIBILITY} characters",
            )
    if "metadata" in data:
        meta = data["metadata"]
        if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
        ):
            raise fail("metadata", "'metadata' must be a mapping of string keys to string values")
    unknown = [k for k in data if k not in KNOWN_FIELDS]
    if unknown:
        raise fail(
            str(unknown[0]),
            f"unknown frontmatter field {str(unknown[0])[:80]!r} "
            f"(allowed: {', '.join(KNOWN_FIELDS)})",
        )
    return {k: data[k] for k in KNOWN_FIELDS if k in data}


def _real_file(path: Path, root: Path) -> None:
    if path.is_symlink():
        raise UserError(f"{path}: symbolic links are not imported (copy the file instead)")
    if not path.resolve().is_relative_to(root.resolve()):
        raise UserError(f"{path}: resolves outside {root}; refusing it")


def parse_skill_folder(folder: Path) -> ParsedSkill:
    skill_md = folder / SKILL_FILE
    _real_file(folder, folder.parent)
    if not skill_md.is_file():
        raise UserError(f"{skill_md}: missing (every skill folder needs a SKILL.md)")
    _real_file(skill_md, folder)
    raw = skill_md.read_bytes()
    if len(raw) > MAX_SKILL_BYTES:
        raise UserError(f"{skill_md}: {len(raw)} bytes (max {MAX_SKILL_BYTES})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{skill_md}: not valid UTF-8 ({e.reason})") from None
    data, body, fm_lines = split_frontmatter(text, skill_md)
    frontmatter = validate_frontmatter(data, skill_md, fm_lines, folder.name)
    resources: list[str] = []
    for sub in RESOURCE_DIRS:
        top = folder / sub
        if not top.exists():
            continue
        _real_file(top, folder)
        for path in sorted(top.rglob("*")):
            _real_file(path, folder)
            if path.is_file():
                resources.append(path.relative_to(folder).as_posix())
    return ParsedSkill(
        folder=folder, frontmatter=frontmatter, body=body, resources=tuple(resources)
    )


def parse_skills_dir(src: Path) -> list[ParsedSkill]:
    src = Path(src)
    if not src.is_dir():
        raise UserError(f"{src}: not a folder of skills")
    folders = sorted(p for p in src.iterdir() if p.is_dir() and not p.name.startswith("."))
    skills = [parse_skill_folder(p) for p in folders if (p / SKILL_FILE).exists() or p.is_symlink()]
    for p in folders:
        if not (p / SKILL_FILE).exists() and not p.is_symlink() and p.name != "prompts":
            logger.warning("{}: no {}; not a skill, skipped", p, SKILL_FILE)
    if not skills:
        raise UserError(f"{src}: no skills (expected <name>/{SKILL_FILE} folders)")
    return skills


# ------------------------------------------------------------------ skill files and names


def skill_files(files: dict[str, str]) -> list[str]:
    return sorted(n for n in files if n.endswith(".md"))


def default_name(file_name: str) -> str:
    stem = file_name[:-3] if file_name.endswith(".md") else file_name
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:MAX_NAME].strip("-")
    return name or "skill"


def default_description(file_name: str, text: str) -> str:
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    stem = file_name[:-3]
    return f"{title or stem}: instructions for {stem} tasks."[:MAX_DESCRIPTION]


def catalog(files: dict[str, str]) -> list[tuple[str, str, str]]:
    """(file, name, description) for each skill file, as progressive mode lists them."""
    side = read_sidecar(files)
    out = []
    for name in skill_files(files):
        entry = side.get(name, {})
        skill_name = entry.get("name") if isinstance(entry.get("name"), str) else None
        desc = entry.get("description") if isinstance(entry.get("description"), str) else None
        out.append(
            (name, skill_name or default_name(name), desc or default_description(name, files[name]))
        )
    return out


def body_of(text: str) -> str:
    """A skill file without our internals (core/evolution/edits.py `strip_momentum`)."""
    return strip_momentum(text).rstrip() + "\n"


# --------------------------------------------------------------------------- import


def _mapping(src: Path, skills: list[ParsedSkill]) -> dict[str, str]:
    """skill name -> task type: `[skills]` in `<src>/seed.toml`, else the skill's own name."""
    table: dict[str, Any] = {}
    toml_path = src / "seed.toml"
    if toml_path.is_file():
        table = read_toml(toml_path).get("skills", {})
        if not isinstance(table, dict):
            raise UserError(
                f"{toml_path}: key 'skills' must be a table of skill name = \"task type\""
            )
    names = {s.frontmatter["name"] for s in skills}
    out: dict[str, str] = {}
    for key, value in table.items():
        if key not in names:
            raise UserError(f"{toml_path}: key 'skills.{key}' names no skill in {src}")
        if not isinstance(value, str) or not TASK_TYPE_RE.fullmatch(value):
            raise UserError(
                f"{toml_path}: key 'skills.{key}' must be a task type (1-64 letters, "
                "digits, '_', '-' or '.', starting with a letter or digit)"
            )
        out[key] = value
    for s in skills:
        out.setdefault(s.frontmatter["name"], s.frontmatter["name"])
    seen: dict[str, str] = {}
    for name, task_type in sorted(out.items()):
        if task_type in seen:
            raise UserError(
                f"{src}: skills {seen[task_type]!r} and {name!r} both map to task "
                f"type {task_type!r} (set one apart in seed.toml [skills])"
            )
        seen[task_type] = name
    return out


def import_skills(src: Path, store: Path, seed_name: str, prompts_from: Path) -> Path:
    """A folder of Agent Skills becomes `store/seeds/<seed_name>`; all-or-nothing."""
    src = Path(src)
    check_store_name(seed_name, "--name")
    skills = parse_skills_dir(src)
    mapping = _mapping(src, skills)
    prompts = _prompts(src, prompts_from)
    licence = _seed_licence(src, skills, prompts_from)
    target = check_no_links(Path(store), Path(store) / "seeds" / seed_name)
    if os.path.lexists(target):
        raise UserError(f"{target}: seed '{seed_name}' already exists")
    staging = Path(store) / "seeds" / f".staging-{seed_name}-{uuid.uuid4().hex[:8]}"
    try:
        _write_seed(staging, src, seed_name, skills, mapping, prompts, licence)
        load_seed(staging)  # the seed loads as any other before it becomes visible
        os.rename(staging, target)
    except BaseException:
        _rmtree(staging)
        raise
    _commit_store(Path(store), target, f"import skills {seed_name}")
    return target


def _seed_licence(src: Path, skills: list[ParsedSkill], prompts_from: Path) -> str | None:
    """The imported seed's `license`, which covers its prompts and any skill without one: the
    --prompts-from seed's when the prompts come from there and every skill declares its own;
    else none (an export then needs one declared, docs/curation.md#licences)."""
    if (src / "prompts" / "system.md").is_file():
        return None  # the folder's own prompts: no licence of theirs is known
    if not all(LICENCE_KEY in s.frontmatter for s in skills):
        return None
    value = read_toml(prompts_from / "seed.toml").get(LICENCE_KEY)
    return value if isinstance(value, str) else None


def _prompts(src: Path, prompts_from: Path) -> dict[str, str]:
    folder = (
        src / "prompts" if (src / "prompts" / "system.md").is_file() else prompts_from / "prompts"
    )
    out = {}
    for p in sorted(folder.glob("*.md")):
        _real_file(p, folder)
        out[p.name] = p.read_text(encoding="utf-8")
    if "system.md" not in out:
        raise UserError(f"{folder / 'system.md'}: missing (the imported seed needs prompts)")
    return out


def _write_seed(
    staging: Path,
    src: Path,
    seed_name: str,
    skills: list[ParsedSkill],
    mapping: dict[str, str],
    prompts: dict[str, str],
    licence: str | None,
) -> None:
    (staging / "skills").mkdir(parents=True)
    (staging / "prompts").mkdir()
    side: dict[str, dict[str, Any]] = {}
    for s in skills:
        name = s.frontmatter["name"]
        file_name = f"{mapping[name]}.md"
        (staging / "skills" / file_name).write_text(s.body, encoding="utf-8")
        side[file_name] = s.frontmatter
        for rel in s.resources:
            _copy_resource(s.folder / rel, staging / "resources" / name, rel)
    (staging / "skills" / SIDECAR).write_text(write_sidecar(side), encoding="utf-8")
    for file_name, text in prompts.items():
        (staging / "prompts" / file_name).write_text(text, encoding="utf-8")
    lines = [
        f"name = {json.dumps(seed_name)}",
        f"description = {json.dumps(f'imported from Agent Skills in {src}')}",
        *([f"{LICENCE_KEY} = {json.dumps(licence)}"] if licence is not None else []),
        "",
        "[skills]",
    ]
    lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(mapping.items())]
    (staging / "seed.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _copy_resource(source: Path, root: Path, rel: str) -> None:
    """Copy one resource file read-only; the target must stay inside `root`."""
    target = root / rel
    if not target.resolve().is_relative_to(root.resolve()):
        raise UserError(f"{source}: resolves outside the seed; refusing it")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target, follow_symlinks=False)
    os.chmod(target, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _rmtree(path: Path) -> None:
    if not path.exists():
        return
    for p in path.rglob("*"):  # read-only resources: make them removable first
        if p.is_file() and not p.is_symlink():
            os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)
    shutil.rmtree(path)


# --------------------------------------------------------------------------- export


def render_skill(frontmatter: dict[str, Any], body: str) -> str:
    head = yaml.safe_dump(
        frontmatter, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False
    )
    return f"---\n{head}---\n\n{body}"


@dataclass
class StagedSkills:
    """An export written in full into one hidden folder beside its targets, not yet visible:
    `publish()` renames each skill into place, `discard()` removes all the export created."""

    out: Path
    staging: Path
    names: list[str]
    created: list[Path]  # the folders up to `base` that this export made, outermost first
    published: list[Path] = field(default_factory=list)

    @property
    def base(self) -> Path:
        return self.out / ".agents" / "skills"

    def publish(self) -> list[Path]:
        """The SKILL.md paths written; on any failure nothing of the export is left."""
        try:
            for name in self.names:
                _check_free(self.out, self.base / name)
                os.rename(self.staging / name, self.base / name)
                self.published.append(self.base / name)
            self.staging.rmdir()
        except BaseException:
            self.discard()
            raise
        return [self.base / name / SKILL_FILE for name in self.names]

    def discard(self) -> None:
        for path in self.published:
            _rmtree(path)
        _rmtree(self.staging)
        _remove_empty(self.created)


def export_skills(
    files: dict[str, str],
    out: Path,
    provenance: dict[str, str],
    resources_root: Path | None = None,
    per_skill: dict[str, dict[str, str]] | None = None,
) -> list[Path]:
    """Write `<out>/.agents/skills/<name>/SKILL.md` for each skill file; refuses to overwrite,
    all or nothing (stage_skills, then publish)."""
    return stage_skills(files, out, provenance, resources_root, per_skill).publish()


def skill_documents(
    files: dict[str, str],
    provenance: dict[str, str],
    per_skill: dict[str, dict[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """(skill name, SKILL.md text) for each skill file of `files`, frontmatter checked; two
    files exporting to one name are refused."""
    entries = []
    for file_name, name, description in catalog(files):
        kept = dict(read_sidecar(files).get(file_name, {}))
        meta = dict(kept.get("metadata") or {})
        own = (per_skill or {}).get(file_name, {})
        meta.update({f"skill-trainer.{k}": str(v) for k, v in {**provenance, **own}.items()})
        fm: dict[str, Any] = {"name": name, "description": description[:MAX_DESCRIPTION]}
        for key in ("license", "compatibility", "allowed-tools"):
            if key in kept:
                fm[key] = kept[key]
        body = body_of(files[file_name])
        meta["skill-trainer.body-sha256"] = hashlib.sha256(body.encode()).hexdigest()
        fm["metadata"] = meta
        validate_frontmatter(fm, Path(f"{file_name} (export)"), [], None)
        entries.append((name, render_skill(fm, body)))
    names = [n for n, _ in entries]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise UserError(f"two skill files export to the same skill name {dup!r}")
    return entries


def stage_skills(
    files: dict[str, str],
    out: Path,
    provenance: dict[str, str],
    resources_root: Path | None = None,
    per_skill: dict[str, dict[str, str]] | None = None,
) -> StagedSkills:
    """Every skill of `files` written under `<out>/.agents/skills/.staging-*`, after checking
    that no target exists and no path below `out` is a symbolic link.

    `provenance` (string values) joins each skill's `metadata` under `skill-trainer.<key>`,
    then `per_skill[file]` (that skill's own figures, `skill_provenance`) joins that skill's.
    """
    base = Path(out) / ".agents" / "skills"
    documents = skill_documents(files, provenance, per_skill)
    names = [name for name, _ in documents]
    for name in names:
        _check_free(Path(out), base / name)
    staged = StagedSkills(Path(out), base / f".staging-{uuid.uuid4().hex[:8]}", names, [])
    staged.created = _make_folders(base)
    try:
        staged.staging.mkdir()
        for name, text in documents:
            source = (resources_root / name) if resources_root else None
            _write_skill(staged.staging / name, text, source)
    except BaseException:
        staged.discard()
        raise
    return staged


def _check_free(out: Path, target: Path) -> None:
    """`target` (a skill's folder under `out`) may be written: no link on the way, not there."""
    check_no_links(out, target)
    if os.path.lexists(target):
        raise UserError(f"{target}: already exists; remove it or export to another folder")


def _make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; returns those created, outermost first."""
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    created: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.append(path)
    except BaseException:
        _remove_empty(created)
        raise
    return created


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders an export created (innermost first), each only if it is empty."""
    for path in reversed(folders):
        try:
            path.rmdir()
        except OSError:
            return


def _write_skill(folder: Path, text: str, resources: Path | None) -> None:
    folder.mkdir()
    (folder / SKILL_FILE).write_text(text, encoding="utf-8")
    if resources is None or not resources.is_dir() or resources.is_symlink():
        return
    for path in sorted(resources.rglob("*")):
        _real_file(path, resources)
        if path.is_file():
            rel = path.relative_to(resources).as_posix()
            if rel.split("/")[0] in RESOURCE_DIRS:
                _copy_resource(path, folder, rel)


def version_provenance(root: Path, version: str, eval_run_id: str | None) -> dict[str, str]:
    """Where an exported version came from: workspace, versions, eval run, the whole run's
    accuracy (`run-accuracy`) with its 95% Wilson interval (core/stats.py), the sha256 of the
    version's files (as recorded in its `_meta.json`); export adds each body's own sha256 and
    each skill's own accuracy (`skill_provenance`)."""
    root = Path(root)
    meta = read_meta(root, "skills", version)
    prov = {
        "workspace": root.resolve().name,  # not the path: a shared file leaks no home folder
        "skills-version": version,
        "sha256": str(meta.get("sha256", "")),
    }
    with HarnessLog(root / "harness.db", readonly=True) as log:
        run = log.run(eval_run_id) if eval_run_id else _latest_eval(log, version)
    if eval_run_id and run is None:
        raise UserError(f"{root / 'harness.db'}: no run {eval_run_id!r}")
    if run is None:
        prov["eval-run"] = "none"
        return prov
    if run.status != RunStatus.DONE or run.skills_version != version:
        raise UserError(
            f"run {run.run_id} is {run.status} and evaluated skills "
            f"{run.skills_version}; need a finished run of {version}"
        )
    try:
        summary = json.loads(run.summary_json or "{}")
    except json.JSONDecodeError:
        summary = {}
    prov.update(
        {
            "eval-run": str(run.run_id),
            "eval-kind": str(run.kind),
            "prompts-version": str(run.prompts_version),
        }
    )
    try:
        provenance = json.loads(run.provenance_json or "{}")
    except json.JSONDecodeError:
        provenance = {}
    if isinstance(provenance, dict) and "simulated_model" in provenance:
        prov["simulated-model"] = str(bool(provenance["simulated_model"])).lower()
    run_tally = Tally.of(summary)
    if run_tally is not None:
        prov.update(run_tally.metadata("run-accuracy"))
    return prov


@dataclass(frozen=True)
class Tally:
    """Right units of all units, as an eval run's summary counts them (overall and per task
    type: app/harness/rollouts/inference.py `summarise`)."""

    correct: int
    total: int

    @classmethod
    def of(cls, entry: object) -> Tally | None:
        """None unless `entry` is a mapping with 0 <= correct <= total (a stored summary is
        read, not trusted)."""
        if not isinstance(entry, dict):
            return None
        correct, total = entry.get("correct"), entry.get("total")
        if type(correct) is not int or type(total) is not int:  # bool is no count
            return None
        return cls(correct, total) if 0 <= correct <= total else None

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.correct + other.correct, self.total + other.total)

    def metadata(self, key: str) -> dict[str, str]:
        """`key`, `key-ci95` (95% Wilson interval, core/stats.py) and `key-n`."""
        lo, hi = wilson_interval(self.correct, self.total)
        return {
            key: f"{self.correct / self.total:.4f}" if self.total else "none",
            f"{key}-ci95": f"[{lo:.4f}, {hi:.4f}]",
            f"{key}-n": str(self.total),
        }


def skill_provenance(
    root: Path, eval_run_id: str, files: dict[str, str]
) -> dict[str, dict[str, str]]:
    """Per skill file, its own accuracy in the eval run: the units of the task types that read
    it (core/evolution/budget.py `resolve_skill_file`), under `accuracy`, with the task types
    named. Empty when the run's summary has no per-task-type counts (a run logged before they
    were stored): then only the run's accuracy is exported, never passed off as a skill's."""
    with HarnessLog(root / "harness.db", readonly=True) as log:
        run = log.run(eval_run_id)
    try:
        per_type = json.loads((run.summary_json if run else None) or "{}").get("per_task_type")
    except (json.JSONDecodeError, AttributeError):
        per_type = None
    if not isinstance(per_type, dict):
        return {}
    tallies = {t: tally for t, e in per_type.items() if (tally := Tally.of(e)) is not None}
    out: dict[str, dict[str, str]] = {}
    for file_name in skill_files(files):
        types = sorted(t for t in tallies if resolve_skill_file(t, files) == file_name)
        tally = sum((tallies[t] for t in types), Tally(0, 0))
        out[file_name] = {**tally.metadata("accuracy"), "accuracy-task-types": " ".join(types)}
    return out


def _latest_eval(log: HarnessLog, version: str) -> RunRecord | None:
    """The latest finished `eval` of the version, else training's final test run of it."""
    run_id = log.latest_done_eval_id(version)
    return log.run(run_id) if run_id is not None else None


def export_version(
    root: Path, version: str, out: Path, eval_run_id: str | None = None, store: Path | None = None
) -> list[Path]:
    """Export a workspace's skills version (`best` for the best one) as Agent Skills."""
    return stage_version(root, version, out, eval_run_id, store).publish()


def stage_version(
    root: Path, version: str, out: Path, eval_run_id: str | None = None, store: Path | None = None
) -> StagedSkills:
    """export_version up to the last step: written, checked, not yet visible."""
    root = Path(root)
    if eval_run_id is not None:
        check_run_id(eval_run_id, "--eval-run")
    if version == "best":
        best = read_best(root)
        if not best:
            raise UserError(f"{root}/manifest.json: no best version yet (train first)")
        version = best["skills"]
    version = check_version(version, "--version")
    files = read_version_files(root / "skills" / version)
    prov = version_provenance(root, version, eval_run_id)
    per_skill = skill_provenance(root, prov["eval-run"], files) if "run-accuracy" in prov else {}
    resources = None
    if store is not None:
        seed = read_manifest(root).get("seed")
        if isinstance(seed, str) and TASK_TYPE_RE.fullmatch(seed):
            resources = Path(store) / "seeds" / seed / "resources"
    return stage_skills(files, out, prov, resources, per_skill)
