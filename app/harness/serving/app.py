"""The FastAPI application: /v1/chat/completions, /v1/models, /healthz, and the web report at
/ (app/harness/serving/webpage.py, rendered from the live workspace on each request).

With a token, every /v1 route needs `Authorization: Bearer <token>` (compared in constant
time; the page at / also takes it as `?token=`, since a browser cannot send the header when
it opens a URL); /healthz stays open for load balancers and gives only the served name and the number
of requests in flight. Errors are OpenAI-shaped JSON with one-line messages.

What a browser on another page could do is bounded: a chat request must say
`Content-Type: application/json` (which a cross-origin form or `text/plain` fetch cannot send
without a CORS preflight), and on a loopback bind every request must name the server by a
loopback Host with its port (a DNS-rebinding page names its own host). The body is counted
while it arrives, so an oversized one is refused before it is held whole.
"""

from __future__ import annotations

import hmac
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from loguru import logger
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import UserError
from app.harness.serving.agent import ServedAgent, ServedAnswer
from app.harness.serving.chat import (
    MAX_BODY_BYTES,
    ChatRequestError,
    Completion,
    completion_body,
    parse_request,
    sse_chunks,
)
from app.harness.serving.page_data import gather
from app.harness.serving.routing import Route, Router, RoutingError
from app.harness.serving.webpage import esc, render_page
from app.openai_http import HostCheck, body_within
from app.openai_http import error_response as _error
from app.providers.errors import BudgetExceeded
from app.secrets import scrub
from core.types import StopReason

FLUSH_INTERVAL_S = 0.5
SKILL_HEADER = "X-Skill-Trainer-Skill"  # the routed task type's skill file, or "none"
TASK_TYPE_HEADER = "X-Skill-Trainer-Task-Type"


