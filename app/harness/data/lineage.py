"""Per-record lineage of curated exports (core/lineage.py holds the hashing) and
`export verify DIR`.

Components of a record's lineage, all recomputable from the workspace:
- `skills`, `prompts`: the versions the branch ran, hashed as a run's provenance hashes
  them (app/harness/rollouts/session.py `provenance`, without memories);
- `tool_manifest`: the tool schemas the branch was offered (in the fork's skill mode);
- `benchmark`: the benchmark's content hash;
- `verifiers`: the verifier list with each verifier's status on the branch, in stored order;
- `model`: the agent model and the branch's sampling parameters (temperature, seed,
  max_tokens, max_steps, skill mode) from the fork's stored config;
- `record`: the exported record itself (its digest, computed without the `lineage` key).

The key: when the environment variable SKILL_TRAINER_LINEAGE_KEY is set, lineage ids are
HMAC-SHA256 under it (a forger without the key cannot mint a matching id). The key is read
from the environment only, never written to the workspace, a manifest or a log; verifying a
keyed export needs the same variable.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.tools.spec import declared_for
from app.harness.workspace.workspace import content_sha256
from app.sanitize import visible
from core import lineage
from core.types import Question, ToolSpec

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

KEY_ENV = "SKILL_TRAINER_LINEAGE_KEY"
SIDECAR_SUFFIX = ".lineage.jsonl"
MAX_LINE_BYTES = 16 * 1024 * 1024  # a record larger than this is refused, not parsed


def lineage_key() -> bytes | None:
    value = os.environ.get(KEY_ENV, "")
    return value.encode() if value else None


class LineageSources:
    """Component digests of branches, cached per skills/prompts version and per fork."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._prompts: dict[tuple[str, str, str], tuple[AgentPrompts, str, str]] = {}
        self._configs: dict[str, dict[str, Any]] = {}
        self._verdicts: dict[str, dict[tuple[str, int], list[list[str]]]] = {}

    def prompts_of(self, branch: Mapping[str, Any]) -> AgentPrompts:
        """The skills and prompts versions a branch ran, in the fork's skill mode."""
        return self._versions(branch)[0]

    def _versions(self, branch: Mapping[str, Any]) -> tuple[AgentPrompts, str, str]:
        skills, prompts = branch["skills_version"], branch["prompts_version"]
        mode = self._config(branch["run_id"]).get("skill_mode") or self.session.config.skill_mode
        key = (skills, prompts, str(mode))
        if key not in self._prompts:
            root = self.session.paths.root
            skills_dir, prompts_dir = root / "skills" / skills, root / "prompts" / prompts
            if not skills_dir.is_dir() or not prompts_dir.is_dir():
                raise UserError(f"{root}: versions {skills}/{prompts} are not in the workspace")
            loaded = AgentPrompts.load(skills_dir, prompts_dir, key[2])
            self._prompts[key] = (
                loaded,
                "sha256:" + content_sha256(loaded.skills),
                "sha256:" + content_sha256({"system.md": loaded.system, **loaded.tool_docs}),
            )
        return self._prompts[key]

    def _config(self, rollout_id: str) -> dict[str, Any]:
        if rollout_id not in self._configs:
            run = self.session.log.run(rollout_id)
            try:
                config = json.loads(run.config_json or "{}") if run else {}
            except json.JSONDecodeError:
                config = {}
            self._configs[rollout_id] = config if isinstance(config, dict) else {}
        return self._configs[rollout_id]

    def _verdict_list(self, rollout_id: str, qid: str, index: int) -> list[list[str]]:
        if rollout_id not in self._verdicts:
            by_branch: dict[tuple[str, int], list[list[str]]] = {}
            for r in self.session.log.verdicts_of(rollout_id):
                key = (r.question_id, r.branch_index)
                by_branch.setdefault(key, []).append([r.verifier, r.status])
            self._verdicts[rollout_id] = by_branch
        return self._verdicts[rollout_id].get((qid, index), [])

    def components(self, branch: Mapping[str, Any], question: Question) -> dict[str, str]:
        rollout_id = branch["run_id"]
        prompts, skills_sha, prompts_sha = self._versions(branch)
        config = self._config(rollout_id)
        model = {
            "agent_model": config.get("agent_model"),
            "temperature": branch["temperature"],
            "seed": branch["seed"],
            "max_tokens": config.get("max_tokens"),
            "max_steps": config.get("max_steps"),
            "skill_mode": config.get("skill_mode"),
        }
        return {
            "skills": skills_sha,
            "prompts": prompts_sha,
            "tool_manifest": lineage.digest(
                [t.as_openai() for t in offered_tools(self.session, prompts, question)]
            ),
            "benchmark": "sha256:" + self.session.benchmark.content_hash,
            "verifiers": lineage.digest(
                self._verdict_list(rollout_id, branch["question_id"], branch["branch_index"])
            ),
            "model": lineage.digest(model),
        }


