"""`serve`: the served agent under uvicorn, with the workspace's writer lock held.

A serve process writes the log (one serve run, a prediction per request, the model calls), so
it is a workspace writer like `train`: while one holds the writer lock the other is refused at
start with a line naming the holder. Nothing else is written: versions are only read.

Binding: loopback by default; any other address needs a bearer token. SIGTERM or Ctrl-C stop
accepting connections, let the requests in flight finish (up to `drain_timeout_s`), write the
log and mark the serve run done; a second signal stops waiting.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
import uvicorn

from app.errors import UserError
from app.harness.rollouts.inference import serving_agent
from app.harness.rollouts.session import Session
from app.harness.serving.agent import ServedAgent, ServedAnswer
from app.harness.serving.app import build_app, flush_periodically
from app.harness.serving.routing import Router
from app.harness.workspace import workspace as ws
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import RunStatus
from app.harness.workspace.harness_log.reader import LogReader
from app.harness.workspace.writer_lock import WorkspaceBusy, WriterLock
from app.openai_http import listening_socket, loopback_hosts
from app.secrets import scrub

LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    version: str | None = None  # None: best if recorded, else current; "best", "current", "vN"
    name: str | None = None  # the model name clients send; default: the workspace folder's
    drain_timeout_s: int = 30
    allow_origins: tuple[str, ...] = ()  # CORS: pages elsewhere that may call the API


@dataclass(frozen=True)
class ServeReady:
    url: str  # http://host:port (the port the kernel chose, for --port 0)
    name: str
    run_id: str
    skills_version: str
    prompts_version: str
    skill_mode: str


@dataclass(frozen=True)
class ServeOutcome:
    run_id: str
    stopped_by: str
    summary: dict[str, Any]


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if token is not None and not token.strip():
        raise UserError("--token: empty; give a secret string, or leave --token out on loopback")
    if not is_loopback(host) and token is None:
        raise UserError(
            f"--host {host}: binding beyond loopback needs --token (clients then send "
            "Authorization: Bearer <token>); serve has no TLS, so put a TLS proxy in front"
        )


def check_origins(origins: tuple[str, ...], token: str | None) -> None:
    """Another origin's page may call the agent only with the token: otherwise any web page
    the user visits (or any sandboxed frame, whose origin is `null`) could spend its budget."""
    if origins and token is None:
        raise UserError(
            f"--allow-origin {origins[0]}: pages from other origins may call the agent only "
            "with a token; add --token T (the page's chat box asks for it)"
        )


def version_dirs(root: Path, version: str | None) -> tuple[Path, Path]:
    """(skills folder, prompts folder) for `version`."""
    manifest = ws.read_manifest(root)
    best = manifest.get("best") or None
    if version in (None, "best") and best:
        return root / best["skills"], root / best["prompts"]
    if version == "best":
        raise UserError(f"{root}: no best version recorded yet (train first, or --version current)")
    paths = ws.resolve_paths(root)
    if version in (None, "current"):
        return paths.skills_dir, paths.prompts_dir
    assert version is not None
    have = ws.list_versions(root, "skills")
    if version not in have:
        raise UserError(f"--version {version}: no skills version of that name (have {have})")
    return root / "skills" / version, paths.prompts_dir


def next_serve_run_id(session: Session) -> str:
    taken = {r.run_id for r in LogReader(session.log).runs()}
    n = sum(1 for r in taken if r.startswith("serve-")) + 1
    while f"serve-{n}" in taken:
        n += 1
    return f"serve-{n}"


class _Server(uvicorn.Server):
    """uvicorn's server with signals that stop it and are not raised again afterwards (uvicorn
    re-raises them once it has shut down, which would kill the process before the serve run
    is marked done)."""

    stopped_by = ""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = {s: signal.signal(s, self._stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True  # a second signal: stop waiting for requests in flight
        self.should_exit = True
        self.stopped_by = self.stopped_by or signal.Signals(signum).name


async def serve_workspace(
    root: Path,
    config: RunConfig,
    settings: ServeSettings,
    on_ready: Callable[[ServeReady], None] | None = None,
    stop: anyio.Event | None = None,
    on_answer: Callable[[ServedAnswer], None] | None = None,
) -> ServeOutcome:
    """Serve until a signal (or `stop`, for embedding) ends it; the serve run's outcome.
    `on_answer` sees every answer (the seam for a capture such as an OTLP exporter)."""
    check_bind(settings.host, settings.token)
    check_origins(settings.allow_origins, settings.token)
    root = Path(root)
    lock = WriterLock(root, "serve")
    try:
        lock.acquire()
    except WorkspaceBusy as e:
        raise WorkspaceBusy(
            f"{e} (serve logs every request, so it is a writer too; one writer per workspace)"
        ) from None
    try:
        with Session(root, config) as session:
            return await _serve(session, settings, on_ready, stop, on_answer)
    finally:
        lock.release()


async def _serve(
    session: Session,
    settings: ServeSettings,
    on_ready: Callable[[ServeReady], None] | None,
    stop: anyio.Event | None,
    on_answer: Callable[[ServedAnswer], None] | None,
) -> ServeOutcome:
    root = session.paths.root
    skills_dir, prompts_dir = version_dirs(root, settings.version)
    prompts = session.agent_prompts(skills_dir=skills_dir, prompts_dir=prompts_dir)
    name = settings.name or root.resolve().name
    sock = listening_socket(settings.host, settings.port)
    run_id = next_serve_run_id(session)
    # the pid: a serve killed with SIGKILL leaves its run `running` and the lock free; whoever
    # takes the lock next can tell the run's process is gone (docs/serving.md#what-it-writes-and-the-writer-lock)
    session.register(run_id, "serve", prompts, provenance={"served_as": name, "pid": os.getpid()})
    session.charge_run(run_id)
    agent = ServedAgent(
        name=name,
        run_id=run_id,
        provider=session.providers["agent"],
        prompts=prompts,
        settings=session.agent_settings,
        log=session.log,
        recorder=session.recorder,
        limiter=anyio.CapacityLimiter(session.config.concurrency),
    )
    tools = session.tools
    router = Router.build(
        name,
        prompts,
        session.benchmark.questions,
        [t.name for t in tools.tables.tools if t.default] if tools is not None else (),
    )
    host, port = sock.getsockname()[:2]
    server = _Server(
        uvicorn.Config(
            build_app(
                agent,
                token=settings.token,
                on_answer=on_answer,
                page_root=root,
                allow_origins=settings.allow_origins,
                router=router,
                allowed_hosts=loopback_hosts(port) if is_loopback(settings.host) else None,
            ),
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=math.ceil(settings.drain_timeout_s),
        )
    )
    ready = ServeReady(
        url=f"http://{f'[{host}]' if ':' in host else host}:{port}",
        name=name,
        run_id=run_id,
        skills_version=prompts.skills_version,
        prompts_version=prompts.prompts_version,
        skill_mode=prompts.skill_mode,
    )
    status, stopped_by = RunStatus.FAILED, "error"
    try:
        # an outside agent's gateway runs as long as the server: each request is one rollout
        async with serving_agent(agent.settings, agent.provider) as running:
            agent.settings = running
            async with anyio.create_task_group() as tg:
                tg.start_soon(flush_periodically, agent)
                if stop is not None:
                    tg.start_soon(_stop_when, stop, server)
                if on_ready is not None:
                    on_ready(ready)
                await server.serve(sockets=[sock])
                tg.cancel_scope.cancel()
        status, stopped_by = RunStatus.DONE, server.stopped_by or "stop"
        return ServeOutcome(run_id, stopped_by, agent.summary())
    finally:
        sock.close()
        with contextlib.suppress(Exception):
            agent.flush()
        summary = {**agent.summary(), "stopped_by": stopped_by}
        session.log.finish_run(
            run_id, status, {k: scrub(v) if isinstance(v, str) else v for k, v in summary.items()}
        )


async def _stop_when(stop: anyio.Event, server: _Server) -> None:
    await stop.wait()
    server.should_exit = True
    server.stopped_by = "stop"
