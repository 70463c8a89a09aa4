"""`diagnose`: diagnose a run's failures (app/api.py `diagnose`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.cli._output import model_config_from, notice_if_simulated, out, out_json, progress_from

if TYPE_CHECKING:
    from app import api

HELP = "diagnose a run's failures"
EXAMPLE = "diagnose -w workspaces/mine baseline"
OPTIONS = ("verbose", "workspace", "model", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", help="the run whose failures to diagnose (e.g. baseline, eval-1)")


def run(args: argparse.Namespace) -> int:
    config = model_config_from(args)
    from app import api

    result = api.diagnose(args.workspace, args.run_id, config, progress=progress_from(args))
    if args.json:
        out_json(result)
        return 0
    for line in diagnose_lines(result):
        out(line)
    notice_if_simulated(result.simulated_model, config.models.values())
    return 0


def diagnose_lines(result: api.DiagnoseResult) -> list[str]:
    """`diagnose`'s result as lines for people."""

    def counts(by_name: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())) or "none"

    unparsed = f" ({result.degraded} did not parse)" if result.degraded else ""
    return [
        f"diagnose {result.run_id}: {result.failures} failures diagnosed{unparsed}",
        f"  by category: {counts(result.by_category)}",
        f"  decided by: {counts(result.decided_by)} (rules before the judge)",
        f"  case packs (failures sampled for the evolver): skills {counts(result.skill_packs)}",
        f"    system prompt {result.system_pack}; tools {counts(result.tool_packs)}",
    ]