def offered_tools(session: Session, prompts: AgentPrompts, question: Question) -> list[ToolSpec]:
    """The tools a branch of `question` was offered, as the agent loop offers them
    (app/harness/rollouts/inference.py): the built-in ones, then the benchmark's declared tools
    for this question, each described by the prompts version's `tool_<name>.md` when it has
    one. Reading a declared tool's schema starts the session's tool runtime (children, MCP
    servers), so call this outside an event loop."""
    tools = list(prompts.tools_for(question))
    runtime = session.tools
    if runtime is None or not declared_for(runtime.tables, question):
        return tools
    return tools + [
        replace(s, description=prompts.tool_docs.get(s.name, s.description))
        for s in runtime.specs_blocking(question)
    ]


def source_of(branch: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "rollout_id": branch["run_id"],
        "question_id": branch["question_id"],
        "branch_index": branch["branch_index"],
    }


SEALED_CHECK = "each record's lineage; record count against its manifest"
HASHED_CHECK = "sha256 and record count against its manifest (no per-record lineage)"
MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class VerifyResult:
    folder: Path
    files: int
    records: int
    failures: int
    first_failure: str | None  # "file:line: reason"
    keyed: bool
    workspace_checked: bool
    checked: dict[str, str]  # file -> what was checked
    not_checked: dict[str, str]  # file -> why not (absent, no manifest)


def verify_folder(
    folder: Path,
    names: tuple[str, ...],
    session: Session | None,
    hashed: tuple[str, ...] = (),
) -> VerifyResult:
    """Recompute every record's digest and lineage id of the files `names` (and, with a
    session, every component from the workspace), and compare their record counts with their
    manifests; check the files `hashed`, which carry no lineage, against the sha256 and count
    of their manifests. Count what does not match, name the first, and say which files were
    checked how and which not."""
    folder = Path(folder)
    present = [n for n in names if (folder / n).is_file()]
    if not present:
        raise UserError(f"{folder}: no curated export files ({', '.join(names)})")
    key = lineage_key()
    sources = LineageSources(session) if session is not None else None
    records = failures = 0
    problems: list[str] = []
    keyed = False
    checked: dict[str, str] = {}
    not_checked = {n: "absent" for n in (*names, *hashed) if not (folder / n).is_file()}
    for name in present:
        sidecar = _sidecar(folder / f"{name}{SIDECAR_SUFFIX}")
        count = 0
        for number, raw in enumerate(_lines(folder / name), start=1):
            count += 1
            problem, is_keyed = _check_line(raw, sidecar.get(number), key, sources)
            keyed = keyed or is_keyed
            if problem is not None:
                failures += 1
                problems.append(f"{folder / name}:{number}: {visible(problem)[:300]}")
        records += count
        checked[name] = SEALED_CHECK
        manifest = _manifest(folder / name)
        if isinstance(manifest, str):
            checked[name] = "each record's lineage"
            not_checked[f"{name}.manifest.json"] = manifest
        elif manifest.get("count") != count:
            failures += 1
            problems.append(
                f"{folder / name}: {count} records, its manifest says {manifest.get('count')}"
            )
    for name in (n for n in hashed if (folder / n).is_file()):
        manifest = _manifest(folder / name)
        if isinstance(manifest, str):
            not_checked[name] = manifest
            continue
        checked[name] = HASHED_CHECK
        if (problem := _against_manifest(folder / name, manifest)) is not None:
            failures += 1
            problems.append(f"{folder / name}: {problem}")
    return VerifyResult(
        folder,
        len(checked),
        records,
        failures,
        problems[0] if problems else None,
        keyed,
        session is not None,
        checked,
        not_checked,
    )


