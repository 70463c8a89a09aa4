"""The built wheel is self-contained: installed into a fresh venv, its `skill-trainer` runs
`demo` and `report` from an unrelated folder and writes nothing inside the checkout.

The fresh venv reaches the dependencies through a `.pth` line naming this interpreter's
site-packages (no network). Only the directory is added, so the `.pth` files inside it - among
them the editable install's finder for this checkout - are not run: `app` must come from the
venv.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import paths
from app.version import package_version

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
# What the build reads; the rest of a checkout (caches, venvs, workspaces) stays behind.
NOT_BUILD_INPUTS = shutil.ignore_patterns(
    ".*", "workspaces", "build", "dist", "*.egg-info", "__pycache__"
)
SUBPROCESS_TIMEOUT_S = 180


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    elsewhere: Path  # an unrelated working directory

    def run(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", paths.WORKSPACES_ENV)}
        done = subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT_S,
        )
        assert done.returncode == code, f"{args} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return done


def checkout_files() -> dict[str, tuple[int, int]]:
    """Every file in the checkout outside dot-folders (.venv, .git, tool caches): size, mtime."""
    found = {}
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            stat = (Path(folder) / name).stat()
            found[os.path.relpath(Path(folder) / name, ROOT)] = (stat.st_size, stat.st_mtime_ns)
    return found


def build_wheel(tmp: Path) -> Path:
    source = tmp / "source"  # a copy, so the build's own `build/` and egg-info land there
    shutil.copytree(ROOT, source, ignore=NOT_BUILD_INPUTS)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            tmp / "dist",
            source,
        ],
        check=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    (wheel,) = (tmp / "dist").glob("skill_trainer-*.whl")
    return wheel


def install_into_fresh_venv(wheel: Path, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index", wheel],
        check=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    (site_packages,) = venv.glob("lib/python*/site-packages")
    host = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    (site_packages / "_host_dependencies.pth").write_text("\n".join(sorted(host)) + "\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("packaging")
    wheel = build_wheel(tmp)
    install_into_fresh_venv(wheel, tmp / "venv")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return Installed(wheel=wheel, venv=tmp / "venv", elsewhere=elsewhere)


@pytest.mark.slow
def test_the_wheel_holds_the_resources_and_every_module(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    resources = {
        *(f"app/_resources/prompts/{p.name}" for p in (ROOT / "prompts").glob("*.md")),
        "app/_resources/store/seeds/sim-starter/seed.toml",
        "app/_resources/store/seeds/sim-starter/prompts/system.md",
        "app/_resources/store/questions/sim-basic/questions.jsonl",
        "app/_resources/store/questions/sim-basic/benchmark.toml",
        "app/demo.toml",
        *(f"app/tui/styles/{p.name}" for p in (ROOT / "app" / "tui" / "styles").glob("*.tcss")),
    }
    # pyproject.toml lists the packages by hand: a new package missing there fails here
    modules = {
        p.relative_to(ROOT).as_posix()
        for top in ("app", "core")
        for p in (ROOT / top).rglob("*.py")
    }
    assert len(resources) > 10
    assert resources - names == set()
    assert modules - names == set()


def test_the_installed_packages_are_marked_typed(installed: Installed) -> None:
    """PEP 561: a type checker reads the installed app's and core's annotations only when each
    package carries a `py.typed` marker (pyproject.toml's package-data ships them)."""
    found = installed.run(
        "python",
        "-c",
        "import importlib.resources as r\n"
        "for top in ('app', 'core'):\n"
        "    print(top, r.files(top).joinpath('py.typed').is_file(), r.files(top))",
    ).stdout.splitlines()
    for top, line in zip(("app", "core"), found, strict=True):
        name, present, where = line.split(" ", 2)
        assert (name, present) == (top, "True"), line
        assert Path(where).is_relative_to(installed.venv), where


@pytest.mark.slow
def test_the_installed_script_runs_demo_and_report_from_an_unrelated_folder(
    installed: Installed,
) -> None:
    before = checkout_files()

    origin = installed.run("python", "-c", "import app; print(app.__file__)").stdout.strip()
    assert Path(origin).is_relative_to(installed.venv), origin
    assert installed.run("skill-trainer", "--version").stdout == f"skill-trainer {VERSION}\n"

    demo = installed.run("skill-trainer", "demo").stdout
    assert "learning curve" in demo
    # the README's figures, from the built-in loop (no [agent] in app/demo.toml)
    assert "test accuracy: baseline 0.216 -> final 0.923" in demo
    workspace = installed.elsewhere / "workspaces" / "demo"
    assert (workspace / "manifest.json").is_file()
    con = sqlite3.connect(workspace / "harness.db")
    try:
        (config,) = con.execute("SELECT config_json FROM _runs WHERE run_id = 'train1'").fetchone()
    finally:
        con.close()
    assert json.loads(config)["agent_kind"] == "builtin"

    report = installed.run("skill-trainer", "report", "-w", str(workspace)).stdout
    assert report.startswith("test accuracy: baseline ")  # the headline first
    assert f"\nworkspace  {workspace}  (seed sim-starter)" in report
    assert "progress   finished after epoch" in report

    assert checkout_files() == before


def test_an_installed_package_writes_new_seeds_only_into_a_store_the_user_names(
    installed: Installed,
) -> None:
    skills = str(ROOT / "examples" / "agent-skills" / "sim-vague")
    refused = installed.run("skill-trainer", "import-skills", skills, "--name", "x", code=2)
    assert "--store DIR is needed" in refused.stderr
    mine = installed.elsewhere / "my-store"
    installed.run("skill-trainer", "import-skills", skills, "--name", "x", "--store", str(mine))
    workspace = installed.elsewhere / "ws-x"
    init = ["init", "-w", str(workspace), "--seed", "x", "--questions", "sim-basic"]
    installed.run("skill-trainer", *init, "--store", str(mine))  # the benchmark is built in
    assert (mine / "seeds" / "x").is_dir() and (workspace / "manifest.json").is_file()


def test_workspaces_default_to_the_current_folder_unless_the_variable_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(paths.WORKSPACES_ENV, raising=False)
    assert paths.workspaces_dir() == tmp_path / "workspaces"
    monkeypatch.setenv(paths.WORKSPACES_ENV, str(tmp_path / "mine"))
    assert paths.workspaces_dir() == tmp_path / "mine"


def test_a_checkout_reads_the_top_level_folders() -> None:
    assert paths.checkout_root() == ROOT
    assert paths.builtin_store() == ROOT / "store"
    assert paths.read_prompt("agent_user.md") == (ROOT / "prompts" / "agent_user.md").read_text(
        encoding="utf-8"
    )


def test_a_zipped_resource_is_copied_out_to_a_real_folder(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("store/seeds/s/seed.toml", "name = 's'\n")
        z.writestr("store/questions/q/questions.jsonl", "{}\n")
    zipped = zipfile.Path(archive) / "store"

    on_disk = paths.on_disk(zipped)

    assert on_disk.is_dir() and on_disk.name == "store"
    assert (on_disk / "seeds" / "s" / "seed.toml").read_text() == "name = 's'\n"
    assert (on_disk / "questions" / "q" / "questions.jsonl").read_text() == "{}\n"
    assert paths.on_disk(zipped / "seeds" / "s" / "seed.toml").read_text() == "name = 's'\n"


def test_version_falls_back_to_the_checkouts_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import PackageNotFoundError

    import app.version

    def not_installed(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(app.version, "version", not_installed)
    assert package_version() == VERSION
