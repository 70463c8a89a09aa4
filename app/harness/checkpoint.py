"""checkpoint.json: training progress, serialised state and config fingerprint (DESIGN §7)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from loguru import logger

from app.errors import UserError
from app.harness.atomic import read_json_object, write_json_atomic
from app.harness.config import RunConfig, fingerprint, fingerprint_changes
from app.harness.workspace import (
    KINDS,
    list_versions,
    read_manifest,
    version_number,
    write_manifest,
)

SCHEMA = 1
PHASES = ("setup", "in_epoch", "epoch_done", "finished")


def write_checkpoint(root: Path, *, progress: dict[str, Any], state: dict[str, Any],
                     epoch_batches: list[list[str]] | None, config: RunConfig,
                     benchmark_hash: str) -> None:
    if progress["phase"] not in PHASES:
        raise ValueError(f"unknown phase {progress['phase']!r}")
    manifest = read_manifest(root)
    data = {
        "schema": SCHEMA,
        "progress": progress,
        "state": state,
        "manifest": manifest,
        "version_snapshot": {"skills": manifest["current"]["skills"],
                             "prompts": manifest["current"]["prompts"]},
        "versions_max": {k: _max_version(root, k) for k in KINDS},
        "epoch_batches": epoch_batches,
        "config_fingerprint": fingerprint(config, benchmark_hash),
    }
    write_json_atomic(Path(root) / "checkpoint.json", data)


def _max_version(root: Path, kind: str) -> int:
    versions = list_versions(root, kind)
    return version_number(versions[-1]) if versions else 0


def load_checkpoint(root: Path) -> dict[str, Any]:
    path = Path(root) / "checkpoint.json"
    if not path.is_file():
        raise UserError(f"{root}: no checkpoint.json: refusing to silently retrain from scratch")
    data = read_json_object(path, "checkpoint")
    if not isinstance(data.get("schema", 0), int) or data.get("schema", 0) > SCHEMA:
        raise UserError(f"{path}: checkpoint schema {data.get('schema')} is newer than this "
                        f"skill-trainer supports ({SCHEMA})")
    for key in ("progress", "state", "manifest", "versions_max", "config_fingerprint"):
        if key not in data:
            raise UserError(f"{path}: key '{key}' missing")
    return data


def check_resume_config(ckpt: dict[str, Any], config: RunConfig, benchmark_hash: str) -> None:
    structural, decision = fingerprint_changes(ckpt["config_fingerprint"],
                                               fingerprint(config, benchmark_hash))
    if structural:
        raise UserError("refusing --resume: structural config changed since the checkpoint ("
                        + "; ".join(structural) + "); use --fresh to start over")
    if decision:
        logger.warning("resuming with changed decision settings: {}", "; ".join(decision))


def restore_workspace(root: Path, ckpt: dict[str, Any]) -> list[str]:
    """Undo what a killed process wrote after its last checkpoint: orphan versions, manifest."""
    removed = []
    for kind in KINDS:
        keep = ckpt["versions_max"][kind]
        for version in list_versions(root, kind):
            if version_number(version) > keep:
                shutil.rmtree(Path(root) / kind / version)
                removed.append(f"{kind}/{version}")
    write_manifest(root, ckpt["manifest"])
    return removed