def _manifest(path: Path) -> dict[str, Any] | str:
    """`<file>.manifest.json` as written by export, or why it cannot be used."""
    manifest = path.with_name(f"{path.name}.manifest.json")
    if not manifest.is_file():
        return f"no {manifest.name}"
    if manifest.stat().st_size > MAX_MANIFEST_BYTES:
        return f"{manifest.name} larger than {MAX_MANIFEST_BYTES} bytes"
    try:
        data = json.loads(manifest.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return f"{manifest.name} is not JSON"
    return data if isinstance(data, dict) else f"{manifest.name} is not a JSON object"


def _against_manifest(path: Path, manifest: dict[str, Any]) -> str | None:
    digest, lines = hashlib.sha256(), 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
            lines += block.count(b"\n")
    if digest.hexdigest() != manifest.get("sha256"):
        return f"sha256 differs from {path.name}.manifest.json (changed since the export)"
    if lines != manifest.get("count"):
        return f"{lines} records, its manifest says {manifest.get('count')}"
    return None


def _lines(path: Path) -> Iterator[bytes]:
    """Non-blank lines; one longer than MAX_LINE_BYTES comes back cut (and then fails as a
    record) rather than read whole into memory."""
    with path.open("rb") as f:
        while line := f.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):  # skip the rest of the long line
                    line = f.readline(MAX_LINE_BYTES)
                yield b"\0" * (MAX_LINE_BYTES + 1)
            elif line.strip():
                yield line.rstrip(b"\n")


def _sidecar(path: Path) -> dict[int, Any]:
    if not path.is_file():
        return {}
    out: dict[int, Any] = {}
    for raw in _lines(path):
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("line"), int):
            out[entry["line"]] = entry.get("lineage")
    return out


def _check_line(
    raw: bytes, sidecar: Any, key: bytes | None, sources: LineageSources | None
) -> tuple[str | None, bool]:
    if len(raw) > MAX_LINE_BYTES:
        return f"record larger than {MAX_LINE_BYTES} bytes", False
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return f"not JSON ({type(e).__name__})", False
    if not isinstance(record, dict):
        return "not a JSON object", False
    found = record.pop("lineage", None) if "lineage" in record else sidecar
    keyed = isinstance(found, dict) and str(found.get("lineage_id", "")).startswith("hmac-")
    problem = lineage.check(found, record, key)
    if problem is None and lineage.digest(found.get("source")) != found["hashes"].get("source"):
        problem = "source differs from its hash"
    if problem is None and sources is not None:
        problem = _check_components(found, sources)
    return problem, keyed


def _check_components(found: Mapping[str, Any], sources: LineageSources) -> str | None:
    src = found.get("source")
    if not isinstance(src, dict):
        return "lineage names no source branch"
    if "trace_id" in src:  # an ingested trace (app/harness/data/export_ingest.py)
        from app.harness.data.trace_lineage import check_trace_components

        return check_trace_components(found, src, sources.session)
    rollout_id, qid, index = src.get("rollout_id"), src.get("question_id"), src.get("branch_index")
    branch = (
        sources.session.log.branch(rollout_id, qid, index)
        if isinstance(rollout_id, str) and isinstance(qid, str) and isinstance(index, int)
        else None  # a source that names no branch by its column types matches none
    )
    question = sources.session.questions_by_id.get(str(qid))
    if branch is None or question is None:
        return f"source branch {src} is no longer in the workspace"
    now = sources.components(branch.as_dict(), question)
    for name in lineage.COMPONENTS:
        if found["hashes"].get(name) != now[name]:
            return f"{name} hash differs from the workspace's"
    return None
