"""SimProvider: the simulated LLM behind the same LLMProvider protocol as real models.

Replies are a pure function of (world seed, request). Latency and faults (rate limits,
timeouts, malformed output) can be switched on for benchmarks and reliability tests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from app.providers.errors import TransientError
from app.providers.sim import agent, tool_agent
from app.providers.sim.evolver import EvolverShares, reply_for_task
from app.providers.sim.judge import (
    DIAGNOSIS_TASK,
    RUBRIC_JUDGE,
    judge_reply,
    noisy_diagnosis,
    rubric_reply,
)
from app.providers.sim.rng import draw, pick
from app.providers.sim.world import CaseSpec, World, build_world
from core.protocols import Message
from core.types import LLMResponse, ToolCall, ToolSpec, Usage

# Default share of agent answers re-drawn from the whole request (sampling noise): the world
# setting `sim_noise_share` (app/harness/workspace/config.py). A re-drawn answer is right with the
# same probability, so a change of this share moves no accuracy, only how often a repeated run of
# the same question disagrees with itself (the discordance a gate must see through).
NOISE_SHARE = 0.03
# Temperature > 0 (best-of-N forks, app/harness/data/fork.py): this share of answers, times the
# temperature (capped at 1), is re-drawn from (question, seed, temperature), so branches sampled at
# different temperatures really differ. At temperature 0 nothing changes.
TEMPERATURE_REDRAW_PER_UNIT = 1.0
SIM_PRICE_IN_PER_MTOK = 0.5  # notional prices so cost accounting is exercised; labelled sim
SIM_PRICE_OUT_PER_MTOK = 1.5
# `sim/<world>-strong`: the same world, an agent that knows `strong_known_share` of its hidden
# rules untold (agent.py `strengthen`), priced `strong_price_factor` times higher: the offline
# teacher of `distill` (docs/distill.md)
STRONG_SUFFIX = "-strong"
STRONG_KNOWN_SHARE = 0.8
STRONG_PRICE_FACTOR = 10.0


def world_name(model: str) -> str:
    """The world a simulated model lives in: `sim/basic-strong` lives in `basic`."""
    name = model.split("/", 1)[-1]
    return name.removesuffix(STRONG_SUFFIX) if is_strong(model) else name


def is_strong(model: str) -> bool:
    name = model.split("/", 1)[-1]
    return name.endswith(STRONG_SUFFIX) and len(name) > len(STRONG_SUFFIX)


def sim_price(model: str, strong_price_factor: float = STRONG_PRICE_FACTOR) -> tuple[float, float]:
    """Notional (input, output) USD per million tokens of a simulated model."""
    factor = strong_price_factor if is_strong(model) else 1.0
    return SIM_PRICE_IN_PER_MTOK * factor, SIM_PRICE_OUT_PER_MTOK * factor


@dataclass(frozen=True)
class SimSettings:
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    fault_rate: float = 0.0
    shares: EvolverShares = EvolverShares()
    judge_noise: float = 0.0  # share of judge samples drawn at random (app/providers/sim/judge.py)
    judge_position_bias: float = 0.0  # share of pairwise samples that pick whatever is shown first
    judge_invalid_share: float = 0.0  # share of rubric replies that do not parse (judge.py)
    noise_share: float = NOISE_SHARE  # share of agent answers re-drawn per request
    # share of the questions with context whose context the agent never reads (agent.py
    # skips_context); 0 keeps the agent reading every context it needs
    missing_context_share: float = 0.0
    strong_known_share: float = STRONG_KNOWN_SHARE  # only `sim/<world>-strong` reads these two
    strong_price_factor: float = STRONG_PRICE_FACTOR

    def __post_init__(self) -> None:
        if not 0.0 <= self.noise_share <= 1.0:
            raise ValueError(f"noise_share must be in [0, 1], got {self.noise_share!r}")


class SimRateLimit(TransientError):
    pass


class SimTimeout(TransientError):
    pass


class SimProvider:
    """`sim/<world>`: an honest simulation, named as such in every run's provenance."""

    def __init__(
        self,
        model: str = "sim/basic",
        settings: SimSettings | None = None,
        world: World | None = None,
    ) -> None:
        self.model = model
        self.world = world or build_world(world_name(model))
        self.settings = settings or SimSettings()
        self.strong = is_strong(model)
        self._price = sim_price(model, self.settings.strong_price_factor)
        self._attempts: dict[str, int] = defaultdict(int)

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
        request_key = _request_key(messages, tools, temperature, seed)
        await self._maybe_sleep(request_key)
        fault = self._maybe_fault(request_key)
        if fault == "malformed":
            # Labelled, as a real endpoint's broken reply is (an error, finish_reason "length",
            # an empty body): the caller still gets this text, but no cache may keep it.
            reply = self._response(messages, '{"edits": [ {"op": "add", "section": ', ())
            return dataclasses.replace(reply, defect="malformed")
        last_user = next(
            (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
        )
        if "## Task: " in last_user:
            text = reply_for_task(self.world, last_user, self.settings.shares)
            if DIAGNOSIS_TASK in last_user:  # the judge role's diagnoses are as noisy as its grades
                text = noisy_diagnosis(self.world, text, request_key, self.settings.judge_noise)
            return self._response(messages, text, ())
        if RUBRIC_JUDGE in last_user:
            text = rubric_reply(
                self.world,
                last_user,
                request_key,
                self.settings.judge_noise,
                self.settings.judge_invalid_share,
            )
            return self._response(messages, text, ())
        if "## Judge: " in last_user:
            return self._response(
                messages,
                judge_reply(
                    self.world,
                    last_user,
                    request_key,
                    self.settings.judge_noise,
                    self.settings.judge_position_bias,
                ),
                (),
            )
        return self._agent_turn(messages, tools, seed, request_key, temperature)

    def _agent_turn(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None,
        seed: int,
        request_key: str,
        temperature: float = 0.0,
    ) -> LLMResponse:
        view = agent.read_view(messages, tools)
        if self.strong:
            view = agent.strengthen(self.world, view, self.settings.strong_known_share)
        case = self.world.case_for_text(view.question)
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        skip = case is not None and agent.skips_context(
            self.world, case, self.settings.missing_context_share
        )
        call = agent.next_tool_call(view, case, turn, skip_context=skip)
        if call is not None:
            return self._response(messages, "", (call,))
        if case is not None and case.tools:  # the tool world acts through declared tools
            step = tool_agent.next_step(
                self.world, view, case, turn, self._agent_draw(case, seed, request_key, temperature)
            )
            if isinstance(step, ToolCall):
                return self._response(messages, "", (step,))
            wrong_pick = pick(3, self.world.seed, "wrong", view.question, seed)
            return self._response(messages, agent.final_text(case, step, wrong_pick), ())
        correct = False
        if case is not None:
            p = agent.p_correct(self.world, view, case)
            correct = self._agent_draw(case, seed, request_key, temperature) < p
        wrong_pick = pick(3, self.world.seed, "wrong", view.question, seed)
        return self._response(messages, agent.final_text(case, correct, wrong_pick), ())

    def _agent_draw(self, case: CaseSpec, seed: int, request_key: str, temperature: float) -> float:
        """The agent's uniform draw for this answer: per (question, sample), re-drawn for a
        share of requests (noise) and, at temperature > 0, per temperature."""
        u = draw(self.world.seed, "agent", case.question_id, seed)
        if draw(self.world.seed, "noise", request_key) < self.settings.noise_share:
            u = draw(self.world.seed, "redraw", request_key)
        if temperature > 0 and draw(
            self.world.seed, "temp-mix", case.question_id, seed, temperature
        ) < min(1.0, temperature * TEMPERATURE_REDRAW_PER_UNIT):
            u = draw(self.world.seed, "temp", case.question_id, seed, temperature)
        return u

    async def _maybe_sleep(self, request_key: str) -> None:
        s = self.settings
        if s.latency_ms <= 0:
            return
        jitter = (draw(self.world.seed, "latency", request_key) * 2 - 1) * s.jitter_ms
        await anyio.sleep(max(0.0, s.latency_ms + jitter) / 1000)

    def _maybe_fault(self, request_key: str) -> str | None:
        if self.settings.fault_rate <= 0:
            return None
        self._attempts[request_key] += 1
        attempt = self._attempts[request_key]
        if draw(self.world.seed, "fault", request_key, attempt) >= self.settings.fault_rate:
            return None
        kind = ("rate_limit", "timeout", "malformed")[pick(3, "kind", request_key, attempt)]
        if kind == "rate_limit":
            raise SimRateLimit("simulated rate limit (429)")
        if kind == "timeout":
            raise SimTimeout("simulated timeout")
        return kind

    def _response(
        self, messages: list[Message], text: str, calls: Sequence[ToolCall]
    ) -> LLMResponse:
        chars_in = sum(len(m.get("content") or "") for m in messages)
        tokens_in, tokens_out = chars_in // 4 + 1, len(text) // 4 + 1
        cost = (tokens_in * self._price[0] + tokens_out * self._price[1]) / 1e6
        return LLMResponse(
            text=text,
            tool_calls=tuple(calls),
            usage=Usage(tokens_in, tokens_out),
            cost_usd=cost,
            model=self.model,
        )


def _request_key(
    messages: list[Message], tools: list[ToolSpec] | None, temperature: float, seed: int
) -> str:
    tool_names = [t.name for t in tools or []]
    raw = json.dumps(
        [messages, tool_names, temperature, seed], sort_keys=True, default=str, ensure_ascii=False
    )
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
