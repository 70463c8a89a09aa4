"""The command line's parser and its run: the commands found (`command_modules`), the
arguments parsed and checked, the command's handler called and every error it may end in turned
into one line and an exit code (app/cli/__init__.py says what a command module holds).

Here rather than in app/cli/__init__.py: importing a command module binds its name in the
package's namespace, so `list` and `eval` there are the commands, not the builtins.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from loguru import logger

from app.cli._options import Options, add_command
from app.cli._signals import signals_stop_the_command
from app.errors import STOP_SIGNAL, RunFailed, UserError, first_leaf, stop_reason
from app.logging_setup import configure_console
from app.paths import absolute
from app.providers.errors import ProviderError
from app.version import package_version


@functools.cache
def command_modules() -> dict[str, ModuleType]:
    """Command name -> its module, in the order of the names: every module of this package
    whose name does not start with `_` (`_` in a module name is `-` in the command's)."""
    # the folder listed, not pkgutil.iter_modules: importing pkgutil alone costs more start-up
    # than importing every command module
    names = sorted(
        file[: -len(".py")]
        for file in os.listdir(Path(__file__).parent)
        if file.endswith(".py") and not file.startswith("_")
    )
    return {name.replace("_", "-"): importlib.import_module(f"app.cli.{name}") for name in names}


COMMANDS = tuple(command_modules())


def build_parser() -> argparse.ArgumentParser:
    o = Options()
    parser = argparse.ArgumentParser(
        prog="skill-trainer",
        allow_abbrev=False,
        description="Train an LLM agent's skill files and prompts "
        "with gated edits. Runs offline on the built-in simulated model by default.",
    )
    parser.add_argument("--version", action="version", version=f"skill-trainer {package_version()}")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug-level console log")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in command_modules().items():
        p = add_command(sub, name, module.HELP, module.EXAMPLE, o.groups(module.OPTIONS))
        module.add_arguments(p)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    _refuse_an_unknown_command(parser, sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's usage, not the top level's, and the option meant if it is close
        command = subparser(parser, args.command)
        command.error(
            f"unrecognized arguments: {' '.join(unknown)}{did_you_mean(command, unknown)}"
        )
    if hasattr(args, "workspace_positional"):
        given = [w for w in (args.workspace, args.workspace_positional) if w is not None]
        if len(given) == 2 and given[0] != given[1]:
            parser.error(f"{args.command}: two workspaces given ({given[0]} and {given[1]})")
        if not given and args.workspace_required:
            parser.error(f"{args.command}: give the workspace with -w DIR")
        args.workspace = given[0] if given else None
    _make_paths_absolute(args)
    return args


def _make_paths_absolute(args: argparse.Namespace) -> None:
    """Every path argument (-w, --out, --store, --config, --file, ...) made absolute here, once,
    so no code below depends on the directory it happens to run in (app/paths.py `absolute`)."""
    for name, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, name, absolute(value))
        elif isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            setattr(args, name, [absolute(v) for v in value])


def _refuse_an_unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """argparse (before Python 3.14) lists every command for a typo; name the one meant."""
    typed = next((word for word in argv if not word.startswith("-")), None)
    commands = list(_subcommands(parser))
    if typed is None or typed in commands:
        return
    close = difflib.get_close_matches(typed, commands, n=1, cutoff=0.6)
    meant = f"; did you mean {close[0]}?" if close else f" (commands: {', '.join(commands)})"
    parser.error(f"unknown command {typed!r}{meant}")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return parser


def did_you_mean(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """`; did you mean --xyz?` for the first unknown option close to one of `parser`'s, or
    to a config key when the command takes `--set` (`--epochs 2` for `--set epochs=2`)."""
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    for word in (w.split("=", 1)[0] for w in unknown if w.startswith("-")):
        close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
        if close:
            return f"; did you mean {close[0]}?"
        if "--set" in options:
            from app.harness.workspace.config import RunConfig

            key = word.lstrip("-").replace("-", "_")
            keys = difflib.get_close_matches(key, list(RunConfig.model_fields), n=1, cutoff=0.8)
            if keys:
                return f"; did you mean --set {keys[0]}=VALUE?"
    return ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_console(args.verbose)
    STOP_SIGNAL.clear()
    with signals_stop_the_command():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, with every error it may end in turned into one line and an exit code."""
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
    except BrokenPipeError:  # `report | head`: the reader left; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # disk full, permissions: the writers leave the old state in place
        where = f"{e.filename}: " if e.filename else ""
        hint = "training continues from its last checkpoint with --resume"
        after = f" (fix the cause and rerun; {hint})" if args.command in ("train", "demo") else ""
        logger.error("error: {}{}{}", where, e.strerror or e, after)
        return 1
    except KeyboardInterrupt as e:
        logger.error("{}", stopped_message(args, stop_reason(e)))
        return 1


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
    """The command's handler; its special cases (`train --dry-run`, `report --html`) are its
    module's."""
    run: Callable[[argparse.Namespace], int] = command_modules()[args.command].run
    return run(args)


def entry() -> int:
    """The CLI in a fresh process (called by app.launch.run, the process entry point).

    sqlite-utils imports pandas when it is installed (dev extras pull it in), which costs
    about 1.5 s of start-up that no command here needs. Only a fresh process may do this.
    """
    for name in ("pandas", "numpy"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    return main()
