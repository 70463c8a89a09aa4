"""BFCL's multi-turn simulators as store tools: runs in the tool sandbox, standard library only.

bench/public/bfcl_multi_turn.py copies this file, unchanged, into an imported benchmark's
`tools/` folder beside BFCL's simulator modules (`gorilla_file_system.py`, ...). It is never
imported by the importer or the harness: a Python tool runs in a new sandboxed child per call
(docs/tools.md), with the rollout's fresh fixture copy as its working folder, so a simulator
cannot stay in memory between calls. Its state is kept as the calls made so far instead:

  config.json    the entry's classes, BFCL's `initial_config` and which class owns each tool
  calls.json     the calls made so far in this rollout, `[{"name", "arguments"}]`
  expected.json  the ground truth: BFCL's possible answer, one list of calls per user turn

`call` rebuilds the instances from the initial config (as BFCL's
`execute_multi_turn_func_call` does: `_load_scenario` on a deep copy), replays `calls.json`
(the simulators draw from their own seeded `random.Random`, so a replay is the same run),
runs the new call, appends it and returns its result as BFCL does (a string as is, a dict as
JSON, else `str`; an exception as `Error during execution: ...`). `state_ok` is the fixture's
oracle: it replays the rollout's calls and the ground truth's on two fresh sets of instances
and passes when BFCL's checks hold on the final state: every class's public attributes equal
(`_compare_instances`: `vars()` without `_` names, compared with `!=`), and every result the
ground truth's calls returned is among the rollout's results (BFCL's response check, over the
whole conversation rather than turn by turn, since the store question holds every turn).
"""

from __future__ import annotations

import collections
import copy
import importlib
import json
from pathlib import Path
from typing import Any

CONFIG, CALLS, EXPECTED = "config.json", "calls.json", "expected.json"
MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
STATELESS = ("MathAPI",)  # BFCL's STATELESS_CLASSES: no scenario to load
MAX_CALLS = 200  # a rollout's calls kept (a runaway agent is refused beyond this)


def _read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def instances(config: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name in config["involved_classes"]:
        cls = getattr(importlib.import_module(MODULES[name]), name)
        instance = cls()
        if name not in STATELESS:
            scenario = copy.deepcopy(config["initial_config"].get(name, {}))
            instance._load_scenario(scenario, long_context=False)
        out[name] = instance
    return out


def as_result(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def execute(objs: dict[str, Any], owner: dict[str, str], calls: list[dict[str, Any]]) -> list[str]:
    results = []
    for c in calls:
        try:
            method = getattr(objs[owner[c["name"]]], c["name"])
            # a copy: a simulator keeps what it is given (post_tweet's `mentions` list, which
            # mention() extends later), and the logged calls must stay as they were made
            results.append(as_result(method(**copy.deepcopy(c["arguments"]))))
        except Exception as e:  # what BFCL's executor records
            results.append(f"Error during execution: {e}")
    return results


def call(name: str, arguments: dict[str, Any]) -> str:
    """One tool call in the working folder (the rollout's fixture copy)."""
    folder = Path.cwd()
    config = _read(folder, CONFIG)
    log = _read(folder, CALLS)
    if len(log) >= MAX_CALLS:
        return f"Error during execution: more than {MAX_CALLS} calls in one conversation"
    objs = instances(config)
    execute(objs, config["owner"], log)
    entry = {"name": name, "arguments": arguments}
    (result,) = execute(objs, config["owner"], [entry])
    (folder / CALLS).write_text(json.dumps(log + [entry]), encoding="utf-8")
    return result


def differences(workdir: str) -> list[str]:
    """What keeps the final state from BFCL's ground truth ([] when nothing)."""
    folder = Path(workdir)
    config = _read(folder, CONFIG)
    owner = config["owner"]
    truth_calls = [c for turn in _read(folder, EXPECTED)["turns"] for c in turn]
    mine, truth = instances(config), instances(config)
    got = execute(mine, owner, _read(folder, CALLS))
    wanted = execute(truth, owner, truth_calls)
    found = []
    for name, expected in truth.items():
        for attr, value in vars(expected).items():
            if not attr.startswith("_") and getattr(mine[name], attr) != value:
                found.append(f"{name}.{attr} differs")
    missing = collections.Counter(wanted) - collections.Counter(got)
    found += [f"no call returned {r[:120]!r}" for r in missing]
    return found


def state_ok(workdir: str) -> bool:
    return not differences(workdir)
