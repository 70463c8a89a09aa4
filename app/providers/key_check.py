"""A model's API key, checked before litellm is imported.

Importing litellm costs 5-7 s of CPU (docs/architecture.md#library-behaviour-the-code-relies-on),
and `LiteLLMProvider.preflight` only then finds a missing key. The common providers' key
variables are known here, so a missing key is refused at once. The table copies
`litellm.validate_environment` (any one of a provider's variables present counts as set, as
there); a provider not in it is left to preflight, which asks litellm itself.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.harness.workspace.config import RunConfig

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
}


def missing_key(model: str, api_base: str | None, api_key_env: str | None) -> str | None:
    """Why `model` cannot get an API key from the environment, or None when it can (or when
    only litellm can tell). A model with `api_base` (a local server) needs no key, as in
    `LiteLLMProvider._resolve_key`; so does a provider without an entry here (ollama/...)."""
    if api_key_env:
        if os.environ.get(api_key_env):
            return None
        return f"{api_key_env} is not set (the API key for model {model})"
    if api_base:
        return None
    variables = KEY_VARIABLES.get(model.split("/", 1)[0] if "/" in model else "")
    if variables is None or any(v in os.environ for v in variables):
        return None
    alternatives = f" (or {', '.join(variables[1:])})" if len(variables) > 1 else ""
    return (
        f"{variables[0]}{alternatives} not set: needed by model {model} "
        "(export it, or set api_key_env / api_base in the config)"
    )


def first_missing_key(config: RunConfig) -> str | None:
    """The first role whose model cannot get its key (see `missing_key`), as one line, or None.
    Simulated models need none."""
    for role, model in config.models.items():
        endpoint = config.endpoint(role)
        if not model.startswith("sim/") and (
            why := missing_key(model, endpoint.api_base, endpoint.api_key_env)
        ):
            return why
    return None
