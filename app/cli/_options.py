"""What the commands' parsers share: the option groups (`Options`), a command's parser with its
example (`add_command`) and the older positional workspace (`add_workspace_alias`).

Imported when the parser is built, so for `--help` too: the standard library and nothing else.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class Options:
    """Parent parsers: each command takes only the option groups it uses (its `OPTIONS`)."""

    def __init__(self) -> None:
        self.verbose = _parent()
        # SUPPRESS: a command that is not given -v leaves the top-level parser's value (`-v`
        # before the command) in place instead of resetting it to False
        self.verbose.add_argument(
            "--verbose",
            "-v",
            action="store_true",
            default=argparse.SUPPRESS,
            help="debug-level console log (before or after the command)",
        )
        self.json = _parent()
        self.json.add_argument(
            "--json",
            action="store_true",
            help="the result as one JSON document on stdout (log lines stay on stderr)",
        )
        self.model = _parent()  # commands that run models read a config and show bars
        self.model.add_argument("--config", type=Path, help="TOML config file (see app/demo.toml)")
        self.model.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override one config key (repeatable), e.g. --set epochs=2 or --set gate.n_max=60",
        )
        self.model.add_argument("--no-progress", action="store_true", help="hide progress bars")
        self.workspace = _parent()
        self.workspace.add_argument(
            "--workspace", "-w", type=Path, required=True, help="workspace folder"
        )
        self.store = _parent()
        self.store.add_argument(
            "--store",
            type=Path,
            help="store of seeds and benchmarks (default: the built-in one; seeds and "
            "benchmarks not found in DIR are looked up there too)",
        )

    def groups(self, names: Sequence[str]) -> list[argparse.ArgumentParser]:
        """The parent parsers named (`verbose`, `json`, `model`, `workspace`, `store`), in order."""
        return [getattr(self, name) for name in names]


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def add_command(
    sub: Any, name: str, help: str, example: str, parents: list[argparse.ArgumentParser]
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with one example."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        parents=parents,
        help=help,
        description=help,
        epilog=f"example:\n  skill-trainer {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # a prefix is reported with the option meant, never guessed
    )
    return parser


def add_workspace_alias(p: argparse.ArgumentParser, required: bool) -> None:
    """`-w DIR`, or the workspace as the first positional argument (the older form)."""
    p.add_argument("--workspace", "-w", type=Path, help="workspace folder")
    p.add_argument(
        "workspace_positional", type=Path, nargs="?", metavar="WORKSPACE", help="same as -w"
    )
    p.set_defaults(workspace_required=required)
