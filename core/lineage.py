"""Per-record lineage of exported training data: the digests of everything that produced a
record, and one lineage id over them.

Pure logic, no I/O (the key comes in as bytes; app/harness/data/lineage.py says where it
lives). A lineage is the sha256 of each component (skills, prompts, tool manifest,
benchmark, verifier list, model and sampling parameters) plus the record's own digest; the
lineage id is sha256 over the canonical JSON of those digests, or HMAC-SHA256 with a key,
so that someone without the key cannot forge an id for an edited record.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

COMPONENTS = (
    "skills",
    "prompts",
    "tool_manifest",
    "benchmark",
    "verifiers",
    "model",
)
RECORD_KEY = "record"


def canonical(obj: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(obj: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj)).hexdigest()


def lineage_id(hashes: Mapping[str, str], key: bytes | None = None) -> str:
    """The id over every component digest and the record digest."""
    body = canonical({k: hashes[k] for k in sorted(hashes)})
    if key:
        return "hmac-sha256:" + hmac.new(key, body, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(body).hexdigest()


def build(components: Mapping[str, str], record: Any, key: bytes | None = None) -> dict[str, Any]:
    """A record's lineage: the component digests (every one of COMPONENTS, plus any extra
    the caller adds), the record's digest and the id over all of them."""
    missing = [name for name in COMPONENTS if name not in components]
    if missing:
        raise ValueError(f"lineage lacks the {missing[0]} component")
    hashes = dict(components)
    hashes[RECORD_KEY] = digest(record)
    return {"hashes": hashes, "lineage_id": lineage_id(hashes, key)}


def check(lineage: Any, record: Any, key: bytes | None = None) -> str | None:
    """None when `lineage` matches `record`; else the first thing that does not match."""
    if not isinstance(lineage, Mapping) or not isinstance(lineage.get("hashes"), Mapping):
        return "no lineage"
    hashes = lineage["hashes"]
    missing = [k for k in (*COMPONENTS, RECORD_KEY) if not isinstance(hashes.get(k), str)]
    if missing:
        return f"lineage lacks the {missing[0]} hash"
    if hashes[RECORD_KEY] != digest(record):
        return "record digest differs (the record was changed after export)"
    keyed = str(lineage.get("lineage_id", "")).startswith("hmac-")
    if keyed and not key:
        return "lineage id is an HMAC and no key is set"
    if lineage.get("lineage_id") != lineage_id(hashes, key if keyed else None):
        return "lineage id differs (a hash or the key changed)"
    return None
