"""Licence tiers of training-data sources, from SPDX licence ids (docs/curation.md#licences).

Pure logic, no I/O and no parser: app/harness/data/licences.py parses an SPDX expression (with
the `license-expression` package) and folds it with `all_of` (AND: every licence applies, so
the strictest wins) and `any_of` (OR: the user picks, so the least strict wins).

Tiers, least to most restricted:
- PERMISSIVE: MIT, Apache-2.0, BSD, CC0, CC-BY and the like;
- WEAK_COPYLEFT: file- or library-level copyleft (LGPL, MPL, EPL, CDDL);
- STRONG_COPYLEFT: GPL, AGPL, share-alike (CC-BY-SA, ODbL), SSPL: exports need an explicit
  flag, since a model trained on them may carry the obligation;
- RESTRICTED: proprietary (a LicenseRef- nobody classified), non-commercial (-NC),
  no derivatives (-ND), or no licence at all (absent, NONE, NOASSERTION): refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

STRONG_COPYLEFT_PREFIXES = (
    "gpl-",
    "agpl-",
    "cc-by-sa-",
    "odbl-",
    "sspl-",
    "osl-",
    "eupl-",
    "cecill-2",
    "rpl-",
)
WEAK_COPYLEFT_PREFIXES = ("lgpl-", "mpl-", "epl-", "cddl-", "cpl-", "ms-rl", "cecill-c")
NO_LICENCE = ("none", "noassertion")


class Tier(IntEnum):
    PERMISSIVE = 0
    WEAK_COPYLEFT = 1
    STRONG_COPYLEFT = 2
    RESTRICTED = 3

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")


def tier_of(licence_id: str) -> Tier:
    """The tier of one SPDX licence id (or LicenseRef-)."""
    key = licence_id.strip().lower()
    if key in NO_LICENCE or not key:
        return Tier.RESTRICTED
    if key.startswith("licenseref-"):
        if "permissive" in key:
            return Tier.PERMISSIVE
        return Tier.RESTRICTED  # a custom licence: proprietary until someone classes it
    parts = key.split("-")
    if "nc" in parts or "nd" in parts:  # CC non-commercial or no-derivatives
        return Tier.RESTRICTED
    if key.startswith(STRONG_COPYLEFT_PREFIXES):
        return Tier.STRONG_COPYLEFT
    if key.startswith(WEAK_COPYLEFT_PREFIXES):
        return Tier.WEAK_COPYLEFT
    return Tier.PERMISSIVE


def all_of(tiers: Iterable[Tier]) -> Tier:
    """AND: every licence applies."""
    return max(tiers, default=Tier.RESTRICTED)


def any_of(tiers: Iterable[Tier]) -> Tier:
    """OR: the licensee may pick any one."""
    return min(tiers, default=Tier.RESTRICTED)
