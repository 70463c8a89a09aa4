"""Where the built-in resources are, and where workspaces go by default.

The agent prompts (`prompts/`) and the built-in store of seeds and benchmarks (`store/`) keep
their only copy at the top of the repository. pyproject.toml installs them as package data under
`app/_resources/`, beside `app/demo.toml` and the TUI styles, and they are read here through
importlib.resources. A checkout (the editable install of `make setup`, or `python main.py` in a
tree that was never installed) has no `app/_resources/`: setuptools' editable finder cannot
import a mapped folder without `__init__.py`, so the checkout's own folders are used instead.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
from functools import cache
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

WORKSPACES_ENV = "SKILL_TRAINER_WORKSPACES"

_CODE_PARENT = Path(__file__).resolve().parent.parent  # the checkout, or site-packages
_extracted = contextlib.ExitStack()  # temporary copies out of a zipped install
atexit.register(_extracted.close)


def prompts() -> Traversable:
    """The prompt templates, `<name>.md`."""
    return _mapped_folder("prompts")


def read_prompt(file_name: str) -> str:
    return (prompts() / file_name).read_text(encoding="utf-8")


@cache  # a zipped install copies the store out once per process
def builtin_store() -> Path:
    """The built-in store (`seeds/<name>/`, `questions/<name>/`) as a folder on disk: the store
    code reads it with globs and copies seeds and benchmarks out of it."""
    return on_disk(_mapped_folder("store"))


def demo_config() -> Path:
    return on_disk(files("app") / "demo.toml")


def workspaces_dir() -> Path:
    """Where `demo` writes and the TUI's picker looks: $SKILL_TRAINER_WORKSPACES when set, else
    `workspaces/` in the current directory."""
    chosen = os.environ.get(WORKSPACES_ENV)
    return Path(chosen).expanduser().resolve() if chosen else Path.cwd() / "workspaces"


def absolute(path: str | os.PathLike[str]) -> Path:
    """`path` made absolute against the current directory, `~` expanded, `..` folded, symlinks
    kept as given. The CLI and the API call this once on every path they are handed, so
    nothing below sees a relative one: a child process (a sandboxed tool, a fixture's oracle)
    runs in a folder of its own, where a relative path names something else."""
    return Path(os.path.abspath(Path(path).expanduser()))


def checkout_root() -> Path | None:
    """The repository the code runs from, or None when it runs from an installed wheel."""
    has_project_files = (_CODE_PARENT / "pyproject.toml").is_file()
    return _CODE_PARENT if has_project_files and (_CODE_PARENT / "prompts").is_dir() else None


def on_disk(resource: Traversable) -> Path:
    """`resource` as a real path, for code that needs one (copying a tree, Textual's CSS_PATH):
    itself when installed as plain files, the usual case, else a temporary copy removed at exit
    (`as_file` takes folders only from Python 3.12, so folders are copied here)."""
    if isinstance(resource, Path):
        return resource
    if resource.is_file():
        return _extracted.enter_context(as_file(resource))
    copy = Path(_extracted.enter_context(tempfile.TemporaryDirectory())) / resource.name
    _copy_tree(resource, copy)
    return copy


def _mapped_folder(name: str) -> Traversable:
    installed = files("app") / "_resources" / name
    return installed if installed.is_dir() else _CODE_PARENT / name


def _copy_tree(source: Traversable, target: Path) -> None:
    target.mkdir()
    for child in source.iterdir():
        if child.is_dir():
            _copy_tree(child, target / child.name)
        else:
            (target / child.name).write_bytes(child.read_bytes())


def near(path: Path) -> str:
    """`path` relative to the current directory when it lies below it."""
    try:
        return os.path.relpath(os.path.abspath(path)) if _below_cwd(path) else str(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def _below_cwd(path: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(Path.cwd())


def command_prefix() -> str:
    """How to run the next command the way this one was run: the checkout's main.py with the
    same interpreter, or the installed `skill-trainer` script."""
    if Path(sys.argv[0]).name == "main.py":
        return f"{near(Path(sys.executable))} {near(Path(sys.argv[0]))}"
    return "skill-trainer"
