"""Argument checks and config resolution shared by app/api.py and the CLI.

Kept apart from app/api.py so a command can resolve its config and refuse a missing API key
(app/providers/key_check.py) without importing the whole harness first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.workspace.config import RunConfig, build_config, load_config
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
