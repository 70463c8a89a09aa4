"""core/lineage.py: record digests and lineage ids, plain and keyed."""

from __future__ import annotations

import pytest

from core import lineage

COMPONENTS = {name: lineage.digest(name) for name in lineage.COMPONENTS}
RECORD = {"messages": [{"role": "user", "content": "hi"}], "label": True}


def test_an_untouched_record_matches_and_any_change_is_named() -> None:
    sealed = lineage.build(COMPONENTS, RECORD)
    assert sealed["lineage_id"].startswith("sha256:")
    assert lineage.check(sealed, RECORD) is None
    changed = {**RECORD, "label": False}
    assert "record digest differs" in str(lineage.check(sealed, changed))
    forged = {**sealed, "hashes": {**sealed["hashes"], "model": lineage.digest("other")}}
    assert "lineage id differs" in str(lineage.check(forged, RECORD))
    assert lineage.check(None, RECORD) == "no lineage"
    no_skills = {**sealed, "hashes": {k: v for k, v in sealed["hashes"].items() if k != "skills"}}
    assert lineage.check(no_skills, RECORD) == "lineage lacks the skills hash"


def test_a_keyed_id_needs_the_same_key() -> None:
    sealed = lineage.build(COMPONENTS, RECORD, key=b"k1")
    assert sealed["lineage_id"].startswith("hmac-sha256:")
    assert lineage.check(sealed, RECORD, key=b"k1") is None
    assert "lineage id differs" in str(lineage.check(sealed, RECORD, key=b"k2"))
    assert "no key is set" in str(lineage.check(sealed, RECORD))
    # an unkeyed id over the same hashes is a different id: no one can drop the key
    assert lineage.build(COMPONENTS, RECORD)["lineage_id"] != sealed["lineage_id"]


def test_every_component_is_required_and_canonical_json_is_order_free() -> None:
    with pytest.raises(ValueError, match="lacks the skills component"):
        lineage.build({k: v for k, v in COMPONENTS.items() if k != "skills"}, RECORD)
    assert lineage.digest({"a": 1, "b": 2}) == lineage.digest({"b": 2, "a": 1})
