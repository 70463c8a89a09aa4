"""Deterministic draws: a pure function of their inputs, so the sim is reproducible."""

import hashlib


def draw(*parts: object) -> float:
    """A uniform number in [0, 1) from the parts (stable across processes and platforms)."""
    h = hashlib.blake2b(
        "\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(h, "big") / 2**64


def pick(n: int, *parts: object) -> int:
    return int(draw(*parts) * n) if n > 0 else 0
