"""`serve`: the workspace's agent at an OpenAI-compatible endpoint (docs/serving.md; app/api.py
`serve`). Prints one line when it is ready and one when it stops."""

from __future__ import annotations

import argparse
import os
import sys

from app.cli._output import notice_if_simulated, out, overrides_from
from app.errors import UserError

TOKEN_ENV = "SKILL_TRAINER_SERVE_TOKEN"

HELP = "serve the workspace's agent at an OpenAI-compatible endpoint (docs/serving.md)"
EXAMPLE = "serve -w workspaces/demo --port 8000"
OPTIONS = ("verbose", "workspace", "model")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--version",
        help="best (default when recorded, else current), current, or a skills version vN",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    p.add_argument(
        "--token",
        help="bearer token clients must send; required beyond loopback "
        "(or set SKILL_TRAINER_SERVE_TOKEN)",
    )
    p.add_argument("--name", help="model name clients ask for (default: the workspace folder)")
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages from ORIGIN call the API from a browser (CORS; needs --token); "
        "null: a page opened from a file, such as report --html's",
    )


def run(args: argparse.Namespace) -> int:
    from app import api
    from app.providers.key_check import first_missing_key

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    overrides = overrides_from(args)
    config = api.serve_config(args.workspace, args.config, overrides)
    if why := first_missing_key(config):
        raise UserError(why)

    def ready(r: api.ServeReady) -> None:
        out(
            f"serving {r.name} at {r.url}/v1 (skills {r.skills_version}, prompts "
            f"{r.prompts_version}, {r.skill_mode} skills; run {r.run_id}); SIGTERM or Ctrl-C stops"
        )
        out(f"web report at {r.url}/" + ("?token=<token>" if token else ""))
        notice_if_simulated(config.uses_sim)
        sys.stdout.flush()

    outcome = api.serve(
        args.workspace,
        config,
        version=args.version,
        host=args.host,
        port=args.port,
        token=token,
        name=args.name,
        on_ready=ready,
        allow_origins=tuple(args.allow_origin),
    )
    s = outcome.summary
    out(
        f"stopped by {outcome.stopped_by}: run {outcome.run_id} answered {s['requests']} "
        f"requests ({s['errors']} errors, {s['budget_refusals']} refused by the spend cap, "
        f"${s['cost_usd']:.6f})"
    )
    return 0
