"""`serve`: the CLI handler (arguments in, app/api.py's `serve`, one ready line out)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from app.cli_support import notice_if_simulated, out, out_json, overrides_from
from app.errors import UserError
from app.providers.key_check import first_missing_key

TOKEN_ENV = "SKILL_TRAINER_SERVE_TOKEN"


def cmd_serve(args: argparse.Namespace) -> int:
    from app import api

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


def cmd_savings(args: argparse.Namespace) -> int:
    from app import api
    from app.harness.serving.savings import format_savings

    if not args.savings:
        raise UserError("--baseline-model and --baseline-run go with --savings")
    workspace = args.workspace or args.workspace_positional
    if workspace is None:
        raise UserError("report: give the workspace (-w WS)")
    report = api.savings(
        workspace,
        run_id=args.run,
        baseline_model=args.baseline_model,
        baseline_run=args.baseline_run,
    )
    if args.json:
        out_json(report)
        return 0
    for line in format_savings(report):
        out(line)
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"serve": cmd_serve}
