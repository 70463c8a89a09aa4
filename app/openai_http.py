"""Pieces of a local OpenAI-compatible HTTP endpoint, shared by `serve`
(app/harness/serving/) and the agents' recording gateway (app/harness/agents/gateway.py).

Requests are untrusted: a body is counted while it arrives and refused past its bound, JSON
nesting is bounded before any validation walks it, and every refusal is one OpenAI-shaped
JSON error (`{"error": {"message", "type", "param", "code"}}`), so OpenAI clients and litellm
raise their usual exceptions.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import UserError

MAX_JSON_DEPTH = 32  # nesting of arrays and objects; a chat request needs 5, a tool schema ~10
_TOO_DEEP = object()  # what a body too deep for the JSON parser itself parses to


class ChatRequestError(ValueError):
    """A request the endpoint refuses: HTTP `status`, OpenAI error `code`, the field `param`."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str = "invalid_request",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code


def error_body(
    message: str, *, code: str, param: str | None = None, kind: str = "invalid_request_error"
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(
    status: int,
    message: str,
    *,
    code: str,
    param: str | None = None,
    kind: str = "invalid_request_error",
) -> JSONResponse:
    return JSONResponse(error_body(message, code=code, param=param, kind=kind), status_code=status)


def load_json_body(body: bytes, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The parsed body, or `ChatRequestError` (413 past `max_bytes`, 400 for bad JSON or JSON
    nested deeper than `max_depth`)."""
    if len(body) > max_bytes:
        raise ChatRequestError(
            f"request body larger than {max_bytes} bytes", status=413, code="too_large"
        )
    try:
        data = json.loads(body)
    except ValueError as e:
        raise ChatRequestError(f"request body is not JSON ({e})") from None
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or depth_over(data, max_depth):
        raise ChatRequestError(f"request body: JSON nested deeper than {max_depth} levels")
    return data


def depth_over(data: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than `limit` (walked without recursion, so a
    body the parser took cannot exhaust the stack of the validation after it)."""
    todo: list[tuple[Any, int]] = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        children = value.values() if isinstance(value, dict) else value
        if not isinstance(value, (dict, list)):
            continue
        if depth > limit:
            return True
        todo.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


async def body_within(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as more than `limit` bytes arrived (a chunked body has no
    Content-Length to refuse it by, and must not be held whole first)."""
    try:
        declared = int(request.headers.get("content-length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def bearer(request: Request) -> str:
    """The token of `Authorization: Bearer <token>`, or ""."""
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else ""


class HostCheck:
    """Refuses (421) a request whose Host header is not one this server is reached by."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((v for k, v in scope["headers"] if k == b"host"), b"")
            if host.decode("latin-1").lower() not in self.allowed:
                shown = host.decode("latin-1")[:80].encode("unicode_escape").decode()
                reply = error_response(
                    421,
                    f"Host {shown!r} is not this server's (loopback binds answer only "
                    f"{' or '.join(sorted(self.allowed))})",
                    code="misdirected_request",
                )
                await reply(scope, receive, send)
                return
        await self.app(scope, receive, send)


def loopback_hosts(port: int) -> frozenset[str]:
    """The Host values a browser sends for a server bound to loopback at `port`."""
    names = ("127.0.0.1", "localhost", "[::1]")
    with_port = {f"{n}:{port}" for n in names}
    return frozenset(with_port | (set(names) if port == 80 else set()))


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for uvicorn (`port` 0: the kernel picks one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto given: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without it
    # every reply on a kept-alive connection waits about 40 ms for a delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise UserError(f"--host {host} --port {port}: cannot listen ({e.strerror or e})") from None
    sock.set_inheritable(True)
    return sock


def sse_event(body: dict[str, Any]) -> str:
    """One server-sent event carrying a JSON object."""
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


SSE_DONE = "data: [DONE]\n\n"
