"""How deeply a JSON document nests, checked on its bytes before a streaming parser sees them.

ijson keeps one prefix string per open level (`item.item.item...`), so its memory grows with
the square of the depth: a 60 KB file 30,000 levels deep took 2.2 GB. `DepthGuard` is fed
the same chunks as the parser and stops the file as soon as it opens more than `limit`
levels. Most chunks are checked without a Python-level loop over their bytes: strings are
cut out and the brackets kept with `bytes.replace`, `bytes.translate` and `bytes.split`
(`_brackets`), and matched pairs removed with `bytes.replace` (each pass removes at least one
level); only a chunk that may pass the limit is walked byte by byte, which also gives the
exact line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_DEPTH = 512  # levels of objects and arrays; the exports seen nest fewer than 30

_NOT_QUOTES_OR_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


class TooDeep(ValueError):
    """The document opens more levels than the limit; `offset` is in the chunk just fed."""

    def __init__(self, offset: int, limit: int) -> None:
        super().__init__(f"JSON nested too deeply (more than {limit} levels)")
        self.offset = offset


@dataclass
class DepthGuard:
    """Tracks the open brackets of a JSON text fed in chunks (strings may straddle them)."""

    limit: int = MAX_DEPTH
    open: bytearray = field(default_factory=bytearray)  # the open brackets, outermost first
    in_string: bool = False
    escape: bool = False  # the chunk before ended on a backslash inside a string

    def feed(self, chunk: bytes) -> None:
        """Raises `TooDeep` when `chunk` opens a level past the limit."""
        state = (bytes(self.open), self.in_string, self.escape)
        brackets = self._brackets(chunk)
        passes, rest = 0, brackets
        while True:  # remove innermost pairs: `passes` bounds the depth inside the chunk
            shorter = rest.replace(b"[]", b"").replace(b"{}", b"")
            if len(shorter) == len(rest):
                break
            rest, passes = shorter, passes + 1
            if len(self.open) + 2 * passes > self.limit:
                return self._walk(chunk, state)
        first_open = next((i for i, b in enumerate(rest) if b in _OPEN), len(rest))
        closed, opened = rest[:first_open], rest[first_open:]
        # what was open, what stays open, and pairs nested inside: the deepest the chunk went
        deepest = len(self.open) + len(opened) + 2 * passes
        mismatched = len(closed) > len(self.open) or any(b in _CLOSE for b in opened)
        if deepest > self.limit or mismatched:  # mismatched: the parser says where
            return self._walk(chunk, state)
        if closed:
            del self.open[len(self.open) - len(closed) :]
        self.open += opened

    def _brackets(self, chunk: bytes) -> bytes:
        """The chunk's brackets outside strings, in order; updates the string state. Escaped
        backslashes, then escaped quotes, are removed (JSON pairs backslashes left to right),
        then every byte but quotes and brackets; a string without brackets is then `""`,
        dropped by one `replace` (two adjacent quotes, whichever strings they end and begin,
        leave the parity of the rest as it was), and the few quotes left split inside from
        outside. Each step is one pass in C."""
        if self.escape:  # the chunk before ended on a backslash: this first byte is escaped
            chunk, self.escape = chunk[1:], False
        run = len(chunk) - len(chunk.rstrip(b"\\"))
        if run % 2:  # the last backslash escapes the next chunk's first byte
            chunk, self.escape = chunk[:-1], True
        if b"\\\\" in chunk:
            chunk = chunk.replace(b"\\\\", b"")
        if b'\\"' in chunk:
            chunk = chunk.replace(b'\\"', b"")
        small = chunk.translate(None, _NOT_QUOTES_OR_BRACKETS)
        if self.in_string:
            small = b'"' + small  # the string that goes on from the chunk before
        small = small.replace(b'""', b"")
        if b'"' not in small:
            self.in_string = False
            return small
        pieces = small.split(b'"')
        self.in_string = len(pieces) % 2 == 0  # an odd number of quotes: a string goes on
        return b"".join(pieces[0::2])

    def _walk(self, chunk: bytes, state: tuple[bytes, bool, bool]) -> None:
        """The exact walk from the state before `chunk`: raises at the byte past the limit."""
        opened, self.in_string, self.escape = state
        self.open = bytearray(opened)
        for i, b in enumerate(chunk):
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif b == 0x5C:
                    self.escape = True
                elif b == 0x22:
                    self.in_string = False
            elif b == 0x22:
                self.in_string = True
            elif b in _OPEN:
                self.open.append(b)
                if len(self.open) > self.limit:
                    raise TooDeep(i, self.limit)
            elif b in _CLOSE and self.open:
                self.open.pop()
