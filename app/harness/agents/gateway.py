"""The recording model gateway: an OpenAI-compatible endpoint on 127.0.0.1 that an outside
agent uses as its model, so every call it makes is answered by the run's provider (with its
cache, retries and spend cap) and recorded against the rollout that made it. It also speaks
the Anthropic Messages API (`POST /v1/messages`, app/harness/agents/anthropic_wire.py) on the
same forwarding path: each wire format is a `Dialect` (wire.py), and the record is the same.

Each rollout gets its own bearer key (`open_rollout`), a call cap and a time limit; past
either, or after `close_rollout`, a request is refused with error JSON in its wire format's
shape (403, so OpenAI and Anthropic clients do not retry it) and recorded as refused. An
unknown key, a malformed or oversized body is a 4xx with one line, and nothing an agent sends
stops the server.

    async with running_gateway(provider, model_name="sim/basic") as gateway:
        key = gateway.open_rollout("q1", call_cap=16, time_limit_s=120)
        ...  # the agent calls gateway.endpoint(key)
        calls = gateway.close_rollout(key)

The gateway runs in the caller's event loop: open and close rollouts from that loop's thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from app.harness.agents.anthropic_wire import ANTHROPIC
from app.harness.agents.calls import CallStatus, RecordedCall
from app.harness.agents.protocol import ModelEndpoint
from app.harness.agents.wire import MAX_BODY_BYTES, OPENAI, Dialect, GatewayRequest, ReplyMeta
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.workspace import killpoints
from app.openai_http import (
    ChatRequestError,
    HostCheck,
    bearer,
    body_within,
    listening_socket,
    loopback_hosts,
)
from app.providers.errors import BudgetExceeded
from app.sanitize import visible
from app.secrets import scrub
from core.protocols import LLMProvider, Message
from core.types import LLMResponse

KEY_PREFIX = "sk-rollout-"
DEFAULT_CALL_CAP = 32
DEFAULT_TIME_LIMIT_S = 600.0
CLOSED_KEPT = 10_000  # closed rollouts remembered, so a late call is told "closed", not "unknown"
REFUSALS_KEPT = 100  # refused calls recorded per rollout (more are refused unrecorded)
START_TIMEOUT_S = 10.0
SHUTDOWN_POLL_S = 0.002


class GatewayError(Exception):
    """The harness used the gateway wrongly (an unknown key, a gateway not started)."""


@dataclass
class _Rollout:
    rollout_id: str
    call_cap: int
    deadline: float  # time.monotonic()
    calls: list[RecordedCall] = field(default_factory=list)
    started: int = 0  # calls let through to the provider (counted before it answers)
    log_as: str = ""  # the run whose llm_calls rows the provider's telemetry writes
    closed: bool = False
    last_messages: list[Message] = field(default_factory=list)


class Gateway:
    """The rollout registry and the FastAPI app; `running_gateway` serves it."""

    def __init__(
        self,
        provider: LLMProvider,
        *,
        model_name: str = "agent",
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.provider = provider
        self.model_name = model_name
        self.max_body_bytes = max_body_bytes
        self.url = ""  # http://127.0.0.1:<port>, once started
        self._rollouts: dict[str, _Rollout] = {}  # by the key's digest
        self._closed: OrderedDict[str, _Rollout] = OrderedDict()
        self.started_unix = int(time.time())

    @property
    def base_url(self) -> str:
        if not self.url:
            raise GatewayError("the gateway is not running (use running_gateway)")
        return f"{self.url}/v1"

    def open_rollout(
        self,
        rollout_id: str,
        *,
        call_cap: int = DEFAULT_CALL_CAP,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
        log_as: str = "",
    ) -> str:
        """A new bearer key; the calls made with it are recorded for `rollout_id`. `log_as`:
        the run id the provider's telemetry logs these calls under (its `llm_calls` rows);
        the request's task does not inherit the caller's `calls_logged_as`."""
        key = KEY_PREFIX + secrets.token_urlsafe(24)
        deadline = time.monotonic() + time_limit_s
        self._rollouts[_digest(key)] = _Rollout(rollout_id, call_cap, deadline, log_as=log_as)
        return key

    def endpoint(self, key: str) -> ModelEndpoint:
        return ModelEndpoint(self.base_url, key, self.model_name)

    def close_rollout(self, key: str) -> tuple[RecordedCall, ...]:
        """Refuse the key from now on; the calls it made, in arrival order."""
        digest = _digest(key)
        rollout = self._rollouts.pop(digest, None)
        if rollout is None:
            raise GatewayError("close_rollout: no open rollout has this key")
        rollout.closed = True
        rollout.last_messages = []
        self._closed[digest] = rollout
        while len(self._closed) > CLOSED_KEPT:
            self._closed.popitem(last=False)
        return tuple(rollout.calls)

    def calls(self, key: str) -> tuple[RecordedCall, ...]:
        """The calls recorded for a key so far (open or closed), late refusals included."""
        rollout = self._find(key)
        if rollout is None:
            raise GatewayError("calls: no rollout has this key")
        return tuple(rollout.calls)

    def _find(self, key: str) -> _Rollout | None:
        digest = _digest(key)
        return self._rollouts.get(digest) or self._closed.get(digest)

    # ------------------------------------------------------------------ one request

    async def handle(self, request: Request, dialect: Dialect = OPENAI) -> Response:
        """One model call in `dialect`'s wire format (chat completions, Anthropic Messages):
        the same checks, forwarding and record for each."""
        key = dialect.key(request)
        rollout = self._find(key) if key else None
        if rollout is None:
            return _unknown_key(dialect)
        if (refusal := self._refusal(rollout)) is not None:
            return self._refuse(rollout, refusal, dialect)
        body = await body_within(request, self.max_body_bytes)
        if body is None:
            message = f"request body larger than {self.max_body_bytes} bytes"
            return _error(dialect, 413, message, "too_large")
        try:
            parsed = dialect.parse(body, self.max_body_bytes)
        except ChatRequestError as e:
            return _error(dialect, e.status, visible(str(e)), e.code, e.param)
        # checked again: the body may have taken long to arrive, and the count must be taken
        # with no await between the check and the increment (parallel calls of one agent)
        if (refusal := self._refusal(rollout)) is not None:
            return self._refuse(rollout, refusal, dialect)
        rollout.started += 1
        return await self._forward(rollout, parsed, dialect)

    def _refusal(self, rollout: _Rollout) -> CallStatus | None:
        if rollout.closed:
            return CallStatus.REFUSED_CLOSED
        if time.monotonic() >= rollout.deadline:
            return CallStatus.REFUSED_TIME
        if rollout.started >= rollout.call_cap:
            return CallStatus.REFUSED_CAP
        return None

    def _refuse(self, rollout: _Rollout, status: CallStatus, dialect: Dialect) -> JSONResponse:
        # an agent may keep knocking until its time limit: refusals are recorded up to a bound
        if len(rollout.calls) < rollout.started + REFUSALS_KEPT:
            rollout.calls.append(
                RecordedCall(index=len(rollout.calls), status=status, started_unix=time.time())
            )
        message = {
            CallStatus.REFUSED_CLOSED: "this rollout is over; its key no longer works",
            CallStatus.REFUSED_TIME: "this rollout's time limit has passed",
            CallStatus.REFUSED_CAP: f"this rollout's call cap ({rollout.call_cap}) is reached",
        }[status]
        code = status.value.split(":", 1)[1]
        return _error(dialect, 403, message, f"rollout_{code}")

    async def _forward(
        self, rollout: _Rollout, request: GatewayRequest, dialect: Dialect
    ) -> Response:
        index = len(rollout.calls)
        prefix = _common_prefix(rollout.last_messages, request.messages)
        rollout.last_messages = request.messages
        base = RecordedCall(
            index=index,
            status=CallStatus.PENDING,
            prefix_len=prefix,
            new_messages=tuple(request.messages[prefix:]),
            tools=tuple(t.name for t in request.tools),
            requested_model=request.model[:200],
            stream=request.stream,
            started_unix=time.time(),
        )
        # its slot is taken now, in arrival order: the prefix above is relative to the request
        # before it, and parallel calls of one agent finish in any order
        rollout.calls.append(base)
        started = time.perf_counter()
        with calls_logged_as(rollout.log_as) if rollout.log_as else contextlib.nullcontext():
            reply = await self._complete(request, rollout.deadline)
        latency = time.perf_counter() - started
        if isinstance(reply, _CallFailure):
            rollout.calls[index] = replace(
                base, status=reply.status, latency_s=latency, error=reply.message
            )
            return _error(dialect, reply.http_status, reply.message, reply.code)
        rollout.calls[index] = _recorded(base, reply, latency)
        # a crash test's point inside an outside agent's rollout: the model has answered, the
        # agent has not yet seen the reply (tests/app/agents/test_resume_external.py)
        killpoints.reached("agent_call")
        meta = ReplyMeta(
            f"{dialect.id_prefix}{rollout.rollout_id[:40]}-{index}",
            self.model_name,
            int(time.time()),
        )
        if not request.stream:
            return JSONResponse(dialect.body(reply, meta))
        return StreamingResponse(
            iter(dialect.events(reply, meta, request)), media_type="text/event-stream"
        )

    async def _complete(
        self, request: GatewayRequest, deadline: float
    ) -> LLMResponse | _CallFailure:
        """The provider's reply, or why there is none."""
        try:
            with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                return await self.provider.complete(
                    request.messages,
                    tools=request.tools or None,
                    temperature=request.temperature,
                    max_tokens=request.max_tokens,
                    seed=request.seed,
                    role="agent",
                    # only when asked for, as CachingProvider passes it: the provider's own
                    # default applies otherwise (app/providers/factory.py BudgetedProvider)
                    **_format(request),
                )
        except TimeoutError:
            return _CallFailure(
                CallStatus.TIMEOUT,
                504,
                "timeout",
                "the model did not answer within the rollout's time limit",
            )
        except BudgetExceeded as e:
            return _CallFailure(
                CallStatus.BUDGET, 402, "budget_exceeded", f"spend cap reached: {_clean(e)}"
            )
        except Exception as e:  # the provider's failure is the call's, never the server's
            message = f"the model failed: {type(e).__name__}: {_clean(e)}"
            return _CallFailure(CallStatus.ERROR, 502, "upstream_error", message)

    def build_app(self, port: int) -> FastAPI:
        app = FastAPI(
            title="skill-trainer gateway", docs_url=None, redoc_url=None, openapi_url=None
        )

        @app.get("/v1/models", response_model=None)
        async def models(request: Request) -> Response:
            if not bearer(request) or self._find(bearer(request)) is None:
                return _unknown_key(OPENAI)
            model = {
                "id": self.model_name,
                "object": "model",
                "created": self.started_unix,
                "owned_by": "skill-trainer",
            }
            return JSONResponse({"object": "list", "data": [model]})

        @app.post("/v1/chat/completions", response_model=None)
        async def chat(request: Request) -> Response:
            return await self.handle(request, OPENAI)

        @app.post("/v1/messages", response_model=None)
        async def messages(request: Request) -> Response:
            return await self.handle(request, ANTHROPIC)

        # a web page the user has open could otherwise reach a loopback port by DNS rebinding
        app.add_middleware(HostCheck, allowed=loopback_hosts(port))
        return app


