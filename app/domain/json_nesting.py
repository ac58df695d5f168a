"""How deeply a client's JSON may nest, checked before it is decoded.

Python's json and msgspec both decode by recursion, and raise RecursionError (not a decode
error) near 1,000 levels, fewer when the stack is already deep; whatever walks the value
afterwards (an encoder, a template, a grader) recurses again. No document we take needs more
than a few dozen levels, so a deeper one is refused at the door, by one rule, everywhere a
client's JSON is decoded.

The check runs at C speed, a slice of the document at a time, so no one step holds the
interpreter long (a large body is checked on a thread, and the event loop runs between
slices): each slice loses its escapes, then everything but brackets and quotes, then its
strings; its brackets' deepest level is then bounded by removing innermost empty pairs a few
rounds, or counted exactly when that bound is too loose.
"""

from __future__ import annotations

import re
from itertools import accumulate

from agentlasso.domain.json_pointers import json_pointer

# Levels of arrays and objects in one document, the outermost included.
MAX_DEPTH = 64
TOO_DEEP = f"Nested more than {MAX_DEPTH} levels of arrays and objects deep."
TOO_DEEP_WORDS = f"nested more than {MAX_DEPTH} levels deep"
# Naming where a document passes the limit is a walk in Python: past this many tokens before
# the deep part, the document as a whole is named instead.
_NAMING_TOKENS = 100_000

# Objects and arrays nest alike: both become "[" and "]" (a mismatch is the decoder's to find).
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'[]{}"'))
# Escapes gone, a string is quote to quote (or to the slice's end: it goes on in the next).
_STRING = re.compile(rb'"[^"]*"')
_LEVEL_STEP = [0] * 256
_LEVEL_STEP[ord("[")], _LEVEL_STEP[ord("]")] = 1, -1
# One slice is one step of C code holding the interpreter: 64 KiB is a few ms at worst.
SLICE_BYTES = 64 * 1024
# Rounds of removing innermost pairs tried before counting a slice's levels one by one.
_QUICK_ROUNDS = 8
# Naming where is a walk in Python over this many bytes at most (the rest: the document).
_NAMING_BYTES = 256 * 1024
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}:,]', re.S)


def too_deep(document: bytes | str, max_depth: int = MAX_DEPTH) -> str | None:
    """Where the document nests deeper than `max_depth` (a JSON pointer, "" for the whole
    document), or None when it does not. Text that is not JSON is left to the decoder."""
    if len(document) <= SLICE_BYTES and _openers(document) <= max_depth:
        return None  # cannot pass the limit even if every opener nested in the one before
    raw = document.encode("utf-8", "replace") if isinstance(document, str) else document
    scan = _DepthScan(max_depth)
    for start in range(0, len(raw), SLICE_BYTES):
        if scan.passes_limit(raw[start : start + SLICE_BYTES]):
            return _pointer_past(raw[:_NAMING_BYTES], max_depth)
    return None


def _openers(document: bytes | str) -> int:
    """How many brackets and braces the document has, those in strings included: two counts
    at C speed, a fraction of the scan's cost (most documents an agent sends have few)."""
    if isinstance(document, str):
        return document.count("[") + document.count("{")
    return document.count(b"[") + document.count(b"{")


class _DepthScan:
    """The level a document is at, read a slice at a time; and what carries over a slice's
    end: being inside a string, and a backslash escaping the next slice's first byte."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.level = 0
        self.in_string = False
        self.escaping = False

    def passes_limit(self, piece: bytes) -> bool:
        """Whether the document goes deeper than the limit within this slice."""
        brackets = self._brackets_outside_strings(piece)
        opened = brackets.count(b"[")
        if self.level + opened <= self.max_depth:
            deepest = self.max_depth  # not even every opener here, unclosed, would pass it
        else:
            deepest = self._deepest(brackets)
        # Below 0 the text is not JSON (the decoder stops there): count on from 0.
        self.level = max(0, self.level + 2 * opened - len(brackets))
        return deepest > self.max_depth

    def _brackets_outside_strings(self, piece: bytes) -> bytes:
        if self.escaping:
            piece, self.escaping = piece[1:], False
        # Escaped backslashes go first, so an escaped quote is told from a quote after an
        # escaped backslash. (Backslashes outside strings are not JSON anyway.)
        piece = piece.replace(b"\\\\", b"")
        if piece.endswith(b"\\"):
            piece, self.escaping = piece[:-1], True
        kept = piece.replace(b'\\"', b"").translate(_AS_SQUARE, _NOT_STRUCTURE)
        if self.in_string:
            end = kept.find(b'"')
            if end < 0:
                return b""
            kept, self.in_string = kept[end + 1 :], False
        # Strings without brackets are now `""`: gone at once (no bracket changes sides).
        kept = _STRING.sub(b"", kept.replace(b'""', b""))
        opened = kept.find(b'"')
        if opened >= 0:
            kept, self.in_string = kept[:opened], True
        return kept

    def _deepest(self, brackets: bytes) -> int:
        """The deepest level the slice's brackets reach, or a bound on it within the limit."""
        reduced = brackets
        for rounds in range(_QUICK_ROUNDS):
            if b"[]" not in reduced:
                # What is left is closers, then openers: a level here is at most what was
                # open before, the pairs around it (fewer than the rounds), and the openers.
                bound = self.level + rounds + reduced.count(b"[")
                if bound <= self.max_depth:
                    return bound
                break
            reduced = reduced.replace(b"[]", b"")
        levels = accumulate(map(_LEVEL_STEP.__getitem__, brackets), initial=self.level)
        return max(levels)


def _pointer_past(raw: bytes, max_depth: int) -> str:
    """The pointer of the first container opened past `max_depth` levels."""
    path: list[str | int] = []  # the key or index of each open container's current member
    key: str | None = None
    for count, token in enumerate(_TOKEN.finditer(raw)):
        if count > _NAMING_TOKENS:
            return ""
        text = token.group()
        if text in (b"[", b"{"):
            if len(path) >= max_depth:
                return _as_pointer(path)
            path.append(0 if text == b"[" else "")
        elif text in (b"]", b"}"):
            if path:
                path.pop()
        elif text == b",":
            if path and isinstance(path[-1], int):
                path[-1] += 1
        elif text == b":":
            if path and key is not None:
                path[-1] = key
        else:
            key = text[1:-1].decode("utf-8", "replace")[:64]
    return ""


def _as_pointer(path: list[str | int]) -> str:
    # The outermost member is the body's own top level: the pointer starts inside it.
    return json_pointer(path)
