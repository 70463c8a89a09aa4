"""SPDX licence expressions of training-data sources, parsed with `license-expression` and
folded into core/licences.py's tiers (docs/curation.md#licences).

Here, in the workspace room, because every room that takes in data checks the expression it
is given when it is given: a seed's `seed.toml` (app/harness/workspace/store.py), `ingest
--license` (app/harness/ingest/), and the export that sums them up
(app/harness/data/licences.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from app.errors import UserError
from core.licences import Tier, all_of, any_of, tier_of

LICENCE_KEY = "license"  # the SPDX spelling, as in pyproject.toml and SKILL.md front matter
MAX_EXPRESSION_CHARS = 500


@lru_cache(maxsize=1)
def _licensing() -> Any:
    from license_expression import get_spdx_licensing

    return get_spdx_licensing()


def expression_tier(expression: str, where: str) -> Tier:
    """The tier of an SPDX expression; one that does not parse, or names an id that is neither
    SPDX nor LicenseRef-, is refused naming `where`."""
    from license_expression import ExpressionError

    if len(expression) > MAX_EXPRESSION_CHARS:
        raise UserError(f"{where}: licence expression longer than {MAX_EXPRESSION_CHARS} chars")
    licensing = _licensing()
    try:
        parsed = licensing.parse(expression)
    except ExpressionError as e:
        raise UserError(f"{where}: {expression!r} is not an SPDX expression ({e})") from None
    if parsed is None:
        return Tier.RESTRICTED
    unknown = [k for k in licensing.unknown_license_keys(parsed) if not k.startswith("LicenseRef-")]
    if unknown:
        raise UserError(
            f"{where}: {unknown[0]!r} is not an SPDX licence id (spdx.org/licenses; a custom "
            "licence is spelled LicenseRef-<name>)"
        )
    return _fold(parsed)


def checked_expression(value: object, where: str) -> str | None:
    """A declared licence (None when absent), refused naming `where` unless it is an SPDX
    expression string."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError(f'{where}: must be an SPDX expression string, e.g. "MIT"')
    expression_tier(value, where)
    return value


def _fold(node: Any) -> Tier:
    from license_expression import AND, OR, LicenseSymbol, LicenseWithExceptionSymbol

    if isinstance(node, LicenseWithExceptionSymbol):
        return tier_of(node.license_symbol.key)  # an exception only ever relaxes the base
    if isinstance(node, LicenseSymbol):
        return tier_of(node.key)
    if isinstance(node, AND):
        return all_of(_fold(a) for a in node.args)
    if isinstance(node, OR):
        return any_of(_fold(a) for a in node.args)
    return Tier.RESTRICTED
