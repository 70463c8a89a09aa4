"""summarise_tool_output: head/tail lines with an omitted marker, then a byte cap."""

from __future__ import annotations

import re
import time

import pytest

from core.trajectory import HEAD_LINES, MAX_BYTES, TAIL_LINES, summarise_tool_output


def lines(n: int, prefix: str = "line") -> str:
    return "\n".join(f"{prefix} {i}" for i in range(n))


def nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("text", ["", "one line", lines(HEAD_LINES + TAIL_LINES)])
def test_short_output_is_unchanged(text: str) -> None:
    assert summarise_tool_output(text) == text


def test_long_output_keeps_head_and_tail_with_marker() -> None:
    n = HEAD_LINES + TAIL_LINES + 17
    out = summarise_tool_output(lines(n)).split("\n")
    assert out[:HEAD_LINES] == [f"line {i}" for i in range(HEAD_LINES)]
    assert out[HEAD_LINES] == "[... 17 lines omitted ...]"
    assert out[HEAD_LINES + 1 :] == [f"line {i}" for i in range(n - TAIL_LINES, n)]
    assert len(out) == HEAD_LINES + TAIL_LINES + 1


def test_one_line_over_the_limit_is_summarised() -> None:
    out = summarise_tool_output(lines(HEAD_LINES + TAIL_LINES + 1))
    assert "[... 1 lines omitted ...]" in out
    assert f"line {HEAD_LINES}\n" not in out + "\n"


def test_custom_head_and_tail() -> None:
    out = summarise_tool_output(lines(10), head=2, tail=1)
    assert out == "line 0\nline 1\n[... 7 lines omitted ...]\nline 9"


def test_byte_cap_with_exact_omitted_count() -> None:
    text = "x" * 10_000
    out = summarise_tool_output(text)
    head, marker = out.rsplit("\n", 1)
    assert head == "x" * MAX_BYTES
    assert marker == f"[... {10_000 - MAX_BYTES} bytes omitted ...]"


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_byte_cap_never_splits_a_character(char: str) -> None:
    text = char * 3000
    out = summarise_tool_output(text)
    kept, marker = out.rsplit("\n", 1)
    assert set(kept) == {char}
    assert MAX_BYTES - nbytes(char) < nbytes(kept) <= MAX_BYTES
    omitted = int(re.fullmatch(r"\[\.\.\. (\d+) bytes omitted \.\.\.\]", marker).group(1))
    assert omitted + nbytes(kept) == nbytes(text)
    out.encode("utf-8")  # valid UTF-8


def test_lines_then_bytes_bound_the_output() -> None:
    text = "\n".join("y" * 500 for _ in range(1000))  # 31 kept lines still exceed the cap
    out = summarise_tool_output(text)
    assert nbytes(out) <= MAX_BYTES + 40
    assert out.startswith("y" * 500 + "\n")
    assert out.endswith("bytes omitted ...]")


def test_custom_byte_cap() -> None:
    out = summarise_tool_output("abcdefghij", max_bytes=4)
    assert out == "abcd\n[... 6 bytes omitted ...]"


def test_deterministic_and_fast_on_huge_input() -> None:
    text = "\n".join(f"row {i} " + "z" * 80 for i in range(200_000))  # ~17 MB
    started = time.perf_counter()
    a = summarise_tool_output(text)
    b = summarise_tool_output(text)
    assert time.perf_counter() - started < 5.0
    assert a == b
    assert "[... 199970 lines omitted ...]" in a and "bytes omitted" not in a
    assert nbytes(a) <= MAX_BYTES + 40


def test_crlf_and_lone_surrogates_do_not_break_it() -> None:
    out = summarise_tool_output("a\r\nb\r\nc")
    assert out == "a\nb\nc"
    out = summarise_tool_output("bad \ud800 " * 2000)
    assert out.endswith("bytes omitted ...]")
    assert nbytes(out) <= MAX_BYTES + 40
