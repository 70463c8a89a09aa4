"""Argument checks and config resolution shared by the API (app/api/) and the CLI.

Kept outside the app/api/ package so a command can resolve its config and refuse a missing API
key (app/providers/key_check.py) without importing the whole harness first: importing any module
of app/api/ runs app/api/__init__.py, which loads every domain of the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.workspace.config import (
    RunConfig,
    build_config,
    load_config,
    workspace_recorded_config,
)
from app.paths import absolute

# What a command's `config` argument may be: a RunConfig, a TOML file's path, or None (defaults).
ConfigSource = RunConfig | str | Path | None


def expect(label: str, value: object, ok: bool, expected: str) -> None:
    if not ok:
        raise bad(label, value, expected)


def bad(label: str, value: object, expected: str) -> UserError:
    return UserError(f"{label}: expected {expected}, got {type(value).__name__} {value!r:.60}")


def is_path(value: object, *, none: bool = False) -> bool:
    return isinstance(value, str | Path) or (none and value is None)


def resolve_config(
    config: ConfigSource = None,
    overrides: Mapping[str, Any] | None = None,
    default_file: Path | None = None,
) -> RunConfig:
    """A RunConfig from a config object or a TOML file (else `default_file`, else the
    defaults), with `overrides` applied; an unknown key or bad value raises UserError."""
    expect(
        "config",
        config,
        isinstance(config, RunConfig) or is_path(config, none=True),
        "a RunConfig, a TOML file's path or None",
    )
    expect(
        "overrides",
        overrides,
        overrides is None
        or (isinstance(overrides, Mapping) and all(isinstance(k, str) for k in overrides)),
        'a mapping of config keys to values, e.g. {"epochs": 2}',
    )
    if isinstance(config, RunConfig):
        return build_config(dict(overrides), "overrides", config) if overrides else config
    path = absolute(config) if config is not None else default_file
    return load_config(path, dict(overrides or {}))


def workspace_config(
    workspace: Path | None,
    config: ConfigSource = None,
    overrides: Mapping[str, Any] | None = None,
    default_file: Path | None = None,
) -> RunConfig:
    """The config a command on `workspace` runs with, for every command: `config` when one is
    given; else the config the workspace's training run recorded (checkpoint.json), so `eval`,
    `infer`, `serve` or `train --resume` after `train --config X` run with X; else
    `default_file`, else the defaults. `overrides` apply on top either way."""
    given = resolve_config(config, overrides, default_file)  # bad keys refuse before any read
    recorded = workspace_recorded_config(workspace) if config is None and workspace else None
    if recorded is None:
        return given
    if overrides:
        recorded = build_config(dict(overrides), "command line", recorded)
    _refuse_redacted_endpoints(recorded)
    return recorded


def _refuse_redacted_endpoints(config: RunConfig) -> None:
    """Credentials in an api_base are never stored (config.fingerprint redacts them): a
    recorded config with a redacted one asks for the URL instead of calling a wrong one."""
    for role, model in config.models.items():
        base = config.endpoint(role).api_base or ""
        if "[REDACTED:" in base and not model.startswith("sim/"):
            # the role's own key if it has one, else the global one it inherits
            key = f"{role}_api_base" if getattr(config, f"{role}_api_base") else "api_base"
            raise UserError(
                f"the run's {key} held credentials, which are never stored; pass it "
                f"again with --set {key}=... or --config (overrides or config)"
            )
