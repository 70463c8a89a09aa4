"""core/licences.py: tiers of SPDX licence ids and how AND / OR fold them."""

from __future__ import annotations

from core.licences import Tier, all_of, any_of, tier_of


def test_tiers_of_single_ids() -> None:
    for permissive in ("MIT", "Apache-2.0", "BSD-3-Clause", "CC0-1.0", "CC-BY-4.0", "ISC"):
        assert tier_of(permissive) is Tier.PERMISSIVE, permissive
    for weak in ("LGPL-2.1-only", "MPL-2.0", "EPL-2.0"):
        assert tier_of(weak) is Tier.WEAK_COPYLEFT, weak
    for strong in ("GPL-3.0-or-later", "AGPL-3.0-only", "CC-BY-SA-4.0", "ODbL-1.0"):
        assert tier_of(strong) is Tier.STRONG_COPYLEFT, strong
    for refused in ("CC-BY-NC-4.0", "CC-BY-NC-SA-4.0", "CC-BY-ND-4.0", "NONE", "NOASSERTION"):
        assert tier_of(refused) is Tier.RESTRICTED, refused
    assert tier_of("LicenseRef-Acme-Internal") is Tier.RESTRICTED  # unclassified: proprietary
    assert tier_of("LicenseRef-Acme-Permissive") is Tier.PERMISSIVE


def test_and_takes_the_strictest_or_the_least_strict() -> None:
    assert all_of([Tier.PERMISSIVE, Tier.STRONG_COPYLEFT]) is Tier.STRONG_COPYLEFT
    assert any_of([Tier.PERMISSIVE, Tier.STRONG_COPYLEFT]) is Tier.PERMISSIVE
    assert all_of([]) is Tier.RESTRICTED and any_of([]) is Tier.RESTRICTED
    assert Tier.WEAK_COPYLEFT.label == "weak-copyleft"
