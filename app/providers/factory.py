"""One provider per role from the run config: sim or litellm, behind the response cache."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.errors import UserError
from app.harness.workspace.config import Endpoint, RunConfig
from app.providers.cache import CachingProvider, ResponseCache
from app.providers.errors import ConfigurationError
from app.providers.key_check import first_missing_key
from app.providers.litellm_provider import CostBudget, LiteLLMProvider
from app.providers.retry import RetryingProvider
from app.providers.sim.evolver import EvolverShares
from app.providers.sim.oracle import OracleProvider, OracleSettings, is_oracle
from app.providers.sim.provider import SimProvider, SimSettings, world_name
from app.providers.sim.world import build_world
from core.protocols import LLMProvider, Message, TelemetryRecorder
from core.types import LLMResponse, Question, ToolSpec

# The worlds the built-in benchmarks were generated from (app.providers.sim.generate).
BUILT_IN_WORLD = (
    "sim-basic: sim/basic with sim_world_seed 7 and sim_units_per_type 72; "
    "sim-large (the demo's): the same with sim_units_per_type 216; "
    "sim-tools: sim/tools with sim_units_per_type 96"
)


class BudgetedProvider:
    """Charges a shared CostBudget for providers that do not charge it themselves."""

    def __init__(self, inner: LLMProvider, budget: CostBudget) -> None:
        self.inner, self.budget = inner, budget

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int = 0,
        role: str = "agent",
        response_format: dict[str, Any] | None = None,
    ) -> LLMResponse:
        self.budget.check()
        # response_format only when set, as CachingProvider.complete passes it: an inner
        # provider's own default applies otherwise
        extra = {"response_format": response_format} if response_format is not None else {}
        response = await self.inner.complete(
            messages,
            tools=tools,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            role=role,
            **extra,
        )
        self.budget.charge(response.cost_usd)
        return response


def sim_settings(config: RunConfig) -> SimSettings:
    return SimSettings(
        latency_ms=config.sim_latency_ms,
        jitter_ms=config.sim_latency_jitter_ms,
        fault_rate=config.sim_fault_rate,
        judge_noise=config.sim_judge_noise,
        judge_position_bias=config.sim_judge_position_bias,
        judge_invalid_share=config.sim_judge_invalid_share,
        noise_share=config.sim_noise_share,
        missing_context_share=config.sim_missing_context_share,
        strong_known_share=config.sim_strong_known_share,
        strong_price_factor=config.sim_strong_price_factor,
        shares=EvolverShares(
            harmful=config.sim_harmful_share,
            useless=config.sim_useless_share,
            adversarial=config.sim_adversarial_share,
            bundled_decoy=config.sim_bundled_decoy_share,
        ),
    )


def make_model(
    model: str,
    config: RunConfig,
    budget: CostBudget,
    endpoint: Endpoint | None = None,
    questions: Sequence[Question] = (),
) -> LLMProvider:
    """One provider for `model`, served at `endpoint` (default: the global api_base/key);
    `sim/oracle` answers from `questions`, the benchmark's answer key."""
    endpoint = endpoint or Endpoint(config.api_base, config.api_key_env)
    if is_oracle(model):
        oracle = OracleProvider(
            questions,
            OracleSettings(
                accuracy=config.sim_oracle_accuracy,
                judge_noise=config.sim_judge_noise,
                seed=config.sim_world_seed,
                rules=config.sim_oracle_rules,
                harmful_share=config.sim_harmful_share,
                useless_share=config.sim_useless_share,
            ),
        )
        return BudgetedProvider(oracle, budget)
    if model.startswith("sim/"):
        world = build_world(world_name(model), config.sim_world_seed, config.sim_units_per_type)
        sim = RetryingProvider(
            SimProvider(model, sim_settings(config), world=world),
            max_retries=config.max_retries,
            backoff_base_s=0.01,
        )
        return BudgetedProvider(sim, budget)
    provider = LiteLLMProvider(
        model,
        api_base=endpoint.api_base,
        api_key_env=endpoint.api_key_env,
        price_in_per_mtok=config.price_in_per_mtok,
        price_out_per_mtok=config.price_out_per_mtok,
        timeout_s=config.request_timeout_s,
        max_retries=config.max_retries,
        budget=budget,
    )
    try:
        provider.preflight()
    except ConfigurationError as e:
        raise UserError(str(e)) from None
    return provider


