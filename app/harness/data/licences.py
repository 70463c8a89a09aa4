"""Licences of what an export is made from (docs/curation.md#licences): SPDX expressions
parsed with `license-expression` (app/harness/workspace/spdx.py), folded into
core/licences.py's tiers.

Sources: the benchmark (`license` in the workspace's `questions/benchmark.toml`), the seed
(its `seed.toml` `license`, copied into the workspace's manifest.json at init), every
imported skill that declares one (SKILL.md `license`, kept in the skills version's
`_skills.json`) in the skills versions the exported rollouts ran, and every ingest run
(`ingest --license`) logged before the newest exported rollout: ingested traces reach later
skills through diagnose and memories. Custom licences are `LicenseRef-...` ids; one nobody
classified counts as proprietary. A restricted tier (proprietary, non-commercial, no
derivatives, no licence) is refused; strong copyleft needs `allow_copyleft`
(`export --allow-copyleft`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.harness.workspace.spdx import LICENCE_KEY, expression_tier
from app.harness.workspace.store import SKILLS_SIDECAR, read_sidecar, read_toml
from app.harness.workspace.workspace import read_manifest
from app.sanitize import visible
from core.licences import Tier, all_of

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

SEED_KEY = "seed_license"  # in the workspace's manifest.json
INGEST_KEY = "license"  # in an ingest run's summary
SHOWN_CHARS = 200  # of a free-text skill licence, in the manifest and messages
FREE_TEXT = (
    "not an SPDX expression (SKILL.md allows free text or a file reference): counted "
    "restricted, since no machine-readable licence says it may be trained on"
)


@dataclass(frozen=True)
class LicenceSource:
    what: str  # e.g. "benchmark sim-basic"
    where: str  # file and key
    expression: str | None
    tier: Tier
    note: str = ""  # why the tier, when the expression alone does not say

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.what,
            "where": self.where,
            "expression": self.expression,
            "tier": self.tier.label,
            **({"note": self.note} if self.note else {}),
        }


def _source(what: str, where: str, value: object) -> LicenceSource:
    if value is None:
        return LicenceSource(what, where, None, Tier.RESTRICTED)
    if not isinstance(value, str):
        raise UserError(f'{where}: must be an SPDX expression string, e.g. "MIT"')
    return LicenceSource(what, where, value, expression_tier(value, where))


def benchmark_licence(session: Session) -> LicenceSource:
    path = Path(session.paths.questions_dir) / "benchmark.toml"
    value = read_toml(path).get(LICENCE_KEY)
    return _source(f"benchmark {session.benchmark.name}", f"{path}: {LICENCE_KEY}", value)


def seed_licence(session: Session) -> LicenceSource | None:
    """The seed's licence as init recorded it; None for a workspace made before seeds carried
    one (the manifest has no such key: the export records it as unrecorded)."""
    path = Path(session.paths.root) / "manifest.json"
    manifest = read_manifest(session.paths.root)
    if SEED_KEY not in manifest:
        return None
    seed = manifest.get("seed", "?")
    return _source(f"seed {seed}", f"{path}: {SEED_KEY}", manifest[SEED_KEY])


def _skills_versions(session: Session, rollout_ids: Sequence[str]) -> list[str]:
    return session.log.branch_skills_versions(rollout_ids)


def skill_licences(session: Session, rollout_ids: Sequence[str]) -> list[LicenceSource]:
    """Imported skills that declare a licence, in the skills versions the rollouts ran; a
    skill without one is the seed's (its licence covers it)."""
    found: dict[tuple[str, str], LicenceSource] = {}
    for version in _skills_versions(session, rollout_ids):
        path = Path(session.paths.root) / "skills" / version / SKILLS_SIDECAR
        if not path.is_file():
            continue
        side = read_sidecar({SKILLS_SIDECAR: path.read_text(encoding="utf-8")}, str(path))
        for file_name, fm in sorted(side.items()):
            if LICENCE_KEY in fm:
                src = _skill_source(visible(fm.get("name", file_name)), path, file_name, fm)
                found.setdefault((file_name, str(src.expression)), src)
    return list(found.values())


