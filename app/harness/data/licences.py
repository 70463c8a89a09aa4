"""Licences of what an export is made from (docs/curation.md#licences): SPDX expressions
parsed with `license-expression`, folded into core/licences.py's tiers.

Sources today: the benchmark (`license = "<SPDX expression>"` in the workspace's
`questions/benchmark.toml`). Custom licences are `LicenseRef-...` ids; one nobody classified
counts as proprietary. A restricted tier (proprietary, non-commercial, no derivatives, no
licence) is refused; strong copyleft needs `allow_copyleft` (`export --allow-copyleft`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.harness.workspace.store import read_toml
from core.licences import Tier, all_of, any_of, tier_of

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

LICENCE_KEY = "license"  # the SPDX spelling, as in pyproject.toml and SKILL.md front matter
MAX_EXPRESSION_CHARS = 500


@dataclass(frozen=True)
class LicenceSource:
    what: str  # e.g. "benchmark sim-basic"
    where: str  # file and key
    expression: str | None
    tier: Tier

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.what,
            "where": self.where,
            "expression": self.expression,
            "tier": self.tier.label,
        }


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


def benchmark_licence(session: Session) -> LicenceSource:
    path = Path(session.paths.questions_dir) / "benchmark.toml"
    where = f"{path}: {LICENCE_KEY}"
    value = read_toml(path).get(LICENCE_KEY)
    what = f"benchmark {session.benchmark.name}"
    if value is None:
        return LicenceSource(what, where, None, Tier.RESTRICTED)
    if not isinstance(value, str):
        raise UserError(f'{where}: must be an SPDX expression string, e.g. "MIT"')
    return LicenceSource(what, where, value, expression_tier(value, where))


def export_licences(
    session: Session, allow_copyleft: bool, allow_restricted: bool = False
) -> dict[str, Any]:
    """The sources' licences and the export's tier (the strictest), or a refusal.

    `allow_restricted` is for data the user may train on although no public licence says so
    (their own agent's traces, an in-house benchmark): the export goes ahead and its manifest
    records that the user vouched for it."""
    return sources_licence([benchmark_licence(session)], allow_copyleft, allow_restricted)


def sources_licence(
    sources: list[LicenceSource], allow_copyleft: bool, allow_restricted: bool
) -> dict[str, Any]:
    """`export_licences` for any sources (a benchmark, ingest runs)."""
    tier = all_of(s.tier for s in sources)
    worst = max(sources, key=lambda s: s.tier)
    if tier is Tier.RESTRICTED and allow_restricted:
        return {
            "tier": tier.label,
            "sources": [s.to_json() for s in sources],
            "allowed_by": "allow_restricted: the user declared the right to train on it",
        }
    if tier is Tier.RESTRICTED:
        why = (
            "declares no licence"
            if worst.expression is None
            else f"is licensed {worst.expression!r} (proprietary, non-commercial or no derivatives)"
        )
        raise UserError(
            f"{worst.where}: the {worst.what} {why}; training data is not exported from it "
            "(declare an SPDX licence that allows it, or add --allow-restricted "
            "(allow_restricted=True) for data you own, such as your own agent's traces)"
        )
    if tier is Tier.STRONG_COPYLEFT and not allow_copyleft:
        raise UserError(
            f"{worst.where}: the {worst.what} is licensed {worst.expression!r} (strong "
            "copyleft); add --allow-copyleft (allow_copyleft=True) to export it anyway"
        )
    return {"tier": tier.label, "sources": [s.to_json() for s in sources]}
