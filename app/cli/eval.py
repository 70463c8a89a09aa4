"""`eval`: evaluate a skills version on the whole benchmark (app/api.py `evaluate`)."""

from __future__ import annotations

import argparse

from app.cli._output import model_config_from, notice_if_simulated, out, out_json, progress_from
from app.errors import UserError

HELP = "evaluate a skills version on the whole benchmark"
EXAMPLE = "eval -w workspaces/mine v3"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("version", help="skills version, e.g. v3, or best (the best one so far)")
    p.add_argument(
        "--tool-alias",
        action="append",
        metavar="OLD=NEW",
        help="show a built-in tool under a new name (repeatable), e.g. read_context=lookup: "
        "how much of a gain survives a changed tool interface",
    )
    p.add_argument(
        "--agent",
        metavar="SPEC",
        help="run this eval with another agent than the config's (do skills trained with one "
        "agent transfer to another?): builtin, python:MODULE:FUNCTION or python:FILE.py:FUNCTION, "
        "or command:COMMAND LINE (split as a shell would), e.g. --agent 'command:python agent.py'",
    )


def run(args: argparse.Namespace) -> int:
    from app.api_args import AgentChoice  # loaded with the config model, not for --help

    agent = None if args.agent is None else AgentChoice.parse(args.agent)  # before the harness
    config = model_config_from(args)
    from app import api
    from app.cli._printers import memories_line, print_result

    aliases = parse_tool_aliases(getattr(args, "tool_alias", None) or [])
    result = api.evaluate(
        args.workspace,
        args.version,
        config,
        progress=progress_from(args),
        tool_aliases=aliases,
        agent=agent,
    )
    if args.json:
        out_json(result)
        return 0
    print_result(result, f"eval {result.skills_version} (run {result.run_id})")
    out(f"  agent: {result.agent}")
    if result.tool_aliases:
        shown = ", ".join(f"{k} shown as {v}" for k, v in result.tool_aliases.items())
        out(f"  renamed tools: {shown}")
    out(f"  model calls: {result.new_model_calls} new, {result.cache_hits} from cache")
    memories_line(result, config.memory_k)
    notice_if_simulated(config.uses_sim, config.models.values())
    return 0


def parse_tool_aliases(items: list[str]) -> dict[str, str]:
    """`--tool-alias OLD=NEW` items (api.evaluate checks the names)."""
    aliases: dict[str, str] = {}
    for item in items:
        real, sep, shown = item.partition("=")
        if not sep or not real or not shown:
            raise UserError(f"--tool-alias {item!r}: expected OLD=NEW, e.g. read_context=lookup")
        aliases[real] = shown
    return aliases
