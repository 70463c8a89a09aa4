"""checkpoint.json: training progress, serialised state and config fingerprint
(docs/architecture.md#checkpoint-and-resume).

The one place TrainState meets JSON: `state_json` writes it and `state_from_json` reads it
back, in the shapes checkpoint.json has always had (a case pack as `CasePack.to_dict`, the gate
pools as gate_pools.json holds them, a curve point flat, a gate test's bet without the fields
its bet does not keep), so a checkpoint written before the state was typed resumes as is."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loguru import logger
from pydantic import TypeAdapter, ValidationError

from app.errors import DamagedFile, UserError
from app.harness.training.train_state import TrainState
from app.harness.training.vocabulary import TrainPhase
from app.harness.workspace.atomic import read_json_object, write_json_atomic
from app.harness.workspace.config import (
    RunConfig,
    describe_problem,
    fingerprint,
    fingerprint_changes,
)
from app.harness.workspace.workspace import (
    KINDS,
    list_versions,
    read_manifest,
    version_number,
    write_manifest,
)
from core.evolution.gate import GateState

SCHEMA = 1
PHASES = tuple(phase.value for phase in TrainPhase)


def write_checkpoint(
    root: Path,
    *,
    progress: dict[str, Any],
    state: TrainState | None,
    epoch_batches: list[list[str]] | None,
    config: RunConfig,
    benchmark_hash: str,
) -> None:
    if progress["phase"] not in PHASES:
        raise ValueError(f"unknown phase {progress['phase']!r}")
    manifest = read_manifest(root)
    data = {
        "schema": SCHEMA,
        "progress": progress,
        "state": state_json(state) if state is not None else {},
        "manifest": manifest,
        "version_snapshot": {
            "skills": manifest["current"]["skills"],
            "prompts": manifest["current"]["prompts"],
        },
        "versions_max": {k: _max_version(root, k) for k in KINDS},
        "epoch_batches": epoch_batches,
        "config_fingerprint": fingerprint(config, benchmark_hash),
    }
    write_json_atomic(Path(root) / "checkpoint.json", data)


def _max_version(root: Path, kind: str) -> int:
    versions = list_versions(root, kind)
    return version_number(versions[-1]) if versions else 0


RECOVERY_HINT = (
    "to recover: `train --fresh` archives this workspace (its log, versions and "
    "reports stay in the archive) and starts over from the seed"
)


def load_checkpoint(root: Path) -> dict[str, Any]:
    """checkpoint.json, checked for shape and types; damage is one line with a recovery hint."""
    path = Path(root) / "checkpoint.json"
    if not path.is_file():
        raise UserError(f"{root}: no checkpoint.json: refusing to silently retrain from scratch")
    try:
        data = read_json_object(path, "checkpoint")
    except UserError as e:
        raise DamagedFile(f"{e}; {RECOVERY_HINT}") from None
    if not isinstance(data.get("schema", 0), int) or data.get("schema", 0) > SCHEMA:
        raise UserError(
            f"{path}: checkpoint schema {data.get('schema')} is newer than this "
            f"skill-trainer supports ({SCHEMA})"
        )
    problem = checkpoint_problem(data)
    if problem:
        raise DamagedFile(f"{path}: corrupt checkpoint: {problem}; {RECOVERY_HINT}")
    return data


_SHAPE: dict[str, type] = {
    "progress": dict,
    "state": dict,
    "manifest": dict,
    "versions_max": dict,
    "config_fingerprint": dict,
}
_PROGRESS: dict[str, type] = {
    "epoch": int,
    "phase": str,
    "step_completed": int,
    "global_step": int,
    "total_steps": int,
    "train_id": str,
}


def checkpoint_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a parsed checkpoint's shape (key and type), or None."""
    for key, want in _SHAPE.items():
        if not isinstance(data.get(key), want):
            return _wrong(key, want, data.get(key))
    for key, want in _PROGRESS.items():
        value = data["progress"].get(key)
        if not isinstance(value, want) or isinstance(value, bool):
            return _wrong(f"progress.{key}", want, value)
    if data["progress"]["phase"] not in PHASES:
        return f"key 'progress.phase' is {data['progress']['phase']!r}, not one of {PHASES}"
    spent = data["progress"].get("spent_usd", 0.0)
    if not isinstance(spent, int | float) or isinstance(spent, bool) or spent < 0:
        return _wrong("progress.spent_usd", float, spent)
    for kind in KINDS:
        value = data["versions_max"].get(kind)
        if not isinstance(value, int) or isinstance(value, bool):
            return _wrong(f"versions_max.{kind}", int, value)
    current = data["manifest"].get("current")
    if not isinstance(current, dict) or not all(
        isinstance(current.get(k), str) for k in ("skills", "prompts", "questions")
    ):
        return "key 'manifest.current' must hold the strings skills, prompts and questions"
    for kind in ("structural", "decision"):
        if not isinstance(data["config_fingerprint"].get(kind), dict):
            return _wrong(f"config_fingerprint.{kind}", dict, data["config_fingerprint"].get(kind))
    batches = data.get("epoch_batches")
    if batches is not None and not (
        isinstance(batches, list)
        and all(isinstance(b, list) and all(isinstance(u, str) for u in b) for b in batches)
    ):
        return "key 'epoch_batches' must be null or a list of lists of unit ids"
    if data["progress"]["phase"] != TrainPhase.SETUP:
        return _state_problem(data["state"])
    return None


