"""Command line: `python main.py <command>` (docs/architecture.md#commands-and-the-tui). Exit
codes: 0 ok, 1 run failed, 2 usage."""

from __future__ import annotations

import argparse
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from loguru import logger

from app.errors import STOP_SIGNAL, RunFailed, Stopped, UserError, first_leaf, stop_reason
from app.harness.config import RunConfig, load_config, parse_override
from app.logging_setup import configure_console
from app.paths import STORE_DIR, WORKSPACES_DIR
from app.providers.errors import ProviderError

COMMANDS = (
    "demo",
    "init",
    "train",
    "infer",
    "eval",
    "diagnose",
    "promote",
    "report",
    "tui",
    "import-skills",
    "export-skills",
    "fork",
    "rank",
    "export",
)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", "-v", action="store_true", help="debug-level console log")
    common.add_argument("--config", type=Path, help="TOML config file (see app/demo.toml)")
    common.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable), e.g. --set epochs=2",
    )
    common.add_argument("--no-progress", action="store_true", help="hide progress bars")
    ws = argparse.ArgumentParser(add_help=False)
    ws.add_argument("--workspace", "-w", type=Path, required=True, help="workspace folder")

    parser = argparse.ArgumentParser(
        prog="skill-trainer",
        description="Train an LLM agent's skill files and prompts "
        "with gated edits. Runs offline on the built-in simulated model by default.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        parents=[common],
        help="init + train workspaces/demo on the simulated model and print the learning curve",
    )
    p.add_argument("--workspace", "-w", type=Path, default=WORKSPACES_DIR / "demo")
    p = sub.add_parser("init", parents=[common], help="create a workspace from a seed")
    p.add_argument("workspace", type=Path)
    p.add_argument(
        "--seed",
        help="seed name in the store (e.g. sim-starter); with "
        "--skills-from, the name of the seed imported (default: the workspace's)",
    )
    p.add_argument("--questions", required=True, help="benchmark name (e.g. sim-basic)")
    p.add_argument("--store", type=Path, default=STORE_DIR)
    p.add_argument(
        "--skills-from",
        type=Path,
        metavar="DIR",
        help="import a folder of Agent Skills (<name>/SKILL.md) as the seed first",
    )
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="with --skills-from: the seed whose prompts the import takes "
        "(unless DIR has prompts/system.md)",
    )
    p = sub.add_parser(
        "import-skills",
        parents=[common],
        help="turn a folder of Agent Skills (<name>/SKILL.md) into a store seed",
    )
    p.add_argument("skills_dir", type=Path)
    p.add_argument("--name", required=True, help="name of the new seed")
    p.add_argument("--store", type=Path, default=STORE_DIR)
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="the seed whose prompts the import takes (unless the folder has prompts/system.md)",
    )
    p = sub.add_parser(
        "export-skills",
        parents=[common, ws],
        help="write a skills version as Agent Skills: <out>/.agents/skills/<name>/SKILL.md",
    )
    p.add_argument("--version", default="best", help="skills version (vN) or 'best'")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--eval-run",
        help="eval run whose accuracy goes into metadata (default: "
        "the latest finished eval of the version, else training's final test run)",
    )
    p.add_argument("--store", type=Path, default=STORE_DIR)
    p = sub.add_parser("train", parents=[common, ws], help="train skills (epochs, gate, ...)")
    p.add_argument("--resume", action="store_true", help="continue from checkpoint.json")
    p.add_argument("--fresh", action="store_true", help="archive the workspace, restart from seed")
    p.add_argument("--store", type=Path, default=STORE_DIR)
    p = sub.add_parser("infer", parents=[common, ws], help="run the current versions")
    p.add_argument("--task-types", nargs="+")
    p.add_argument("--n-samples", type=int, default=1)
    p.add_argument(
        "--run-id",
        help="name the run (letters, digits, '_', '-', '.', ':', '+'); "
        "an existing run's id is refused",
    )
    p.add_argument(
        "--overwrite-run",
        action="store_true",
        help="replace an existing infer/eval run of that id (recorded in the new run's provenance)",
    )
    p = sub.add_parser(
        "eval", parents=[common, ws], help="evaluate a skills version on the whole benchmark"
    )
    p.add_argument("version", help="skills version, e.g. v1")
    p = sub.add_parser("diagnose", parents=[common, ws], help="diagnose a run's failures")
    p.add_argument("run_id")
    p = sub.add_parser("promote", parents=[common, ws], help="turn a version into a new seed")
    p.add_argument("version")
    p.add_argument("--eval-run", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--store", type=Path, default=STORE_DIR)
    p.add_argument(
        "--agent-skills",
        type=Path,
        metavar="OUT",
        help="also write the version as Agent Skills under OUT/.agents/skills/",
    )
    p = sub.add_parser("report", parents=[common], help="plain-text summary of a workspace")
    p.add_argument("workspace", type=Path)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("tui", parents=[common], help="browse a workspace in the terminal UI")
    p.add_argument("workspace", type=Path, nargs="?")
    from app.fork_commands import add_parsers  # issue 14: fork, rank, export

    add_parsers(sub, common, ws)
    return parser


def make_config(args: argparse.Namespace, default: Path | None = None) -> RunConfig:
    overrides: dict[str, Any] = dict(parse_override(s) for s in args.set)
    return load_config(args.config or default, overrides)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_console(args.verbose)
    STOP_SIGNAL.clear()
    previous = _stop_on_sigterm()
    try:
        try:
            return dispatch(args) or 0
        except BaseExceptionGroup as group:  # anyio task groups wrap what a task raised
            raise first_leaf(group) from None
    except (UserError, RunFailed) as e:
        logger.error("error: {}", e)
        return e.exit_code
    except ProviderError as e:
        logger.error("error: {}", e)
        return 1
    except sqlite3.Error as e:  # the log's own errors name their file; this is the fallback
        logger.error("error: SQLite: {}", e)
        return 1
    except OSError as e:  # disk full, permissions: the writers leave the old state in place
        where = f"{e.filename}: " if e.filename else ""
        logger.error(
            "error: {}{} (fix the cause and rerun; training continues from its last "
            "checkpoint with --resume)",
            where,
            e.strerror or e,
        )
        return 1
    except KeyboardInterrupt as e:
        logger.error("{}", stopped_message(args, stop_reason(e)))
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop_on_sigterm():
    """SIGTERM stops a command the way Ctrl-C does: runs marked stopped, locks released."""

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        STOP_SIGNAL["reason"] = "SIGTERM"
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            # inside an event loop: its own SIGINT handler cancels the main task and raises
            # KeyboardInterrupt once every task has unwound (raising here would leave a task
            # holding an exception nobody retrieves, and a traceback on stderr)
            signal.raise_signal(signal.SIGINT)
            return
        raise Stopped("SIGTERM")

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding): leave signals alone
        return signal.getsignal(signal.SIGTERM)


def stopped_message(args: argparse.Namespace, reason: str) -> str:
    workspace = getattr(args, "workspace", None)
    if args.command not in ("train", "demo") or workspace is None:
        return f"stopped by {reason}; the run is marked stopped"
    if (Path(workspace) / "checkpoint.json").is_file():
        return (
            f"stopped by {reason}; the run is marked stopped and the checkpoint holds the "
            f"last finished step: continue with `train -w {workspace} --resume`"
        )
    return (
        f"stopped by {reason} before the first checkpoint: nothing to resume; "
        f"`train -w {workspace}` starts over"
    )


def dispatch(args: argparse.Namespace) -> int:
    from app import commands

    handler = getattr(commands, f"cmd_{args.command.replace('-', '_')}")
    return handler(args)


def entry() -> int:
    """Process entry point (main.py, the `skill-trainer` script).

    sqlite-utils imports pandas when it is installed (dev extras pull it in), which costs
    about 1.5 s of start-up that no command here needs. Only a fresh process may do this.
    """
    for name in ("pandas", "numpy"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
