"""What every command's handler shares: its output, whether it shows progress bars and the
config its arguments name.

Command modules import this at their top, and they are all imported to build the parser, so
`--help` loads it too: what is slow to import (the config model, the API-key check) is imported
inside the function that needs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.providers.sim.notices import ORACLE_MODEL, ORACLE_NOTICE, SIM_NOTICE
from app.sanitize import visible

if TYPE_CHECKING:
    from app.harness.workspace.config import RunConfig


def out(text: str) -> None:
    """Command output: data in it (names, ids, question text) never drives the terminal."""
    print(visible(text))


def out_json(data: object) -> None:
    """`--json`: the command's result as one JSON document, the only thing on stdout.
    Dataclasses become objects, paths strings; ensure_ascii escapes every control character."""
    print(json.dumps(_plain(data), indent=2, default=str))


def _plain(data: object) -> object:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return dataclasses.asdict(data)
    return data


def progress_from(args: argparse.Namespace) -> bool | None:
    """The API's `progress`: False with --no-progress; None, bars when stderr is a terminal."""
    return False if args.no_progress else None


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """The `--set KEY=VALUE` items as config overrides."""
    from app.harness.workspace.config import parse_override

    return dict(parse_override(s) for s in getattr(args, "set", []))


def config_from(
    args: argparse.Namespace, default_file: Any = None, *, recorded: bool = True
) -> RunConfig:
    """`--config FILE`, else the workspace's recorded config (`recorded`: its training run's,
    app/api_args.py `workspace_config`), else `default_file`, else the defaults; with every
    `--set` applied. Commands without the model options (export) get the defaults."""
    from app.api_args import workspace_config

    workspace = getattr(args, "workspace", None) if recorded else None
    return workspace_config(
        workspace, getattr(args, "config", None), overrides_from(args), default_file=default_file
    )


def model_config_from(args: argparse.Namespace, *, recorded: bool = True) -> RunConfig:
    """`config_from` for a command that calls models: a missing API key is refused here, before
    the harness (about a second of imports) or litellm is loaded."""
    from app.providers.key_check import first_missing_key

    config = config_from(args, recorded=recorded)
    if why := first_missing_key(config):
        raise UserError(why)
    return config


def notice_if_simulated(simulated: bool, models: Iterable[str] = ()) -> None:
    """The simulated-model note; for `sim/oracle` (any benchmark, a fixed answer rate) also
    that its figures check plumbing, not learning."""
    if simulated:
        out(SIM_NOTICE)
    if ORACLE_MODEL in models:
        out(ORACLE_NOTICE)