def _state_problem(state: dict[str, Any]) -> str | None:
    try:
        state_from_json(state)
    except CheckpointStateError as e:
        return str(e)
    return None


class CheckpointStateError(ValueError):
    """A checkpoint's state does not have TrainState's shape; the message names the key."""


_STATE = TypeAdapter(TrainState)
_CURVE_ACCURACIES = ("epoch", "val_acc", "test_acc")  # a curve point's keys beside its counts


def state_json(state: TrainState) -> dict[str, Any]:
    """checkpoint.json's "state" (the module docstring says which shapes it keeps)."""
    data = asdict(state)
    data["system_packs"] = [pack.to_dict() for pack in state.system_packs]
    data["tool_packs"] = [pack.to_dict() for pack in state.tool_packs]
    data["gate_pools"] = state.gate_pools.to_dict()
    data["curve"] = [point.flat() for point in state.curve]
    for kept in ("probations", "continuations"):
        for task_type, held in getattr(state, kept).items():
            data[kept][task_type]["test"] = _gate_state_json(held.test)
    for task_type, by_key in state.pooled.items():
        for key, pooled in by_key.items():
            data["pooled"][task_type][key]["test"] = _gate_state_json(pooled.test)
    return data


def _gate_state_json(test: GateState) -> dict[str, Any]:
    """A gate test's state; its bet holds only what that bet keeps (None: not kept)."""
    data = asdict(test)
    data["evidence"] = {k: v for k, v in data["evidence"].items() if v is not None}
    return data


def state_from_json(data: dict[str, Any]) -> TrainState:
    """The state a checkpoint recorded; keys this version no longer has are ignored, keys
    added since load empty. Raises CheckpointStateError naming the first wrong key
    (`state.best.val_acc`)."""
    typed_shape = {**data}
    if isinstance(data.get("curve"), list):
        typed_shape["curve"] = [_nested_curve_point(point) for point in data["curve"]]
    try:  # as JSON, strictly: what was written must come back with the same types
        return _STATE.validate_json(json.dumps(typed_shape), strict=True)
    except ValidationError as e:
        raise CheckpointStateError(describe_problem(e.errors()[0], prefix="state")) from None


def _nested_curve_point(point: Any) -> Any:
    """A flat curve point with its counts gathered under "counts", as CurvePoint holds them
    (anything else is left for the validation to name)."""
    if not isinstance(point, dict):
        return point
    counts = {k: v for k, v in point.items() if k not in _CURVE_ACCURACIES}
    return {**{k: point[k] for k in _CURVE_ACCURACIES if k in point}, "counts": counts}


def _wrong(key: str, want: type | tuple[type, ...], value: Any) -> str:
    name = "number" if isinstance(want, tuple) else want.__name__
    name = {
        "dict": "an object",
        "list": "a list",
        "str": "a string",
        "int": "an integer",
        "float": "a number",
    }.get(name, name)
    shown = repr(value)[:40]
    return f"key '{key}' must be {name} (got {type(value).__name__} {shown})"


def check_resume_config(ckpt: dict[str, Any], config: RunConfig, benchmark_hash: str) -> None:
    structural, decision = fingerprint_changes(
        ckpt["config_fingerprint"], fingerprint(config, benchmark_hash)
    )
    if structural:
        raise UserError(
            "refusing --resume: structural config changed since the checkpoint ("
            + "; ".join(structural)
            + "); use --fresh to start over"
        )
    if decision:
        logger.warning("resuming with changed decision settings: {}", "; ".join(decision))


def restore_workspace(root: Path, ckpt: dict[str, Any]) -> list[str]:
    """Undo what a killed process wrote after its last checkpoint: orphan versions, manifest."""
    removed = []
    for kind in KINDS:
        keep = ckpt["versions_max"][kind]
        for version in list_versions(root, kind):
            if version_number(version) > keep:
                path = Path(root) / kind / version
                if path.is_symlink():
                    raise DamagedFile(
                        f"{path}: is a symbolic link, not a version this workspace "
                        f"wrote; remove the link (rm '{path}') and rerun"
                    )
                shutil.rmtree(path)
                removed.append(f"{kind}/{version}")
    write_manifest(root, ckpt["manifest"])
    return removed
