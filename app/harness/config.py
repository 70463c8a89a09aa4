"""RunConfig: one frozen dataclass, loaded from TOML plus CLI overrides (the fingerprint:
docs/architecture.md#checkpoint-and-resume).

Every field is tagged structural or decision. A structural change (what is trained on, how it
is batched) refuses `--resume`; a decision change (thresholds, concurrency, models) warns.
"""

from __future__ import annotations

import hashlib
import json
import math
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.toml_compat import tomllib
from core.redact import redact_url_credentials

GATE_STRATEGIES = ("eprocess", "mcnemar", "minibatch", "accept_all")


def _s(default: Any = MISSING, **kw: Any) -> Any:
    return _field(default, "structural", **kw)


def _d(default: Any = MISSING, **kw: Any) -> Any:
    return _field(default, "decision", **kw)


def _field(default: Any, kind: str, **kw: Any) -> Any:
    meta = {"kind": kind}
    if "default_factory" in kw:
        return field(default_factory=kw["default_factory"], metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunConfig:
    # models: "sim/<world>" runs offline; anything else goes through litellm.
    agent_model: str = _d("sim/basic")
    evolver_model: str = _d("sim/basic")
    judge_model: str = _d("sim/basic")
    api_base: str | None = _d(None)
    temperature: float = _d(0.0)
    max_tokens: int = _d(1024)
    request_timeout_s: float = _d(60.0)
    max_retries: int = _d(4)
    max_cost_usd: float | None = _d(None)
    concurrency: int = _d(16)

    # agent loop
    skill_mode: str = _s("inline")  # inline | tool | progressive (app/harness/agent_prompts.py)
    max_steps: int = _s(6)

    # training schedule
    seed: int = _s(1)
    epochs: int = _s(4)
    batch_size: int = _s(48)
    min_class_per_batch: int = _s(2)
    batch_correct_ratio: float = _s(0.15)
    task_types: tuple[str, ...] | None = _s(None)
    eval_min_per_class: int = _s(5)
    trainable_min_units: int = _s(12)
    early_stop_patience: int = _d(2)
    edit_budget_start: int = _d(4)
    edit_budget_end: int = _d(1)
    cooldown_steps: int = _d(2)
    momentum_samples: int = _d(24)
    evolve_prompts: bool = _d(True)
    holdout_each_epoch: bool = _d(True)
    appendix_max_lines: int = _d(40)

    # the gate: which acceptance rule, then the e-process gate's thresholds
    gate_strategy: str = _d("eprocess")  # eprocess | mcnemar | minibatch | accept_all
    gate_minibatch_k: int = _d(3)  # units the "minibatch" rule (GEPA's) compares
    gate_e_confirm: float = _d(20.0)
    gate_e_provisional: float = _d(5.0)
    gate_e_rollback: float = _d(10.0)
    gate_w_net_min: int = _d(2)
    gate_delta_min: float = _d(0.02)
    gate_lambda_dir: float = _d(0.35)
    gate_lambda_strategy: str = _d("mixture")  # mixture | fixed | kt
    gate_lambda_max: float = _d(0.5)
    gate_shrink_k: int = _d(10)
    gate_e_futility: float | None = _d(None)  # reject once E_harm >= this (caps power)
    gate_curtail: bool = _d(True)  # stop once no accept is reachable within n_max
    gate_calibrate: bool = _d(True)  # exact finite-horizon accept level (<= e_confirm)
    gate_futility_share: float = _d(1 / 3)  # reject on no net win after this share (0: off)
    gate_futility_min: int = _d(10)  # ... and at least this many families
    gate_n_max: int = _d(200)  # families per test at most; the pool usually ends first
    gate_guard_err: float = _d(0.2)

    # simulated world knobs (ignored by real models)
    sim_latency_ms: float = _d(0.0)
    sim_latency_jitter_ms: float = _d(0.0)
    sim_fault_rate: float = _d(0.0)
    sim_harmful_share: float = _d(0.2)
    sim_useless_share: float = _d(0.15)
    sim_adversarial_share: float = _d(0.0)
    sim_world_seed: int = _s(7)  # which simulated world; its benchmark: app.providers.sim.generate
    sim_units_per_type: int = _s(72)

    # model I/O (issue 11)
    # Diagnoses are made by the judge role (`judge_model`). When more than this share of a
    # step's diagnoses do not parse, `on_degraded_diagnoses` decides: evolve from the raw
    # failure packs ("raw_packs", recorded as such) or stop the run ("abort").
    diagnosis_degraded_max_share: float = _d(0.5)
    on_degraded_diagnoses: str = _d("raw_packs")  # raw_packs | abort
    # Response format for diagnoses and edits: "auto" asks litellm what the model supports
    # (and remembers per model, in the workspace, what a server rejected), else a fixed level.
    structured_output: str = _d(
        "auto"
    )  # auto | json_schema | json_object_schema | json_object | prompt
    api_key_env: str | None = _d(None)  # read the API key from this variable instead
    price_in_per_mtok: float | None = _d(None)  # USD per million input tokens (overrides litellm)
    price_out_per_mtok: float | None = _d(None)  # USD per million output tokens

    # best-of-N rollouts (issue 14): the judge (app/harness/judge.py) and memories
    # (app/harness/memory.py; memory_k > 0 injects that many into infer/eval/train prompts)
    judge_samples: int = _d(3)
    judge_temperature: float = _d(0.1)
    judge_max_calls_per_batch: int = _d(100)
    memory_k: int = _d(0)
    sim_judge_noise: float = _d(0.0)
    sim_judge_position_bias: float = _d(0.0)

    def __post_init__(self) -> None:
        problems = list(_range_problems(self))
        if problems:
            raise UserError("invalid config: " + "; ".join(problems))

    @property
    def uses_sim(self) -> bool:
        return any(m.startswith("sim/") for m in self.models.values())

    @property
    def models(self) -> dict[str, str]:
        return {"agent": self.agent_model, "evolver": self.evolver_model, "judge": self.judge_model}


def _range_problems(c: RunConfig):
    for f in fields(c):
        value = getattr(c, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            yield f"{f.name} must be a finite number (got {value})"
    for name in ("temperature", "judge_temperature"):
        if not 0.0 <= getattr(c, name) <= 2.0:
            yield f"{name} must be within [0, 2] (got {getattr(c, name)})"
    positive = [
        "max_tokens",
        "concurrency",
        "max_steps",
        "epochs",
        "batch_size",
        "gate_n_max",
        "judge_samples",
    ]
    for name in positive:
        if getattr(c, name) < 1:
            yield f"{name} must be >= 1 (got {getattr(c, name)})"
    non_negative = [
        "min_class_per_batch",
        "eval_min_per_class",
        "trainable_min_units",
        "edit_budget_start",
        "edit_budget_end",
        "cooldown_steps",
        "momentum_samples",
        "early_stop_patience",
        "gate_w_net_min",
        "gate_shrink_k",
        "max_retries",
        "sim_latency_ms",
        "sim_latency_jitter_ms",
        "request_timeout_s",
        "judge_max_calls_per_batch",
        "memory_k",
    ]
    for name in non_negative:
        if getattr(c, name) < 0:
            yield f"{name} must be >= 0 (got {getattr(c, name)})"
    shares = [
        "batch_correct_ratio",
        "gate_guard_err",
        "gate_futility_share",
        "sim_fault_rate",
        "sim_harmful_share",
        "sim_useless_share",
        "sim_adversarial_share",
        "gate_delta_min",
        "sim_judge_noise",
        "sim_judge_position_bias",
    ]
    for name in shares:
        if not 0.0 <= getattr(c, name) <= 1.0:
            yield f"{name} must be within [0, 1] (got {getattr(c, name)})"
    for name in ("gate_lambda_dir", "gate_lambda_max"):
        if not 0.0 < getattr(c, name) < 1.0:
            yield f"{name} must be within (0, 1) (got {getattr(c, name)})"
    for name in ("gate_e_confirm", "gate_e_provisional", "gate_e_rollback"):
        if getattr(c, name) < 1.0:
            yield f"{name} must be >= 1 (got {getattr(c, name)})"
    if c.gate_e_futility is not None and c.gate_e_futility <= 1.0:
        yield f"gate_e_futility must be > 1 or unset (got {c.gate_e_futility})"
    if c.max_cost_usd is not None and c.max_cost_usd <= 0:
        yield f"max_cost_usd must be > 0 (got {c.max_cost_usd})"
    if c.skill_mode not in ("inline", "tool", "progressive"):
        yield f"skill_mode must be 'inline', 'tool' or 'progressive' (got {c.skill_mode!r})"
    if c.gate_strategy not in GATE_STRATEGIES:
        yield f"gate_strategy must be one of {', '.join(GATE_STRATEGIES)} (got {c.gate_strategy!r})"
    for name in ("gate_minibatch_k", "sim_units_per_type", "gate_futility_min"):
        if getattr(c, name) < 1:
            yield f"{name} must be >= 1 (got {getattr(c, name)})"
    if c.gate_lambda_strategy not in ("mixture", "fixed", "kt"):
        yield (
            "gate_lambda_strategy must be 'mixture', 'fixed' or 'kt' "
            f"(got {c.gate_lambda_strategy!r})"
        )
    yield from _model_io_problems(c)


def _model_io_problems(c: RunConfig):
    from core.structured import LEVELS

    if not 0.0 <= c.diagnosis_degraded_max_share <= 1.0:
        yield (
            "diagnosis_degraded_max_share must be within [0, 1] "
            f"(got {c.diagnosis_degraded_max_share})"
        )
    if c.on_degraded_diagnoses not in ("raw_packs", "abort"):
        yield (
            "on_degraded_diagnoses must be 'raw_packs' or 'abort' "
            f"(got {c.on_degraded_diagnoses!r})"
        )
    if c.structured_output not in ("auto", *LEVELS):
        yield (
            f"structured_output must be one of {['auto', *LEVELS]} (got {c.structured_output!r})"
        )
    for name in ("price_in_per_mtok", "price_out_per_mtok"):
        if getattr(c, name) is not None and getattr(c, name) < 0:
            yield f"{name} must be >= 0 (got {getattr(c, name)})"


FIELD_TYPES = typing.get_type_hints(RunConfig)


def _coerce(name: str, value: Any, source: str) -> Any:
    """Check one value against the field's annotation; name the key on mismatch."""
    hint = FIELD_TYPES[name]
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None:
        if type(None) in allowed:
            return None
        raise UserError(f"{source}: key '{name}' may not be null")
    for t in allowed:
        origin = typing.get_origin(t)
        if origin is tuple and isinstance(value, list | tuple):
            if all(isinstance(v, str) for v in value):
                return tuple(value)
        elif t is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        elif (
            t is int
            and isinstance(value, int)
            and not isinstance(value, bool)
            or t in (str, bool)
            and isinstance(value, t)
        ):
            return value
    want = " or ".join(getattr(t, "__name__", str(t)) for t in allowed)
    raise UserError(f"{source}: key '{name}' must be {want} (got {type(value).__name__} {value!r})")


def build_config(data: dict[str, Any], source: str, base: RunConfig | None = None) -> RunConfig:
    known = {f.name for f in fields(RunConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError(f"{source}: unknown config key '{unknown[0]}'")
    values = {k: _coerce(k, v, source) for k, v in data.items()}
    return replace(base or RunConfig(), **values)


def load_config(path: Path | None, overrides: dict[str, Any] | None = None) -> RunConfig:
    config = RunConfig()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: config file not found") from None
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{path}: invalid TOML: {e}") from None
        config = build_config(_flatten(data), str(path), config)
    if overrides:
        config = build_config(overrides, "command line", config)
    return config


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    """Allow `[gate] e_confirm = 20` as well as `gate_e_confirm = 20`."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                flat[f"{key}_{sub}"] = v
        else:
            flat[key] = value
    return flat


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` from `--set`; the value is read as TOML so types are explicit."""
    if "=" not in text:
        raise UserError(f"--set expects key=value (got {text!r})")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def fingerprint(config: RunConfig, benchmark_hash: str) -> dict[str, dict[str, Any]]:
    split: dict[str, dict[str, Any]] = {
        "structural": {"benchmark_hash": benchmark_hash},
        "decision": {},
    }
    for f in fields(RunConfig):
        value = getattr(config, f.name)
        if isinstance(value, str):  # as stored: credentials in an api_base never are
            value = redact_url_credentials(value)
        split[f.metadata["kind"]][f.name] = list(value) if isinstance(value, tuple) else value
    return split


def fingerprint_changes(saved: dict, current: dict) -> tuple[list[str], list[str]]:
    """(structural changes, decision changes) as 'key: old -> new' strings."""

    def diff(kind: str) -> list[str]:
        old, new = saved.get(kind, {}), current.get(kind, {})
        return [
            f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
            for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)
        ]

    return diff("structural"), diff("decision")


def config_digest(config: RunConfig) -> str:
    return hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode()).hexdigest()[:16]
