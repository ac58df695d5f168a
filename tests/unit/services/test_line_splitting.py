"""Splitting an import's body into lines: linear however long a line runs, and exact."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentlasso.services.transfer import split_lines


async def test_splitting_a_line_with_no_end_is_linear_and_exact() -> None:
    async def chunks(sizes: list[int]) -> AsyncIterator[bytes]:
        for size in sizes:
            yield b"a" * size

    # Before: the partial line was re-joined on every chunk (16 MB: 2 s, 32 MB: 7.5 s).
    [line] = [line async for line in split_lines(chunks([65536] * 512), 2**40)]
    assert len(line) == 65536 * 512
    body = [b"ab\ncd", b"", b"e\n", b"\nf"]

    async def pieces() -> AsyncIterator[bytes]:
        for piece in body:
            yield piece

    assert [line async for line in split_lines(pieces(), 100)] == [b"ab", b"cde", b"", b"f"]
