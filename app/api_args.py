"""Argument checks and config resolution shared by the API (app/api/) and the CLI.

Kept outside the app/api/ package so a command can resolve its config and refuse a missing API
key (app/providers/key_check.py) without importing the whole harness first: importing any module
of app/api/ runs app/api/__init__.py, which loads every domain of the API.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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


AGENT_SPEC_HELP = (
    "builtin, python:MODULE:FUNCTION or python:FILE.py:FUNCTION (or without 'python:'), or "
    "command:COMMAND LINE (split as a shell would, e.g. 'command:python agent.py --fast')"
)
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class AgentChoice:
    """Which agent runs a command's rollouts, whatever the config says (`eval --agent`):
    the built-in loop, a Python `module:function`, or a command (an argv list). `parse`
    reads the `--agent` spelling; `spec` writes it back, and is what a result records."""

    kind: Literal["builtin", "python", "command"]
    function: str = ""  # python: "module:function" or "path/to/agent.py:function"
    command: tuple[str, ...] = ()  # command: the argv

    def __post_init__(self) -> None:
        if isinstance(self.command, list):  # a list given from Python: kept as the tuple
            object.__setattr__(self, "command", tuple(self.command))
        ok = {
            "builtin": not self.function and not self.command,
            "python": _is_function(self.function) and not self.command,
            "command": bool(self.command)
            and all(isinstance(a, str) for a in self.command)
            and bool(self.command[0])
            and not self.function,
        }.get(self.kind, False)
        if not ok:
            raise UserError(f"agent: expected {AGENT_SPEC_HELP}; got {self!r:.120}")

    @classmethod
    def parse(cls, spec: str) -> AgentChoice:
        """`builtin`, `python:module:function` or `python:path/agent.py:function` (either
        without `python:` too) or `command:<command line>`, split with shlex (POSIX quoting)."""
        if not isinstance(spec, str):
            raise bad("agent", spec, AGENT_SPEC_HELP)
        text = spec.strip()
        kind, colon, rest = text.partition(":")
        if text == "builtin":
            return cls("builtin")
        if colon and kind == "command":
            try:
                argv = tuple(shlex.split(rest))
            except ValueError as e:  # an unclosed quote
                raise UserError(f"agent {spec!r:.120}: {e} in the command line") from None
            if not argv:
                raise UserError(f"agent {spec!r:.120}: no command after 'command:'")
            return cls("command", command=argv)
        function = rest if colon and kind == "python" else text
        if kind == "builtin" or not _is_function(function):  # builtin:x is no module
            raise UserError(f"agent {spec!r:.120}: expected {AGENT_SPEC_HELP}")
        return cls("python", function=function)

    @property
    def spec(self) -> str:
        return agent_spec(self.kind, self.function, self.command)

    def overrides(self) -> dict[str, Any]:
        """The config keys that select this agent (the other kind's keys cleared, so a config
        with a command agent can be evaluated under a Python one)."""
        return {
            "agent_kind": self.kind,
            "agent_function": self.function,
            "agent_command": list(self.command),
        }


def agent_spec(kind: str, function: str, command: tuple[str, ...]) -> str:
    """A config's agent (agent_kind, agent_function, agent_command) as an `--agent` spec."""
    if kind == "python":
        return f"python:{function}"
    if kind == "command":
        return f"command:{shlex.join(command)}"
    return "builtin"


def agent_choice(value: AgentChoice | str | None) -> AgentChoice | None:
    """The API's `agent` argument: an AgentChoice, its `--agent` spelling, or None."""
    if value is None or isinstance(value, AgentChoice):
        return value
    return AgentChoice.parse(value)


def _is_function(text: str) -> bool:
    """`module:function`, or `path/to/agent.py:function` as `agent_function` takes it (the
    config makes a relative file absolute, app/harness/workspace/config.py)."""
    target, colon, function = text.rpartition(":")
    if not colon or not function.isidentifier():
        return False
    return target.endswith(".py") or bool(_DOTTED.fullmatch(target))


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
