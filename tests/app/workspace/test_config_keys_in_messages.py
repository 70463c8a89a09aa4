"""Every config key that a message, docstring or comment-like string names must exist.

A message that tells the user to set a key which the config does not have sends them to a
dead end (`api_key_env` and `price_in/out_per_mtok` were once named in messages before the
config had them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.harness.workspace.config import KEYS

ROOT = Path(__file__).resolve().parents[3]
# `[gate] n_max = 60` is `gate.n_max`; `[sim] fault_rate = 0.1` is `sim_fault_rate`
NAME = r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
# A name written as a setting ("key = value", "set key", "raise key", "key in the config").
AS_SETTING = [
    re.compile(NAME + r"\s?=(?!=)"),
    re.compile(r"(?i)\b(?:set|raise|lower|increase|key|keys|choose)\s+'?" + NAME + r"\b"),
    re.compile(r"\b" + NAME + r"(?= in the config| \(config)"),
]
# Inside user-facing messages: any name shaped like a config key (slashed short forms such as
# `price_in/out_per_mtok` are split, so each half must exist on its own).
CONFIG_SHAPED = re.compile(
    r"\b((?:max|min|gate|sim|price|api|diagnosis|judge|agent|evolver|"
    r"structured|request|skill|on)_[a-z0-9_]+|[a-z0-9_]+_(?:model|env|"
    r"mtok|usd|share))\b"
)
MESSAGE_CALLS = {
    "warning",
    "info",
    "error",
    "debug",
    "print",
    "UserError",
    "RunFailed",
    "ConfigurationError",
    "ProviderError",
    "TransientError",
    "BudgetExceeded",
}
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE|WHERE)\b")
# Names that look like settings in strings but are something else, with where they live.
NOT_CONFIG = {
    "answer_fallbacks": "a benchmark.toml key, checked by app/harness/workspace/store.py",
    "family_units": "a benchmark.toml key (app/harness/workspace/benchmark_format.py)",
    "val_acc": "a report label",
    "with_calls": "a Python keyword argument in a docstring",
    "busy_timeout": "an SQLite pragma",
    "journal_mode": "an SQLite pragma",
    "page_size": "an SQLite pragma",
    "num_retries": "a litellm argument",
    "max_steps": "a config key and a stop reason",
    "max_tokens": "a request parameter",
    "on_change": "a Python parameter",
    "stop_reason": "a predictions column (TUI filters, SQL fragments)",
    "task_type": "a predictions column (TUI filters, SQL fragments)",
    "run_id": "a log column (SQL fragments)",
    "overwrite_run": "an argument of app/api/evaluation.py infer, named beside --overwrite-run",
    "epoch_batches": "a checkpoint.json key, checked by app/harness/training/checkpoint.py",
    "format_version": "a benchmark.toml key (app/harness/workspace/benchmark_format.py)",
    "allow_copyleft": "an argument of app/api/exports.py export, named beside --allow-copyleft",
    "allow_restricted": "an argument of app/api/exports.py export, named beside --allow-restricted",
    "extra_body": "an argument of the openai client, in serve's error messages",
    "SKILL_TRAINER_SERVE_TOKEN": "an environment variable read by `serve` (app/cli/serve.py)",
    "skill_trainer": "the extra field of serve's replies and requests (docs/serving.md)",
    "read_context": "a built-in tool's name (eval --tool-alias read_context=lookup)",
    "aws_access_key_id": "a planted canary's name in app/harness/data/scorecard.py",
    "oracle_function": "a benchmark.toml [fixtures.<name>] key (docs/tools.md)",
    "tool_rate": "a benchmark.toml [faults] key (docs/tools.md)",
    "model_name": "an argument of app/harness/agents/gateway.py running_gateway",
    "call_cap": "an argument of app/harness/agents/gateway.py open_rollout",
    "time_limit_s": "an argument of app/harness/agents/gateway.py open_rollout",
    "open_rollout": "a method of app/harness/agents/gateway.py, named in its refusals",
}


def known(name: str) -> bool:
    return name in KEYS or f"gate.{name}" in KEYS or f"sim_{name}" in KEYS or name in NOT_CONFIG


def mentions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted([*ROOT.glob("app/**/*.py"), *ROOT.glob("core/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_message: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                if (
                    f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                ) in MESSAGE_CALLS:
                    in_message |= {id(s) for a in node.args for s in ast.walk(a)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            if SQL.search(text):
                continue
            names = [n for pat in AS_SETTING for n in pat.findall(text)]
            if id(node) in in_message:
                names += CONFIG_SHAPED.findall(text.replace("/", " "))
            for name in names:
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_config_key_named_in_a_message_exists():
    found = mentions()
    # the scan does see messages: these keys are named by messages that tell users to set them
    assert {
        "max_cost_usd",
        "api_key_env",
        "diagnosis_degraded_max_share",
        "on_degraded_diagnoses",
        "structured_output",
        "price_in_per_mtok",
    } <= set(found)
    missing = {name: where for name, where in found.items() if not known(name)}
    assert not missing, f"messages name config keys that the config lacks: {missing}"


def test_the_scan_catches_a_short_form_of_two_keys():
    text = "no price_in/out_per_mtok: its cost counts as $0"
    names = CONFIG_SHAPED.findall(text.replace("/", " "))
    assert names == ["price_in", "out_per_mtok"] and not any(known(n) for n in names)