def _skill_source(
    name: str, path: Path, file_name: str, frontmatter: dict[str, Any]
) -> LicenceSource:
    """A skill's `license`: the Agent Skills spec lets it be free text ("Proprietary. See
    LICENSE.txt"), which import keeps; only an SPDX expression gives a tier below restricted."""
    where = f"{path}: {visible(file_name)}.{LICENCE_KEY}"
    value = frontmatter[LICENCE_KEY]
    try:
        return _source(f"skill {name}", where, value)
    except UserError:
        shown = visible(value)[:SHOWN_CHARS]
        return LicenceSource(f"skill {name}", where, shown, Tier.RESTRICTED, FREE_TEXT)


def trace_licences(session: Session, rollout_ids: Sequence[str]) -> list[LicenceSource]:
    """Every ingest run logged before the newest exported rollout (its traces may have
    reached that rollout's skills through diagnose and memories)."""
    out = []
    for r in session.log.ingest_runs_before(rollout_ids):
        config, summary = _json_object(r.config_json), _json_object(r.summary_json)
        where = f"{session.paths.root / 'harness.db'}: ingest run {r.run_id} {INGEST_KEY}"
        name = Path(str(config.get("file", "?"))).name
        # the latest ingest of the file declares it (app/harness/ingest/service.py `_how`)
        out.append(_source(f"ingest of {visible(name)}", where, summary.get(INGEST_KEY)))
    return out


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def export_licences(
    session: Session,
    allow_copyleft: bool,
    allow_restricted: bool = False,
    rollout_ids: Sequence[str] = (),
) -> dict[str, Any]:
    """The sources' licences and the export's tier (the strictest), or a refusal.

    `allow_restricted` is for data the user may train on although no public licence says so
    (their own agent's traces, an in-house benchmark): the export goes ahead and its manifest
    records that the user vouched for it."""
    seed = seed_licence(session)
    sources = [
        benchmark_licence(session),
        *([seed] if seed else []),
        *(skill_licences(session, rollout_ids) if rollout_ids else []),
        *(trace_licences(session, rollout_ids) if rollout_ids else []),
    ]
    unrecorded = [] if seed else ["seed: the workspace predates seed licences (manifest.json)"]
    return sources_licence(sources, allow_copyleft, allow_restricted, unrecorded)


def ingest_run_licence(session: Session, run_id: str) -> LicenceSource:
    """The licence `ingest --license` declared for one ingest run (none: restricted)."""
    run = session.log.run(run_id)
    summary = _json_object(run.summary_json) if run else {}
    where = f"{session.paths.root / 'harness.db'}: ingest run {run_id} {INGEST_KEY}"
    return _source(f"ingest run {run_id}", where, summary.get(INGEST_KEY))


def sources_licence(
    sources: list[LicenceSource],
    allow_copyleft: bool,
    allow_restricted: bool,
    unrecorded: list[str] | None = None,
) -> dict[str, Any]:
    """`export_licences` for any sources (a benchmark, a seed, skills, ingest runs)."""
    unrecorded = unrecorded or []
    tier = all_of(s.tier for s in sources)
    worst = max(sources, key=lambda s: s.tier)
    if tier is Tier.RESTRICTED and allow_restricted:
        return {
            "tier": tier.label,
            "sources": [s.to_json() for s in sources],
            "unrecorded": unrecorded,
            "allowed_by": "allow_restricted: the user declared the right to train on it",
        }
    if tier is Tier.RESTRICTED:
        why = (
            "declares no licence"
            if worst.expression is None
            else f"is licensed {worst.expression!r} ("
            + (worst.note or "proprietary, non-commercial or no derivatives")
            + ")"
        )
        raise UserError(
            f"{worst.where}: the {worst.what} {why}; training data is not exported from it "
            "(declare an SPDX licence that allows it, or add --allow-restricted "
            "(allow_restricted=True) for data you own, such as your own agent's traces)"
        )
    if tier is Tier.STRONG_COPYLEFT and not allow_copyleft:
        raise UserError(
            f"{worst.where}: the {worst.what} is licensed {worst.expression!r} (strong "
            "copyleft); add --allow-copyleft (allow_copyleft=True) to export it anyway"
        )
    return {
        "tier": tier.label,
        "sources": [s.to_json() for s in sources],
        "unrecorded": unrecorded,
    }
