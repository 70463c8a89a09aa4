"""The one check for every id a user names: run ids (`infer --run-id`, `diagnose RUN`,
`--eval-run`), rollout ids (`fork --rollout-id`, `rank`, `export`) and version names (`eval`,
`promote`, `export-skills --version`).

Ids become file and folder names (`exports/<rollout>/`, `analyses/eval_<run>.json`,
`skills/<version>/`), so each is checked where it enters, by the harness function the CLI and
the API both call, before anything is read or written: no id can be a path.
"""

from __future__ import annotations

import re

from app.errors import UserError

RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}")
VERSION_RE = re.compile(r"v[0-9]{1,9}")
RUN_ID_RULE = (
    "use 1-100 letters, digits, '_', '-', '.', ':' or '+', starting with a letter or digit"
)


def check_run_id(value: object, label: str) -> str:
    """A run or rollout id, or a UserError naming `label` (e.g. "--rollout-id")."""
    if not isinstance(value, str) or not RUN_ID_RE.fullmatch(value):
        raise UserError(f"{label} {_shown(value)}: {RUN_ID_RULE}")
    return value


def check_version(value: object, label: str, kind: str = "skills") -> str:
    """A version name: `vN`, or `<kind>/vN` as `report` prints it; returns `vN`."""
    name = value.removeprefix(f"{kind}/") if isinstance(value, str) else value
    if not isinstance(name, str) or not VERSION_RE.fullmatch(name):
        raise UserError(f"{label} {_shown(value)}: a {kind} version is vN (e.g. v3)")
    return name


def _shown(value: object) -> str:
    return repr(value)[:80] if isinstance(value, str) else f"{type(value).__name__} {value!r:.60}"