@dataclass(frozen=True)
class _CallFailure:
    """A forwarded call that got no reply: its recorded status and the agent's error."""

    status: CallStatus
    http_status: int
    code: str
    message: str


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the gateway lives inside a run, whose own
    handlers decide what Ctrl-C means. And without its polling: uvicorn checks `should_exit`
    every 0.1 s, then sleeps 0.1 s more before it closes connections, about 0.17 s per stop,
    and a run starts a gateway per batch of rollouts (35 in a one-epoch run on a 24-unit
    world: 6 of its 8 s). This one stops when told (`stop`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stop = anyio.Event()

    def stop(self) -> None:
        self.should_exit = True
        self._stop.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):  # refreshes the Date header when counter % 10 == 0
            counter += 10
            with anyio.move_on_after(1.0):
                await self._stop.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's, without the fixed sleep: stop listening, close idle connections, let a
        request in flight (an abandoned agent's late call) finish within the graceful
        timeout, then cancel what is left."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        with anyio.move_on_after(self.config.timeout_graceful_shutdown or 0):
            while self.server_state.connections or self.server_state.tasks:
                await anyio.sleep(SHUTDOWN_POLL_S)
        for task in self.server_state.tasks:
            task.cancel(msg="the gateway stopped")
        for server in self.servers:
            await server.wait_closed()


@contextlib.asynccontextmanager
async def running_gateway(
    provider: LLMProvider, *, model_name: str = "agent", max_body_bytes: int = MAX_BODY_BYTES
) -> AsyncIterator[Gateway]:
    """A gateway serving on 127.0.0.1 at a port the kernel picks, until the block ends."""
    gateway = Gateway(provider, model_name=model_name, max_body_bytes=max_body_bytes)
    sock = listening_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = _QuietServer(
        uvicorn.Config(
            gateway.build_app(port),
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
    )
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:  # a server that never starts is stopped too, or the group would wait for it
                with anyio.fail_after(START_TIMEOUT_S):
                    while not server.started:
                        await anyio.sleep(0.002)
                gateway.url = f"http://127.0.0.1:{port}"
                yield gateway
            finally:
                server.stop()
    finally:
        sock.close()
        gateway.url = ""


def _digest(key: str) -> str:
    # looked up by digest: a dict probe on the key itself would compare key prefixes
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _common_prefix(before: list[Message], now: list[Message]) -> int:
    n = 0
    for a, b in zip(before, now, strict=False):
        if a != b:
            break
        n += 1
    return n


def _recorded(base: RecordedCall, reply: LLMResponse, latency: float) -> RecordedCall:
    return replace(
        base,
        status=CallStatus.OK,
        reply_text=reply.text,
        tool_calls=reply.tool_calls,
        tokens_in=reply.usage.tokens_in,
        tokens_out=reply.usage.tokens_out,
        cost_usd=reply.cost_usd,
        latency_s=latency,
        cache_hit=reply.cache_hit,
    )


def _format(request: GatewayRequest) -> dict[str, Any]:
    return {"response_format": request.response_format} if request.response_format else {}


def _clean(e: BaseException) -> str:
    return visible(scrub(str(e)))[:300]


def _error(
    dialect: Dialect, status: int, message: str, code: str, param: str | None = None
) -> JSONResponse:
    return JSONResponse(dialect.error(status, message, code, param), status_code=status)


def _unknown_key(dialect: Dialect) -> JSONResponse:
    return _error(
        dialect, 401, f"missing or unknown rollout key ({dialect.key_hint})", "invalid_api_key"
    )
