"""The interpreter start before `app/launch.py` runs: nothing of ours runs there.

`app/launch.py` turns a Ctrl-C during start-up into one line and exit code 130, but only from
its first line on. Before it, the interpreter runs the `.pth` files of site-packages; setuptools'
default editable install puts an import hook there (its finder imports pathlib, re and
importlib.machinery: about 50 ms of every start), and a Ctrl-C landing in it printed a
KeyboardInterrupt traceback. `make setup` installs in compat mode: a plain path line.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _editable_pth_files() -> list[Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    return sorted(site.glob("__editable__*skill_trainer*.pth"))


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="runs in the checkout's own .venv (make setup), whose install mode it checks",
)
def test_the_editable_install_runs_no_code_when_python_starts() -> None:
    found = _editable_pth_files()
    assert found, "make setup installs the checkout editable; no __editable__ .pth found"
    for pth in found:
        for line in pth.read_text(encoding="utf-8").splitlines():
            assert not line.startswith(("import ", "import\t")), (
                f"{pth.name} runs code at every start ({line[:60]!r}): reinstall with "
                "`rm -rf .venv && make setup` (Makefile: editable_mode=compat)"
            )
