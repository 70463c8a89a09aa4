"""Real models through litellm (docs/architecture.md#models; the library behaviour it
relies on: docs/architecture.md#library-behaviour-the-code-relies-on).

litellm is imported lazily (5-7 s) with the offline price map and no `.env` loading; its own
retries are off (`num_retries=0`) so that retries, backoff and their count live here, where
tests and the budget can see them. Nothing secret reaches an exception or a log line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio
from loguru import logger

from app.providers.errors import (
    BudgetExceeded,
    CallBudgetSpent,
    ConfigurationError,
    ProviderError,
    TransientError,
)
from app.providers.retry import FailureOutcome, RetryPolicy, Sleep
from core.protocols import Message
from core.redact import redact as redact_secrets
from core.redact import secret_values
from core.structured import is_format_rejection
from core.types import LLMResponse, ToolCall, ToolSpec, Usage

_litellm: ModuleType | None = None
_import_lock = threading.Lock()
_warned_unpriced: set[str] = set()

# Status codes worth another try: timeout, conflict, rate limit, server side, overloaded.
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# Keys a careless server may echo that no variable name gave away (placeholders excepted).
_KEY_SHAPES = re.compile(r"(?i)\b(sk-[A-Za-z0-9_\-]{8,}|bearer\s+(?!\[REDACTED)[^\s\"',]+)")
# A non-secret placeholder: local OpenAI-compatible servers ignore the key, the SDK needs one.
_PLACEHOLDER_KEY = "sk-no-key-required"
_MAX_DETAIL = 300
_TIMEOUT_GRACE_S = 5.0


def load_litellm() -> ModuleType:
    """Import litellm once per process, offline and quiet
    (docs/architecture.md#library-behaviour-the-code-relies-on)."""
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
                import litellm

                litellm.suppress_debug_info = True
                _litellm = litellm
    return _litellm


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Hide secrets from the environment (names such as *_KEY, *APIKEY, *_TOKEN: see core.redact),
    any extra ones (a key read from a differently named variable) and key-shaped strings."""
    secrets = {*secret_values(os.environ), *(s for s in extra_secrets if s)}
    text = redact_secrets(text, sorted(secrets, key=len, reverse=True))
    return _KEY_SHAPES.sub("***", text)


class CostBudget:
    """Run-wide spending cap shared by every provider of a run (thread- and task-safe), and
    the training's cap on paid model calls (`max_calls`), armed by the Runner (`arm_calls`)
    with a test of which calls count: measurements (the baseline, the tests on the test
    pool) are not training and are neither counted nor stopped.

    A call that starts under the cap may finish and is charged; after that no call starts.
    Overshoot is therefore bounded by the calls already in flight.
    """

    def __init__(self, max_usd: float | None) -> None:
        self.max_usd = max_usd
        self._spent = 0.0
        self._max_calls: int | None = None
        self._counts: Callable[[], bool] = lambda: True
        self._training_calls = 0  # paid calls counted against max_calls, carried included
        self._lock = threading.Lock()

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def training_calls(self) -> int:
        with self._lock:
            return self._training_calls

    @property
    def exhausted(self) -> bool:
        return self.max_usd is not None and self.spent_usd >= self.max_usd

    def arm_calls(
        self, max_calls: int | None, already: int = 0, counts: Callable[[], bool] | None = None
    ) -> None:
        """Count from now on the paid calls for which `counts()` holds (asked in the calling
        task) against `max_calls`; `already` were spent by earlier processes of the run."""
        with self._lock:
            self._max_calls = max_calls
            self._training_calls = already
            self._counts = counts or (lambda: True)

    def check(self) -> None:
        if self.exhausted:
            raise BudgetExceeded(
                f"cost budget of ${self.max_usd:.4f} reached (spent ${self.spent_usd:.4f}); "
                "no further model calls"
            )
        with self._lock:
            cap, used = self._max_calls, self._training_calls
        if cap is not None and used >= cap and self._counts():
            raise CallBudgetSpent(f"max_calls of {cap} reached ({used} paid training calls)")

    def charge(self, usd: float, calls: int = 1) -> None:
        """One paid call (`calls=1`), or money earlier processes spent (`calls=0`)."""
        counted = calls and self._max_calls is not None and self._counts()
        with self._lock:
            self._spent += usd
            if counted:
                self._training_calls += calls


@dataclass
class ProviderStats:
    """Counters for tests, benches and the run report."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    errors: int = 0


class LiteLLMProvider:
    """`core.protocols.LLMProvider` over any model litellm supports."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 60,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20,
        price_in_per_mtok: float | None = None,
        price_out_per_mtok: float | None = None,
        budget: CostBudget | None = None,
        sleep: Sleep = anyio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.price_in_per_mtok = price_in_per_mtok
        self.price_out_per_mtok = price_out_per_mtok
        self.budget = budget
        self.stats = ProviderStats()
        self.retry = RetryPolicy(
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
            sleep=sleep,
            rng=rng or random.Random(),
        )
        self._api_key: str | None = None
        self._priced = False
        self._supported: frozenset[str] | None = None  # sampling params the provider takes
        self._price_kwargs: dict[str, float] = {}
        self._ready = False
        self._preflight_lock: anyio.Lock | None = None

    # -- setup ---------------------------------------------------------------------------

    def preflight(self) -> None:
        """Import litellm and check model name, API key and pricing; idempotent, no network."""
        if self._ready:
            return
        litellm = load_litellm()
        provider, provider_base = self._check_model(litellm)
        self._supported = _supported_params(litellm, self.model, provider)
        self._api_key = self._resolve_key(litellm, provider_base)
        self._priced = self._has_price(litellm)
        self._price_kwargs = self._litellm_prices()
        if not self._priced and not self._explicit_prices and self.model not in _warned_unpriced:
            _warned_unpriced.add(self.model)
            logger.warning(
                "model {} has no price in litellm's table and no price_in_per_mtok / "
                "price_out_per_mtok in the config: its cost counts as $0 and the budget "
                "cannot stop it",
                self.model,
            )
        self._ready = True

    def _check_model(self, litellm: ModuleType) -> tuple[str, str | None]:
        try:
            _, provider, _, provider_base = litellm.get_llm_provider(
                self.model, api_base=self.api_base
            )
        except Exception:
            raise ConfigurationError(
                f"unknown model {self.model!r}: litellm cannot tell its provider; "
                "name it as 'provider/model', e.g. 'openai/gpt-4o-mini'"
            ) from None
        return provider, provider_base

    def _resolve_key(self, litellm: ModuleType, provider_base: str | None) -> str | None:
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise ConfigurationError(
                    f"{self.api_key_env} is not set (the API key for model {self.model})"
                )
            return value
        missing = litellm.validate_environment(self.model).get("missing_keys") or []
        if provider_base:  # the provider has a default server (ollama): no base variable needed
            missing = [k for k in missing if not k.endswith("_API_BASE")]
        if not missing:
            return None
        if self.api_base:  # a local OpenAI-compatible server usually needs no key
            return _PLACEHOLDER_KEY
        raise ConfigurationError(
            f"{', '.join(missing)} not set: needed by model {self.model} "
            "(export it, or set api_key_env / api_base in the config)"
        )

    def _has_price(self, litellm: ModuleType) -> bool:
        try:
            info = litellm.get_model_info(self.model)
        except Exception:
            return False
        return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))

    def _litellm_prices(self) -> dict[str, float]:
        """Per-call prices for litellm's own cost bookkeeping. Without them an unpriced model
        makes litellm fail a price lookup on every call (~2 ms CPU,
        docs/architecture.md#library-behaviour-the-code-relies-on)."""
        if self._explicit_prices:
            return {
                "input_cost_per_token": (self.price_in_per_mtok or 0.0) / 1e6,
                "output_cost_per_token": (self.price_out_per_mtok or 0.0) / 1e6,
            }
        if not self._priced:
            return {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
        return {}

    @property
    def _explicit_prices(self) -> bool:
        return self.price_in_per_mtok is not None or self.price_out_per_mtok is not None

    # -- the call ------------------------------------------------------------------------

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
        if not self._ready:
            await self._preflight_once()
        self.stats.calls += 1
        start = time.perf_counter()
        kwargs = self._request(messages, tools, temperature, max_tokens, seed)
        if response_format is not None:
            kwargs["response_format"] = response_format
        counts = _CallCounts()
        response = await self._call_with_retries(kwargs, counts)
        return dataclasses.replace(
            self._to_response(response, time.perf_counter() - start),
            attempts=counts.attempts,
            retries=counts.retries,
            timeouts=counts.timeouts,
        )

    async def _preflight_once(self) -> None:
        # The first import takes seconds: run it off the event loop, once, however many
        # calls arrive together (each would otherwise hold a worker thread).
        if self._preflight_lock is None:
            self._preflight_lock = anyio.Lock()
        async with self._preflight_lock:
            if not self._ready:
                await anyio.to_thread.run_sync(self.preflight)

    def _request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None,
        temperature: float,
        max_tokens: int,
        seed: int,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "num_retries": 0,  # retries are ours (counted, budget-checked)
            "timeout": self.timeout_s,
        }
        sampling = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
        if self._supported is None:  # unknown to litellm: let it drop what does not apply
            kwargs.update(sampling, drop_params=True)
        else:  # known once at preflight: cheaper than drop_params (~1 ms CPU per call)
            kwargs.update((k, v) for k, v in sampling.items() if k in self._supported)
        kwargs.update(self._price_kwargs)
        if tools:
            kwargs["tools"] = [t.as_openai() if isinstance(t, ToolSpec) else t for t in tools]
        if self.api_base:
            kwargs["api_base"] = self.api_base
        return kwargs

    async def _call_with_retries(self, kwargs: dict[str, Any], counts: _CallCounts) -> Any:
        litellm = load_litellm()

        async def attempt(number: int) -> Any:
            if self.budget:
                self.budget.check()
            self.stats.attempts += 1
            counts.attempts += 1
            # Backstop for providers that ignore `timeout`: a hang becomes a retryable
            # TimeoutError. A slow drip (a byte now and then) never trips a per-read timeout:
            # bound the whole request too. The key goes in here only, never into a variable a
            # traceback would show.
            with anyio.fail_after(self.timeout_s + min(_TIMEOUT_GRACE_S, self.timeout_s)):
                return await litellm.acompletion(**kwargs, api_key=self._api_key)

        return await self.retry.run(
            attempt, lambda exc, number: self._on_failure(exc, number, counts)
        )

    def _on_failure(self, exc: Exception, attempt: int, counts: _CallCounts) -> FailureOutcome:
        """The error to raise (carrying the call's counts), or the delay before the next
        attempt."""
        if isinstance(exc, BudgetExceeded):
            return exc  # refused before the request: not a failed attempt
        counts.timeouts += int(_is_timeout(exc))
        counts.last_timed_out = _is_timeout(exc)
        detail = self._describe(exc)
        if not _is_retryable(exc):
            self.stats.errors += 1
            return counts.attach(_fatal_error(exc, self.model, detail, self.api_key_env))
        if self.retry.is_last(attempt):
            self.stats.errors += 1
            return counts.attach(
                TransientError(f"model {self.model} failed after {attempt + 1} attempts: {detail}")
            )
        logger.debug("model {} attempt {} failed, retrying: {}", self.model, attempt + 1, detail)
        self.stats.retries += 1
        counts.retries += 1
        return self.retry.delay(attempt, _retry_after(exc))

    def _describe(self, exc: Exception) -> str:
        status = getattr(exc, "status_code", None)
        head = type(exc).__name__ + (f" {status}" if status else "")
        message = redact(str(exc), [self._api_key] if self._api_key else [])
        return f"{head}: {message[:_MAX_DETAIL]}"

    def _to_response(self, response: Any, latency_s: float) -> LLMResponse:
        if not getattr(response, "choices", None):
            raise ProviderError(f"model {self.model} returned no choices")
        message = response.choices[0].message
        usage = _usage(response)
        cost = self._cost(response, usage)
        if self.budget:
            self.budget.charge(cost)
        reply = LLMResponse(
            text=message.content or "",
            tool_calls=tuple(_tool_call(tc, i) for i, tc in enumerate(message.tool_calls or [])),
            usage=usage,
            cost_usd=cost,
            model=self.model,
            latency_s=latency_s,
        )
        return dataclasses.replace(
            reply, defect=_defect(reply, getattr(response.choices[0], "finish_reason", None))
        )

    def _cost(self, response: Any, usage: Usage) -> float:
        # Explicit prices win over litellm's table: they are the user's negotiated rates.
        if self._explicit_prices:
            return (
                usage.tokens_in * (self.price_in_per_mtok or 0.0)
                + usage.tokens_out * (self.price_out_per_mtok or 0.0)
            ) / 1e6
        if self._priced:
            # litellm has already priced the response while logging it (its documented
            # `_hidden_params["response_cost"]`); recomputing costs ~0.5 ms a call.
            known = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
            if isinstance(known, int | float):
                return float(known)
            try:
                return float(load_litellm().completion_cost(completion_response=response))
            except Exception as exc:  # never fail a paid-for answer over its bill
                logger.debug("completion_cost failed for {}: {}", self.model, type(exc).__name__)
        return 0.0


# -- helpers (module level: no state) ------------------------------------------------------


def _supported_params(litellm: ModuleType, model: str, provider: str) -> frozenset[str] | None:
    try:
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:
        return None
    return frozenset(params) if params else None


def _exception_chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_malformed(exc: Exception) -> bool:
    return any(isinstance(e, json.JSONDecodeError) for e in _exception_chain(exc))


@dataclass
class _CallCounts:
    """One call's attempts, retries and timeouts (recorded per call in `llm_calls`)."""

    attempts: int = 0
    retries: int = 0
    timeouts: int = 0
    last_timed_out: bool = False

    def attach(self, error: ProviderError) -> ProviderError:
        """The counts ride on the raised error, so a failed call is logged with them."""
        error.call_attempts = self.attempts  # type: ignore[attr-defined]
        error.call_retries = self.retries  # type: ignore[attr-defined]
        error.call_timeouts = self.timeouts  # type: ignore[attr-defined]
        error.timed_out = self.last_timed_out  # type: ignore[attr-defined]
        return error


def _is_timeout(exc: Exception) -> bool:
    litellm = load_litellm()
    return isinstance(exc, TimeoutError | litellm.Timeout) or "timed out" in str(exc).lower()


def _is_retryable(exc: Exception) -> bool:
    litellm = load_litellm()
    if _is_malformed(exc) or "Missing credentials" in str(exc):
        return False  # litellm reports both as 500s, but a retry cannot fix them
    if is_format_rejection(exc):
        return False  # a server that rejects a response format rejects it every time
    retryable = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        TimeoutError,
        ConnectionError,
    )
    return isinstance(exc, retryable) or getattr(exc, "status_code", None) in _RETRY_STATUS


def _fatal_error(exc: Exception, model: str, detail: str, api_key_env: str | None) -> ProviderError:
    litellm = load_litellm()
    if _is_malformed(exc):
        return ProviderError(f"model {model}: the server sent a malformed (non-JSON) response")
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        where = api_key_env or "the provider's API key variable"
        return ConfigurationError(
            f"model {model} rejected the credentials (check {where}): {detail}"
        )
    if "Missing credentials" in str(exc):
        return ConfigurationError(
            f"model {model}: no API key (set api_key_env or the provider's key)"
        )
    return ProviderError(f"model {model} call failed: {detail}")


# finish_reason values that mean the server did not finish the reply it was asked for.
_UNFINISHED = {"length": "truncated", "content_filter": "filtered"}


def _defect(reply: LLMResponse, finish_reason: Any) -> str:
    """Why a 200 reply is no real answer (LLMResponse.defect), or "" for a complete one."""
    if finish_reason in _UNFINISHED:
        return _UNFINISHED[finish_reason]
    if not reply.text.strip() and not reply.tool_calls:
        return "empty"
    if any(isinstance(tc.arguments, str) for tc in reply.tool_calls):
        return "malformed"  # tool arguments that are not a JSON object (kept raw by _tool_call)
    return ""


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(
        exc, "litellm_response_headers", None
    )
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: fall back to our own backoff


def _usage(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    return Usage(
        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _tool_call(raw: Any, index: int) -> ToolCall:
    function = raw.function
    arguments: Any = function.arguments
    if arguments in (None, ""):
        arguments = {}
    elif isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except json.JSONDecodeError:
            decoded = None  # keep the raw text: the agent loop reports it to the model
        arguments = decoded if isinstance(decoded, dict) else arguments
    return ToolCall(id=raw.id or f"call_{index}", name=function.name or "", arguments=arguments)