def make_providers(
    config: RunConfig,
    cache: ResponseCache,
    recorder: TelemetryRecorder | None,
    budget: CostBudget | None = None,
    questions: Sequence[Question] = (),
) -> dict[str, CachingProvider]:
    """Providers by role; roles sharing a model and its endpoint (`RunConfig.endpoint`) share
    one inner provider; all share the budget. `questions` (the benchmark) is what `sim/oracle`
    answers from."""
    budget = budget or CostBudget(config.max_cost_usd)
    if why := first_missing_key(config):  # every role's key before litellm is imported
        raise UserError(why)
    inner: dict[tuple[str, Endpoint], LLMProvider] = {}
    providers = {}
    for role, model in config.models.items():
        where = (model, config.endpoint(role))
        if where not in inner:
            inner[where] = make_model(model, config, budget, where[1], questions)
        providers[role] = CachingProvider(
            inner[where],
            cache,
            model_name=model,
            recorder=recorder,
            variant=sim_variant(config, model),
        )
    return providers


# Knobs that change no reply: the simulated model's delays
_REPLY_NEUTRAL = ("sim_latency_ms", "sim_latency_jitter_ms")


def sim_variant(config: RunConfig, model: str) -> str:
    """For a simulated model, the `sim_*` settings that differ from their defaults, so that a
    reply cached under one setting (say `sim_judge_noise = 0`) is never served under another;
    "" at the defaults (the keys every earlier cache holds) and for a real model."""
    if not model.startswith("sim/"):
        return ""
    defaults = RunConfig()
    changed = {
        name: getattr(config, name)
        for name in type(config).model_fields
        if name.startswith("sim_")
        and name not in _REPLY_NEUTRAL
        and getattr(config, name) != getattr(defaults, name)
    }
    return json.dumps(changed, sort_keys=True) if changed else ""


def check_sim_worlds(config: RunConfig, questions: Sequence[Question], benchmark: str) -> None:
    """Refuse a simulated model whose world did not generate (most of) this benchmark.

    The simulated agent answers, and the simulated judge and evolver reason about, only the
    questions of their own world, a pure function of the model's name, `sim_world_seed` and
    `sim_units_per_type`; any other question is scored wrong whatever the skills say, so a
    mismatch (a typo in the name, another seed) would train to 0 and spend money. A benchmark
    with a few questions edited or added by hand still runs: those few are simply wrong.
    `sim/oracle` has no world: it answers any benchmark (app/providers/sim/oracle.py).
    """
    for model, roles in _sim_models(config).items():
        world = build_world(world_name(model), config.sim_world_seed, config.sim_units_per_type)
        known = sum(world.case_for_text(q.question) is not None for q in questions)
        if questions and known * 2 < len(questions):
            keys = ", ".join(f"{role}_model" for role in roles)
            raise UserError(
                f"{keys} = {model!r} with sim_world_seed = {config.sim_world_seed} and "
                f"sim_units_per_type = {config.sim_units_per_type}: this simulated world knows "
                f"{known} of the {len(questions)} questions of benchmark {benchmark!r}; use the "
                f"world the benchmark was generated from ({BUILT_IN_WORLD}), or sim/oracle, "
                "which runs any benchmark (it checks plumbing, not learning)"
            )


def _sim_models(config: RunConfig) -> dict[str, list[str]]:
    """Each simulated model with the roles that use it, in the config's role order."""
    found: dict[str, list[str]] = {}
    for role, model in config.models.items():
        if model.startswith("sim/") and not is_oracle(model):
            found.setdefault(model, []).append(role)
    return found
