"""Command line: `skill-trainer <command>` (or `python main.py <command>`).

Exit codes: 0 ok, 1 a run failed, 2 bad input or a refused request (130: Ctrl-C while still
starting, app/launch.py). Each command is the module of this package named after it
(`judge-quality` is app/cli/judge_quality.py), and nothing else lists the commands: the
package's modules whose names do not start with `_` are the commands (`command_modules`).

A command module holds:
  HELP      its one-line help, also the first line of its `--help`
  EXAMPLE   the command line its `--help` ends with (without `skill-trainer`)
  OPTIONS   the option groups it takes (app/cli/_options.py `Options`: verbose, workspace,
            model, store, json), in the order its `--help` lists them
  add_arguments(parser)  its own options
  run(args) -> int       the handler: arguments in, a call of app/api.py, lines out, the exit
                         code; it imports app.api and anything slow inside, so `--help` and
                         `--version` stay fast
The shared parts are the underscore modules: app/cli/_main.py (the parser, the handler called,
errors turned into exit codes), app/cli/_options.py (option groups), app/cli/_output.py
(printing, config from the arguments), app/cli/_printers.py (lines several commands print) and
app/cli/_signals.py (SIGTERM). A new command is a new module here; then `make docs` rewrites
docs/commands.md, every command's `--help` (app/cli/_reference.py), and the README's command
table needs its row (tests/test_docs_match_code.py).
"""

from app.cli._main import (
    COMMANDS,
    build_parser,
    command_modules,
    did_you_mean,
    dispatch,
    entry,
    main,
    parse_args,
    stopped_message,
    subparser,
)

__all__ = [
    "COMMANDS",
    "build_parser",
    "command_modules",
    "did_you_mean",
    "dispatch",
    "entry",
    "main",
    "parse_args",
    "stopped_message",
    "subparser",
]