def build_app(
    agent: ServedAgent,
    *,
    token: str | None = None,
    on_answer: Callable[[ServedAnswer], None] | None = None,
    page_root: Path | None = None,
    allow_origins: Sequence[str] = (),
    router: Router | None = None,
    allowed_hosts: frozenset[str] | None = None,
) -> FastAPI:
    """`on_answer` is the seam for a capture hook (e.g. an OTLP exporter) run per answer.
    `page_root`: the workspace whose web report `GET /` shows (none: no page).
    `allow_origins`: origins whose pages may call the API from a browser (CORS); `null` is a
    page opened from a file, such as `report --html`'s.
    `router`: the workspace's task types (app/harness/serving/routing.py); none: only the
    served name, and every request is refused as unrouted.
    `allowed_hosts`: the Host header values accepted (lower-case); None: any."""

    router = router or Router(agent.name, {})
    app = FastAPI(title="skill-trainer", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_Overhead, agent=agent)
    if allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(allow_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )

    def refused(request: Request, query_token: bool = False) -> JSONResponse | None:
        if token is None:
            return None
        header = request.headers.get("authorization", "")
        given = header[7:] if header[:7].lower() == "bearer " else ""
        if query_token and not given:
            given = request.query_params.get("token", "")
        if hmac.compare_digest(given.encode(), token.encode()):
            return None
        return _error(
            401,
            "missing or wrong bearer token (Authorization: Bearer <token>)",
            code="invalid_api_key",
            kind="authentication_error",
        )

    if page_root is not None:

        @app.get("/", response_model=None)
        async def page(request: Request) -> Response:
            if (denied := refused(request, query_token=True)) is not None:
                return denied
            try:
                text = await anyio.to_thread.run_sync(_page, page_root, agent.name)
            except (UserError, sqlite3.Error) as e:
                return HTMLResponse(f"report unavailable: {_html_line(e)}", status_code=500)
            return HTMLResponse(text, headers={"Cache-Control": "no-store"})

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "model": agent.name, "in_flight": agent.counters.in_flight}

    @app.get("/v1/models", response_model=None)
    async def models(request: Request) -> Response | dict[str, Any]:
        if (denied := refused(request)) is not None:
            return denied
        return {
            "object": "list",
            "data": [
                {
                    "id": model_id,
                    "object": "model",
                    "created": agent.counters.started_unix,
                    "owned_by": "skill-trainer",
                }
                for model_id in router.model_ids()
            ],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return _error(
                415,
                f"Content-Type {kind[:60]!r}: send the request as application/json",
                code="unsupported_media_type",
            )
        body = await body_within(request, MAX_BODY_BYTES)
        if body is None:
            return _error(413, f"request body larger than {MAX_BODY_BYTES} bytes", code="too_large")
        try:
            parsed = parse_request(body)
            route = router.route(parsed.model, parsed.task_type, parsed.task)
        except (ChatRequestError, RoutingError) as e:
            return _error(e.status, str(e), code=e.code, param=e.param)
        try:
            served = await agent.answer(parsed.task, route.task_type, parsed.context, route.tools)
        except BudgetExceeded as e:
            agent.counters.budget_refusals += 1
            return _error(
                402,
                f"spend cap reached: {scrub(str(e))[:300]}",
                code="budget_exceeded",
                kind="insufficient_quota",
            )
        request.state.agent_s = served.agent_s
        if on_answer is not None:
            on_answer(served)
        if served.error:
            return _error(
                502,
                f"the agent's model failed: {served.error[:300]}",
                code="upstream_error",
                kind="api_error",
            )
        completion = _completion(agent, served, parsed.model, route)
        headers = {SKILL_HEADER: route.skill or "none", TASK_TYPE_HEADER: route.task_type}
        if not parsed.stream:
            return JSONResponse(completion_body(completion), headers=headers)
        return StreamingResponse(
            iter(sse_chunks(completion, parsed.include_usage)),
            media_type="text/event-stream",
            headers=headers,
        )

    if allowed_hosts is not None:
        # added last, so it runs first: a rebound page gets nothing, not even a CORS answer
        app.add_middleware(HostCheck, allowed=allowed_hosts)
    return app


def _page(root: Path, name: str) -> str:
    return render_page(gather(root), served=True, model=name)


def _html_line(e: Exception) -> str:
    lines = str(e).splitlines()
    return esc(lines[0][:300] if lines else type(e).__name__)


class _Overhead:
    """Server time minus agent time of each answered chat request: from the ASGI call to the
    last byte handed to the server (the handler leaves the agent's time in the scope state)."""

    def __init__(self, app: ASGIApp, agent: ServedAgent) -> None:
        self.app = app
        self.agent = agent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/chat/completions":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        await self.app(scope, receive, send)
        agent_s = scope.get("state", {}).get("agent_s")
        if agent_s is not None:
            self.agent.counters.overheads_s.append(time.perf_counter() - start - agent_s)


def _completion(agent: ServedAgent, served: ServedAnswer, model: str, route: Route) -> Completion:
    return Completion(
        completion_id=served.request_id,
        model=model,
        content=served.content,
        finish_reason="length" if served.stop_reason == StopReason.MAX_STEPS else "stop",
        tokens_in=served.tokens_in,
        tokens_out=served.tokens_out,
        created=int(time.time()),
        extra={
            "run_id": agent.run_id,
            "request_id": served.request_id,
            "task_type": route.task_type,
            "routed_by": route.routed_by,
            "skill": route.skill,
            "skills_opened": list(served.skills_opened),
            "skill_mode": agent.prompts.skill_mode,
            "skills_version": agent.prompts.skills_version,
            "prompts_version": agent.prompts.prompts_version,
            "answer": served.answer,
            "stop_reason": served.stop_reason,
            "cost_usd": served.cost_usd,
            "agent_ms": round(served.agent_s * 1000, 3),
        },
    )


async def flush_periodically(agent: ServedAgent) -> None:
    while True:
        await anyio.sleep(FLUSH_INTERVAL_S)
        try:
            agent.flush()
        except Exception as e:  # a full disk must not stop answering; the next flush retries
            logger.warning("serve: could not write the log yet: {}", scrub(str(e))[:200])
