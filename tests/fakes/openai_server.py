"""A scripted fake OpenAI-compatible chat server (stdlib only, bound to 127.0.0.1).

Each request's behaviour comes from, in order:
0. a response format listed in `server.reject_formats` gets HTTP 500 with the validation
   message llama-cpp-python's server sends for it; then `server.responder(body)`, a callable
   that may return a Reply (None: go on) — for whole runs that need replies by prompt;
1. the server's FIFO `script` (`server.push(Reply.status(429), Reply.text("hi"))`) — for
   sequential tests in the same process;
2. a marker in the last user message, `[[fake:429,429,ok]]` — the n-th time the server sees
   the same messages it plays the n-th token (the last one repeats). Works across processes
   and under concurrency, because retries of one request resend the same messages;
3. the default: a canned "ok" text.

Marker tokens: `ok`, `text=<words>`, `tool=<name>`, `badargs` (tool call whose arguments are
not JSON), `401` (echoes the Authorization header back, like a careless server), any other
status code, `slow=<seconds>`, `malformed` (200 with a truncated JSON body), `drip=<seconds>`
(headers at once, then the body a few bytes at a time over that long), `429ra=<seconds>` (429
with that Retry-After).

Run standalone (used by benches so the server's CPU is not charged to the client):
`python -m tests.fakes.openai_server` prints `PORT <n>` and serves until stdin closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_MARKER = re.compile(r"\[\[fake:([^\]]*)\]\]")


@dataclass(frozen=True)
class Reply:
    kind: str = "text"  # text | tool | status | slow | malformed | drip
    text: str = "ok"
    status: int = 200
    delay_s: float = 0.0
    tool_name: str = ""
    tool_args: str = "{}"
    echo_auth: bool = False  # error body repeats the Authorization header (leak tests)
    retry_after: str = "0"  # the Retry-After header of a 429
    message: str = ""  # an error's message (default: "fake error <status>")
    finish: str = ""  # the choice's finish_reason (default: "stop", or "tool_calls")

    @classmethod
    def ok(cls, text: str = "ok") -> Reply:
        return cls("text", text=text)

    @classmethod
    def tool(cls, name: str, args: dict[str, Any] | str | None = None) -> Reply:
        raw = args if isinstance(args, str) else json.dumps(args or {})
        return cls("tool", tool_name=name, tool_args=raw)

    @classmethod
    def error(cls, status: int, *, echo_auth: bool | None = None) -> Reply:
        echo = status == 401 if echo_auth is None else echo_auth
        return cls("status", status=status, echo_auth=echo)

    @classmethod
    def cut(cls, text: str, finish: str = "length") -> Reply:
        """A 200 reply the server did not finish (max tokens reached, content filter)."""
        return cls("text", text=text, finish=finish)

    @classmethod
    def slow(cls, delay_s: float, text: str = "late") -> Reply:
        return cls("slow", text=text, delay_s=delay_s)

    @classmethod
    def malformed(cls) -> Reply:
        return cls("malformed")

    @classmethod
    def drip(cls, seconds: float, text: str = "dripped") -> Reply:
        return cls("drip", text=text, delay_s=seconds)

    @classmethod
    def rate_limited(cls, retry_after_s: float) -> Reply:
        return cls("status", status=429, retry_after=f"{retry_after_s:g}")


def parse_token(token: str) -> Reply:
    """One marker token -> Reply (see module docstring)."""
    name, _, arg = token.strip().partition("=")
    if name == "ok":
        return Reply.ok()
    if name == "text":
        return Reply.ok(arg)
    if name == "tool":
        return Reply.tool(arg or "lookup", {"query": "x"})
    if name == "badargs":
        return Reply.tool("lookup", "{not json")
    if name == "slow":
        return Reply.slow(float(arg or 5))
    if name == "malformed":
        return Reply.malformed()
    if name == "drip":
        return Reply.drip(float(arg or 5))
    if name == "429ra":
        return Reply.rate_limited(float(arg or 1))
    if name.isdigit():
        return Reply.error(int(name))
    raise ValueError(f"unknown fake marker token {token!r}")


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _count_tokens(text: str) -> int:
    return len(text) // 4 + 1  # deterministic stand-in for a tokenizer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server
    disable_nagle_algorithm = True  # else ~40 ms delayed-ACK stall per call
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # quiet: tests capture stderr

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if self.path.split("?")[0] not in CHAT_PATHS:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        reply = self.server.fake.next_reply(body)
        # The client may have given up (timeout test); nothing to do then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._play(reply, body)

    def _play(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.kind == "status":
            self._send(reply.status, self._error_body(reply), retry_after=reply.retry_after)
        elif reply.kind == "drip":
            self._drip(json.dumps(_completion(reply, body)).encode(), reply.delay_s)
        elif reply.kind == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-x", "choices": [{"message": ')
        else:
            if reply.kind == "slow" and self.server.fake.stopping.wait(reply.delay_s):
                return
            self._send(200, _completion(reply, body))

    def _error_body(self, reply: Reply) -> dict[str, Any]:
        status = reply.status
        message = reply.message or f"fake error {status}"
        if reply.echo_auth:  # a careless server that echoes the credential back
            message += f"; key provided: {self.headers.get('Authorization', '')}"
        kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
            status, "server_error"
        )
        return {"error": {"message": message, "type": kind, "code": str(status)}}

    def _send(self, status: int, payload: dict[str, Any], retry_after: str = "0") -> None:
        self._send_raw(status, json.dumps(payload).encode(), retry_after)

    def _send_raw(self, status: int, data: bytes, retry_after: str = "0") -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, data: bytes, seconds: float) -> None:
        """A server that streams its answer slowly: headers now, bytes over `seconds`."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        chunks = [data[i : i + 16] for i in range(0, len(data), 16)]
        for chunk in chunks:
            if self.server.fake.stopping.wait(seconds / len(chunks)):
                return
            self.wfile.write(chunk)
            self.wfile.flush()


