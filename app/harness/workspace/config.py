"""RunConfig: the one definition of every config key's default, type and range.

Loaded from TOML plus `--set` overrides. Every key is tagged structural or decision: a
structural change (what is trained on, how it is batched) refuses `--resume`; a decision
change (thresholds, concurrency, models) warns. The gate's keys are one section, `[gate]`
(`--set gate.n_max=60`); its thresholds are `core.evolution.gate.GateParams`, whose defaults
and range checks are the only ones, so the section *is* a GateParams plus the app's choice of
acceptance rule. Configs recorded before the section existed spell its keys `gate_n_max`;
they still load.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from loguru import logger
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import ErrorDetails

from app.errors import DamagedFile, UserError
from app.harness.workspace.atomic import read_json_object
from app.paths import absolute
from app.toml_compat import tomllib
from core.evolution.gate import GateParamError, GateParams
from core.evolution.run_level import DEFAULT_RUN_TESTS
from core.redact import redact_url_credentials
from core.structured import LEVELS

# Values are validated as JSON (what TOML and `--set` produce): an integer is a valid float,
# a list a valid tuple, but no string becomes a number and no number a bool. NaN and infinity
# are refused everywhere.
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
GATE = "gate"
STRUCTURAL, DECISION = "structural", "decision"

# The values of core.evolution.gate.AcceptanceStrategy, as the config validates them (a test
# keeps the two equal); GateSpec carries the enum.
GateStrategy = Literal[
    "eprocess", "mcnemar", "minibatch", "accept_all", "strict_improvement", "se_gate"
]


@dataclass(frozen=True)
class Endpoint:
    """Where one role's model is served: the server's base URL and the variable holding its
    API key (None: litellm's own default for the model)."""

    api_base: str | None
    api_key_env: str | None


@pydantic_dataclass(frozen=True, config=_STRICT)
class GateConfig(GateParams):
    """The `[gate]` section: which acceptance rule, and the e-process gate's thresholds
    (inherited from GateParams, with their defaults and ranges). All decision settings."""

    strategy: GateStrategy = "eprocess"  # the acceptance rule (core/evolution/acceptance.py)
    minibatch_k: int = Field(default=3, ge=1)  # units the "minibatch" rule (GEPA's) compares
    # how the slow update keeps a system/tool prompt change (app/harness/slow_update.py
    # `settle_prompt_change`): "eprocess" only if it wins the paired e-process test, "net_win"
    # if it wins more validation families than it loses (never on a tie)
    prompt_rule: Literal["eprocess", "net_win"] = "eprocess"
    # the order of a gate test's stage-1 families (app/harness/training/gate_ladder.py): the
    # seeded "shuffle", or "relevance" (most relevant to the edit's added text first, ties in
    # the shuffle's order; core/evolution/relevance.py says why the null is unchanged)
    ladder_order: Literal["relevance", "shuffle"] = "shuffle"
    # the share of a gate's candidate answers lost to provider errors that aborts the step
    guard_err: float = Field(default=0.2, ge=0.0, le=1.0)
    # the share of each task type's diagnosis-pool families kept for the gate alone: never in a
    # batch, a case pack or a momentum sample, so every ladder may use them
    # (app/harness/training/gate_ladder.py `GatePools.gate_only_units`). Off by default: it cost
    # learning (bench/acceptance.py, 72 units, default setting, 5 worlds: final test 0.846 at 0,
    # 0.832 at 0.5) and it halves what the evolver learns from
    gate_only_share: float = Field(default=0.0, ge=0.0, lt=1.0)
    # what α bounds (core/evolution/run_level.py): "per_test", each test's false accept, or
    # "fdr", the run's false discovery rate, spreading α over about `run_tests` tests (LOND).
    # Off by default: it costs learning (docs/training.md, "Over a whole run")
    run_control: Literal["per_test", "fdr"] = "per_test"
    run_tests: int = Field(default=DEFAULT_RUN_TESTS, ge=1)
    # answers per pass/fail gate question when the benchmark declares its units independent
    # (app/harness/training/gate_ladder.py): each draw, sampled afresh, is one more observation.
    # 1 (off) by default: a draw informs only if the agent samples (docs/training.md, "More
    # answers per question")
    draws: int = Field(default=1, ge=1, le=5)
    # which questions get those draws: only those whose baseline and candidate answers differed
    # in an earlier draw ("changed": about the calls of one draw), or "every" one
    draws_for: Literal["changed", "every"] = "changed"
    # the line check of an accepted bundle (app/harness/training/bundle_check.py): an edit
    # that, left out, turns more of the lost units that follow it alone right than won units
    # wrong is dropped before the bundle is kept
    bundle_check: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        # the run-level bound sums every test's level: each must be a valid test
        for key, rule in (("strategy", self.strategy), ("prompt_rule", self.prompt_rule)):
            if self.run_control == "fdr" and rule != "eprocess":
                raise GateParamError(key, rule, '"eprocess" when run_control = "fdr"')


def _s(default: Any = None, **constraints: Any) -> Any:
    return Field(default, json_schema_extra={"kind": STRUCTURAL}, **constraints)


def _d(default: Any = None, **constraints: Any) -> Any:
    return Field(default, json_schema_extra={"kind": DECISION}, **constraints)


SHARE = {"ge": 0.0, "le": 1.0}
POSITIVE = {"ge": 1}
NON_NEGATIVE = {"ge": 0}


class RunConfig(BaseModel):
    model_config = ConfigDict(**_STRICT, frozen=True)

    # models: "sim/<world>" runs offline; anything else goes through litellm.
    agent_model: str = _d("sim/basic")
    evolver_model: str = _d("sim/basic")
    judge_model: str = _d("sim/basic")
    api_base: str | None = _d(None)
    # Per-role endpoints (README "Real models"): a role's own server and key variable, so a
    # weak agent and a strong evolver can run on two servers. None = the global `api_base` /
    # `api_key_env`. In TOML `[evolver] api_base = ...` is `evolver_api_base` (like `[sim]`).
    agent_api_base: str | None = _d(None)
    evolver_api_base: str | None = _d(None)
    judge_api_base: str | None = _d(None)
    agent_api_key_env: str | None = _d(None)
    evolver_api_key_env: str | None = _d(None)
    judge_api_key_env: str | None = _d(None)
    temperature: float = _d(0.0, ge=0.0, le=2.0)
    max_tokens: int = _d(1024, **POSITIVE)
    # the agent's own reply bound (None: max_tokens); a short-answer benchmark on a CPU model
    # caps a rambling answer without cutting the evolver's edits (bench/real_learning.toml)
    agent_max_tokens: int | None = _d(None, gt=0)
    request_timeout_s: float = _d(60.0, **NON_NEGATIVE)
    max_retries: int = _d(4, **NON_NEGATIVE)
    max_cost_usd: float | None = _d(None, gt=0.0)
    # paid model calls training may make (the baseline and the test-pool tests not counted):
    # spent, training ends and the best version is tested (app/harness/training/call_budget.py)
    max_calls: int | None = _d(None, gt=0)
    concurrency: int = _d(16, **POSITIVE)

    # agent loop (skill modes: app/harness/rollouts/agent_prompts.py)
    skill_mode: Literal["inline", "tool", "progressive"] = _s("inline")
    max_steps: int = _s(6, **POSITIVE)

    # which agent the rollouts run (docs/agents.md); `[agent] kind = "command"` is
    # `agent_kind`. "builtin": the loop of app/harness/rollouts/inference.py. "command": the
    # executable `agent_command` (an argv list), one sandboxed process per rollout; "python":
    # the `agent_function` (`module:function`) in this process. Both call the run's agent
    # model through the recording gateway (app/harness/agents/gateway.py), each rollout at
    # most `agent_call_cap` model calls and `agent_timeout_s` seconds. A command agent finds the
    # skills as Agent Skills trees in each of `agent_skills_dirs` of its folder (Codex CLI and
    # OpenCode read `.agents/skills`, Claude Code `.claude/skills`).
    agent_kind: Literal["builtin", "command", "python"] = _d("builtin")
    agent_command: tuple[str, ...] = _d(())
    agent_skills_dirs: tuple[str, ...] = _d((".agents/skills",))
    agent_function: str = _d("")
    agent_timeout_s: float = _d(300.0, gt=0.0, le=86_400.0)
    agent_call_cap: int = _d(32, ge=1, le=10_000)

    # training schedule
    seed: int = _s(1)
    epochs: int = _s(4, **POSITIVE)
    batch_size: int = _s(48, **POSITIVE)
    min_class_per_batch: int = _s(2, **NON_NEGATIVE)
    batch_correct_ratio: float = _s(0.15, **SHARE)
    task_types: tuple[str, ...] | None = _s(None)
    # task types never trained or prompt-evolved: all their questions go to the test pool
    # (app/harness/rollouts/pools.py `hold_out_task_types`, docs/scorecard.md#holdouts)
    holdout_task_types: tuple[str, ...] = _s(())
    eval_min_per_class: int = _s(5, **NON_NEGATIVE)
    trainable_min_units: int = _s(12, **NON_NEGATIVE)
    early_stop_patience: int = _d(2, **NON_NEGATIVE)
    # up to 5 edits per candidate all run long: a one-rule edit is rarely confirmable on a small
    # benchmark, a bundle is (docs/training.md, "How many edits a candidate carries")
    edit_budget_start: int = _d(5, **NON_NEGATIVE)
    edit_budget_end: int = _d(5, **NON_NEGATIVE)
    # proposals the evolver makes per skill file and step (and per prompt file at the slow
    # update); above 1, the one answering the most shown questions right goes on to the gate
    # (app/harness/training/screen.py). 3: a weak evolver's decoys and generic lines rarely
    # reach a test (docs/training.md, "Several proposals a step"); 1 asks once, as before
    evolve_proposals: int = _d(3, ge=1, le=5)
    # a task type's evolver is also shown its earlier packs' failures that still fail, up to
    # 12 per pack (core/evolution/diagnose.py `with_earlier_failures`): more rules per edit
    carry_failures: bool = _d(True)
    cooldown_steps: int = _d(2, **NON_NEGATIVE)
    momentum_samples: int = _d(24, **NON_NEGATIVE)
    evolve_prompts: bool = _d(True)
    holdout_each_epoch: bool = _d(True)
    appendix_max_lines: int = _d(40)

    # the acceptance rule and its thresholds: the [gate] section
    gate: GateConfig = _d(GateConfig())

    # simulated world knobs (ignored by real models); `[sim] fault_rate` is `sim_fault_rate`
    sim_latency_ms: float = _d(0.0, **NON_NEGATIVE)
    sim_latency_jitter_ms: float = _d(0.0, **NON_NEGATIVE)
    sim_fault_rate: float = _d(0.0, **SHARE)
    sim_harmful_share: float = _d(0.2, **SHARE)
    sim_useless_share: float = _d(0.15, **SHARE)
    # of the simulated evolver's bundles of true rules, the share that also carries a decoy
    sim_bundled_decoy_share: float = _d(0.0, **SHARE)
    sim_adversarial_share: float = _d(0.0, **SHARE)
    # share of the simulated agent's answers re-drawn per request (sampling noise; default
    # app/providers/sim/provider.py NOISE_SHARE): bench/acceptance.py's `noisy0.3` raises it
    sim_noise_share: float = _d(0.03, **SHARE)
    sim_world_seed: int = _s(7)  # which simulated world; its benchmark: app.providers.sim.generate
    sim_units_per_type: int = _s(72, **POSITIVE)
    # share of the questions with context whose context the simulated agent never reads
    # (app/providers/sim/agent.py skips_context): missing-context failures for bench/triage.py
    sim_missing_context_share: float = _d(0.0, **SHARE)
    # `sim/oracle` (any benchmark, app/providers/sim/oracle.py): the chance it answers a
    # question right, the same for every skills version (it checks plumbing, not learning)
    sim_oracle_accuracy: float = _d(0.6, **SHARE)
    # 0: sim/oracle never learns; n > 0: each question needs one of n generic rules, which lift
    # it to 0.9 once in the text the agent is sent (`estimate`'s learning stand-in)
    sim_oracle_rules: int = _d(0, ge=0, le=8)
    # `sim/<world>-strong` (the offline teacher of `distill`, docs/distill.md): the share of the
    # world's hidden rules it knows without being told, and its notional price per token as a
    # multiple of the plain simulated model's (app/providers/sim/provider.py)
    sim_strong_known_share: float = _d(0.8, **SHARE)
    sim_strong_price_factor: float = _d(10.0, gt=0)
    # `distill` (docs/distill.md): the smallest teacher-student gap on validation worth
    # distilling, the probe's two-sided alpha and bootstrap resamples, the teacher memories the
    # trained student may retrieve (tried against memory_k on validation; equal to memory_k:
    # no choice), and the share of the teacher's test accuracy the student must reach to be
    # promoted
    distill_min_gap: float = _d(0.05, **SHARE)
    distill_alpha: float = _d(0.05, gt=0.0, lt=1.0)
    distill_resamples: int = _d(2000, ge=100, le=100_000)
    distill_memory_k: int = _d(3, ge=0, le=20)
    distill_promote_share: float = _d(0.9, **SHARE)

    # model I/O (README "Real models")
    # Diagnoses are made by the judge role (`judge_model`). When more than this share of a
    # step's diagnoses do not parse, `on_degraded_diagnoses` decides: evolve from the raw
    # failure packs ("raw_packs", recorded as such) or stop the run ("abort").
    diagnosis_degraded_max_share: float = _d(0.5, **SHARE)
    on_degraded_diagnoses: Literal["raw_packs", "abort"] = _d("raw_packs")
    # Re-run each judged skill gap whose question has context once more with that context
    # inlined; a pass makes it missing_context, so only confirmed gaps drive skill edits
    # (app/harness/training/triage_probe.py). Costs one rollout per such failure.
    triage_probe: bool = _d(False)
    # Which failures the judge diagnoses after the triage rules (core/evolution/triage.py):
    # "all" that no rule decides; "unanswered" only runs that broke or gave no answer (an
    # answered failure is a skill gap by `rule:answered`, no judge call); "auto" as "all" until
    # the judge's first JUDGE_AUTO_AFTER verdicts of the training were all overruled, then as
    # "unanswered" (docs/configuration.md#the-judge-in-diagnosis-diagnosis_judge)
    diagnosis_judge: Literal["all", "unanswered", "auto"] = _d("auto")
    # Response format for diagnoses and edits: "auto" asks litellm what the model supports
    # (and remembers per model, in the workspace, what a server rejected), else a fixed level
    # (core.structured.LEVELS).
    structured_output: str = _d("auto")
    api_key_env: str | None = _d(None)  # read the API key from this variable instead
    price_in_per_mtok: float | None = _d(None, **NON_NEGATIVE)  # USD per million input tokens
    price_out_per_mtok: float | None = _d(None, **NON_NEGATIVE)  # (both override litellm's)

    # best-of-N rollouts (app/harness/data/fork.py): the judge (app/harness/data/judge.py) and memories
    # (app/harness/rollouts/memory.py; memory_k > 0 injects that many into infer/eval/train prompts)
    judge_samples: int = _d(3, **POSITIVE)
    judge_temperature: float = _d(0.1, ge=0.0, le=2.0)
    judge_max_calls_per_batch: int = _d(100, **NON_NEGATIVE)
    memory_k: int = _d(0, **NON_NEGATIVE)
    # loop health (docs/scorecard.md#loop-health): keep one retrieved memory per normalised
    # tool sequence, and stop retrieving memories stored that many skills versions ago (0: never)
    memory_dedupe: bool = _d(False)
    memory_retire_after_versions: int = _d(0, **NON_NEGATIVE)
    sim_judge_noise: float = _d(0.0, **SHARE)
    # answer checkers beyond the built-in ones (docs/checkers.md): a user `module:function`
    # runs in worker processes with a per-call timeout; `rubric` is scored by judge_model
    # `rubric_samples` times at `rubric_temperature`
    checker_timeout_s: float = _d(10.0, gt=0.0)
    checker_workers: int = _d(2, **POSITIVE)
    # environment variables user code (checkers, verifiers, rewards) gets beyond the
    # allow-list of app/harness/rollouts/custom_checkers.py `ENV_ALLOW` (docs/checkers.md)
    checker_env: tuple[str, ...] = _d(())
    rubric_samples: int = _d(3, **POSITIVE)
    rubric_temperature: float = _d(0.1, ge=0.0, le=2.0)
    sim_judge_position_bias: float = _d(0.0, **SHARE)
    # share of the simulated judge's rubric replies that do not parse (app/providers/sim/judge.py)
    sim_judge_invalid_share: float = _d(0.0, **SHARE)

    @field_validator("structured_output")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value not in ("auto", *LEVELS):
            raise ValueError(f"one of auto, {', '.join(LEVELS)}")
        return value

    @field_validator("agent_skills_dirs")
    @classmethod
    def _skills_dirs_inside(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Folders inside the agent's own: relative, no `..`, at least one."""
        if not value:
            raise ValueError('at least one folder, e.g. [".agents/skills"]')
        for folder in value:
            parts = Path(folder).parts
            if not parts or Path(folder).is_absolute() or ".." in parts:
                raise ValueError(f"{folder!r}: a folder inside the agent's, e.g. .claude/skills")
        return value

    @model_validator(mode="after")
    def _agent_named(self) -> RunConfig:
        """An outside agent needs what to run; what to run needs an outside agent."""
        if self.agent_kind == "command" and not (self.agent_command and self.agent_command[0]):
            raise ValueError(
                "key 'agent_command' must be the command to run, a non-empty list of "
                'strings such as ["python", "agent.py"], when agent_kind = "command"'
            )
        if self.agent_kind == "python" and not _is_target(self.agent_function):
            raise ValueError(
                "key 'agent_function' must be 'module:function' or 'path/to/file.py:function' "
                f'when agent_kind = "python" (got {self.agent_function!r})'
            )
        if self.agent_kind != "command" and self.agent_command:
            raise ValueError(f"key 'agent_command' is set but agent_kind is {self.agent_kind!r}")
        if self.agent_kind != "python" and self.agent_function:
            raise ValueError(f"key 'agent_function' is set but agent_kind is {self.agent_kind!r}")
        return self

    @property
    def uses_sim(self) -> bool:
        return any(m.startswith("sim/") for m in self.models.values())

    @property
    def models(self) -> dict[str, str]:
        return {"agent": self.agent_model, "evolver": self.evolver_model, "judge": self.judge_model}

    def endpoint(self, role: str) -> Endpoint:
        """The role's (agent, evolver, judge) own api_base / api_key_env where set, else the
        global ones."""
        base, key_env = {
            "agent": (self.agent_api_base, self.agent_api_key_env),
            "evolver": (self.evolver_api_base, self.evolver_api_key_env),
            "judge": (self.judge_api_base, self.judge_api_key_env),
        }[role]
        return Endpoint(
            self.api_base if base is None else base,
            self.api_key_env if key_env is None else key_env,
        )


def _is_target(text: str) -> bool:
    """`module:function`, both parts present (the loader checks they exist)."""
    module, colon, function = text.partition(":")
    return bool(colon and module.strip() and function.strip())


GATE_KEYS = tuple(f.name for f in fields(GateConfig))
# Every setting as a user writes it: `epochs`, `sim_fault_rate`, `gate.n_max`.
KEYS = frozenset(
    [
        *(name for name in RunConfig.model_fields if name != GATE),
        *(f"{GATE}.{k}" for k in GATE_KEYS),
    ]
)


def kind_of(name: str) -> str:
    """structural or decision, for a top-level key."""
    extra = RunConfig.model_fields[name].json_schema_extra
    assert isinstance(extra, dict), name
    return str(extra["kind"])


# -- loading -----------------------------------------------------------------------------------


def build_config(
    data: Mapping[str, Any],
    source: str,
    base: RunConfig | None = None,
    relative_to: Path | None = None,
) -> RunConfig:
    """`base` with the keys of `data` set; any problem is one UserError line naming the key(s)
    and `source`. Keys may be nested (`{"gate": {"n_max": 60}}`), dotted (`gate.n_max`) or
    spelled the pre-section way (`gate_n_max`). A relative file path in `data`'s
    `agent_function`, and an `agent_command` argument naming an existing file by a relative
    path, are anchored at `relative_to` (the config file's folder), else at the current
    directory."""
    top, gate = _split_keys(data)
    if isinstance(top.get("agent_function"), str):
        top["agent_function"] = anchor_agent_file(top["agent_function"], relative_to)
    if isinstance(top.get("agent_command"), list):
        top["agent_command"] = anchor_command_files(top["agent_command"], relative_to)
    merged = (base or RunConfig()).model_dump(mode="json")
    merged[GATE].update(gate)
    merged.update(top)  # a [gate] that is not a table lands here, and is refused as such
    try:
        return RunConfig.model_validate_json(json.dumps(merged, default=str))
    except ValidationError as e:
        problems = (describe_problem(error) for error in e.errors())
        raise UserError(f"{source}: " + "; ".join(problems)) from None


def anchor_agent_file(target: str, folder: Path | None) -> str:
    """`path/to/agent.py:run` with the path made absolute: a config file's relative path
    names a file beside that config (as a benchmark.toml's tool paths name files of its
    folder), one given on the command line or to the API a file of the current directory
    (as every path argument does, app/paths.py `absolute`). `module:function` is unchanged.
    The run records the absolute path, so `eval` after `train` finds the same file."""
    file_name, colon, function = target.rpartition(":")
    if not colon or not file_name.endswith(".py"):
        return target
    path = Path(file_name).expanduser()
    if not path.is_absolute():
        path = (folder or Path.cwd()) / path
    return f"{absolute(path)}:{function}"


def anchor_command_files(argv: list[Any], folder: Path | None) -> list[Any]:
    """A command agent's arguments with each relative path that names an existing file (beside
    the config file, else in the current directory) made absolute: the agent runs in a
    temporary folder, where `agent.py` would name nothing. Other arguments are unchanged (as
    MCP servers' arguments, app/harness/tools/runtime.py)."""
    base = folder or Path.cwd()
    return [
        str(absolute(base / a))
        if isinstance(a, str) and a and not Path(a).is_absolute() and (base / a).is_file()
        else a
        for a in argv
    ]


def _split_keys(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level keys, [gate] keys). A table other than [gate] (`[sim] fault_rate`) and a
    dotted key name the prefixed top-level key (`sim_fault_rate`), as they always have."""
    top: dict[str, Any] = {}
    gate: dict[str, Any] = {}
    for key, value in data.items():
        table, dot, sub = key.partition(".")
        if dot:
            key, value = table, {sub: value}
        if key == GATE and isinstance(value, dict):
            gate.update(value)
        elif key.startswith(f"{GATE}_") and key[len(GATE) + 1 :] in GATE_KEYS:
            gate[key[len(GATE) + 1 :]] = value  # recorded before [gate] was a section
        elif isinstance(value, dict):
            top.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            top[key] = value
    return top, gate


def describe_problem(error: ErrorDetails, prefix: str = "") -> str:
    """One pydantic error as a short clause naming the key, under `prefix` (never pydantic's
    own multi-line layout). Shared with the checkpoint's state (app/harness/training/checkpoint.py)."""
    loc = [prefix] if prefix else []
    loc += [str(part) for part in error["loc"] if not isinstance(part, int)]
    key = ".".join(loc)
    value = error.get("input")
    got = f"(got {type(value).__name__} {value!r})"
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"unknown config key '{key}'{'' if prefix else _did_you_mean(key)}"
    if kind == "missing":
        return f"key '{key}' missing"
    if kind == "value_error" and not key:  # a check across keys names its keys itself
        return error["msg"].removeprefix("Value error, ")
    cause = ctx.get("error")
    if isinstance(cause, GateParamError):  # GateParams' own range check, on the section
        return f"key '{GATE}.{cause.name}' must be {cause.requirement} (got {cause.value!r})"
    if value is None:
        return f"key '{key}' may not be null"
    requirement = {
        "greater_than_equal": f">= {ctx.get('ge')}",
        "greater_than": f"> {ctx.get('gt')}",
        "less_than_equal": f"<= {ctx.get('le')}",
        "less_than": f"< {ctx.get('lt')}",
        "literal_error": f"one of {ctx.get('expected')}",
        "finite_number": "a finite number",
        "int_type": "an integer",
        "float_type": "a number",
        "string_type": "a string",
        "bool_type": "true or false",
        "tuple_type": "a list",
        "list_type": "a list",
        "dict_type": "an object",
        "dataclass_type": "a table (an object)",
    }.get(kind)
    if requirement is None:
        requirement = error["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
    return f"key '{key}' must be {requirement} {got}"


def _did_you_mean(key: str) -> str:
    """` (did you mean 'epochs'?)` for a key close to a config key (`epoch`, `gate.alpah`)."""
    known = [k for k in RunConfig.model_fields if k != GATE] + [f"{GATE}.{k}" for k in GATE_KEYS]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


def load_config(path: Path | None, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    config = RunConfig()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: config file not found") from None
        except UnicodeDecodeError as e:
            raise UserError(f"{path}: config file is not UTF-8 text ({e.reason})") from None
        except OSError as e:  # a folder, no permission
            raise UserError(f"{path}: cannot read the config file ({e.strerror})") from None
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{path}: invalid TOML: {e}") from None
        config = build_config(data, str(path), config, relative_to=Path(path).parent)
    if overrides:
        config = build_config(overrides, "command line", config)
    return config


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` (or `gate.key=value`) from `--set`; the value is read as TOML so types are
    explicit."""
    if "=" not in text:
        raise UserError(f"--set expects key=value (got {text!r})")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


# -- the fingerprint recorded in checkpoint.json --------------------------------------------


def fingerprint(config: RunConfig, benchmark_hash: str) -> dict[str, dict[str, Any]]:
    """{"structural": {...}, "decision": {...}}, one flat key per setting (`gate.n_max`)."""
    split: dict[str, dict[str, Any]] = {
        STRUCTURAL: {"benchmark_hash": benchmark_hash},
        DECISION: {},
    }
    for name, value in config.model_dump(mode="json").items():
        if name == GATE:
            split[kind_of(name)].update({f"{GATE}.{k}": v for k, v in value.items()})
            continue
        if isinstance(value, str):  # as stored: credentials in an api_base never are
            value = redact_url_credentials(value)
        split[kind_of(name)][name] = value
    return split


def _canonical(key: str) -> str:
    """A recorded key as written today: `gate_n_max` (before [gate] was a section) is
    `gate.n_max`."""
    sub = key.removeprefix(f"{GATE}_")
    return f"{GATE}.{sub}" if sub != key and sub in GATE_KEYS else key


def fingerprint_changes(
    saved: dict[str, Any], current: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """(structural changes, decision changes) as 'key: old -> new' strings. A key the saved
    fingerprint lacks (it predates the key) counts as its default, the value
    `recorded_config` gives it."""
    defaults = fingerprint(RunConfig(), "")

    def diff(kind: str) -> list[str]:
        old = {k: v for k, v in defaults[kind].items() if k in current.get(kind, {})}
        old.update({_canonical(k): v for k, v in saved.get(kind, {}).items()})
        new = current.get(kind, {})
        return [
            f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
            for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)
        ]

    return diff(STRUCTURAL), diff(DECISION)


def recorded_config(saved: dict[str, Any], source: str) -> RunConfig:
    """The config a checkpoint's fingerprint records. Keys this version no longer has are
    warned about and ignored, so an upgrade never strands a long run."""
    recorded: dict[str, Any] = {}
    for kind in (STRUCTURAL, DECISION):
        for key, value in saved[kind].items():
            name = _canonical(key)
            if name == "benchmark_hash":
                continue
            if name not in KEYS:
                logger.warning("{}: config key '{}' is no longer known; ignored", source, key)
                continue
            recorded[name] = value
    return build_config(recorded, source)


def workspace_recorded_config(root: Path) -> RunConfig | None:
    """The config the workspace's training run recorded in its checkpoint.json (the run's
    config fingerprint), or None when it has no checkpoint (never trained)."""
    path = Path(root) / "checkpoint.json"
    if not path.is_file():
        return None
    saved = read_json_object(path, "checkpoint").get("config_fingerprint")
    if not isinstance(saved, dict) or not all(
        isinstance(saved.get(kind), dict) for kind in (STRUCTURAL, DECISION)
    ):
        raise DamagedFile(
            f"{path}: corrupt checkpoint: its 'config_fingerprint' holds no run config; "
            "pass --config (config=) to choose one"
        )
    return recorded_config(saved, f"{path} (the run's config)")
