"""TOML reading: `tomllib` on Python 3.11+, the `tomli` backport below that (user's choice)."""

import sys

if sys.version_info >= (3, 11):  # noqa: UP036 - kept so a 3.10 port needs no code change
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["tomllib"]