def _completion(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    finish = "stop"
    if reply.kind == "tool":
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": reply.tool_name, "arguments": reply.tool_args},
                }
            ],
        }
        finish = "tool_calls"
    finish = reply.finish or finish
    prompt = sum(_count_tokens(str(m.get("content") or "")) for m in body.get("messages") or [])
    out = _count_tokens(reply.text if reply.kind != "tool" else reply.tool_args)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
    }


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # concurrency 32+ must not see refused connections
    daemon_threads = True
    fake: FakeOpenAI


class FakeOpenAI:
    """The fake server; use as a context manager or start()/stop()."""

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seen: dict[str, int] = {}
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.responder: Any = None  # Callable[[dict], Reply | None]
        self.reject_formats: set[str] = set()
        self.stopping = threading.Event()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            fmt = body.get("response_format") or {}
            if fmt.get("type") in self.reject_formats:
                return Reply(
                    "status",
                    status=500,
                    message=(
                        f"[{{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                        f"'msg': \"Input should be 'text' or 'json_object'\", "
                        f"'input': '{fmt.get('type')}'}}]"
                    ),
                )
            if self.responder is not None:
                found = self.responder(body)
                if found is not None:
                    return found
            if self.script:
                return self.script.popleft()
            return self._marker_reply(body)

    def _marker_reply(self, body: dict[str, Any]) -> Reply:
        found = _MARKER.search(_last_user_text(body))
        if not found:
            return Reply.ok()
        tokens = found.group(1).split(",")
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        seen = self._seen.get(key, 0)
        self._seen[key] = seen + 1
        return parse_token(tokens[min(seen, len(tokens) - 1)])

    def start(self) -> FakeOpenAI:
        # A short poll interval: shutdown() waits up to one interval (default 0.5 s per test).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes slow handlers
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve_in_subprocess() -> Iterator[str]:
    """Run the server in a child process (its CPU stays out of the caller's
    `time.process_time`); yields the base url ending in /v1."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    """Serve until stdin closes (the parent process exits or closes the pipe)."""
    with FakeOpenAI() as fake:
        print(f"PORT {fake.port}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
