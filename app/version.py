"""The installed version, for `--version`."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from app.paths import checkout_root
from app.toml_compat import tomllib

DISTRIBUTION = "skill-trainer"


def package_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # a checkout run without `pip install`: its pyproject says
        root = checkout_root()
        if root is None:
            return "unknown"
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        return str(project["project"]["version"])
