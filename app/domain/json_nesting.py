"""How deeply a client's JSON may nest, checked before it is decoded.

Python's json and msgspec both decode by recursion, and raise RecursionError (not a decode
error) near 1,000 levels, fewer when the stack is already deep; whatever walks the value
afterwards (an encoder, a template, a grader) recurses again. No document we take needs more
than a few dozen levels, so a deeper one is refused at the door, by one rule, everywhere a
client's JSON is decoded.

The check runs at C speed: strings are dropped, then everything but brackets, then innermost
empty pairs are removed a round at a time; a document is within the limit when the brackets
are gone in at most MAX_DEPTH rounds.
"""

from __future__ import annotations

import re

# Levels of arrays and objects in one document, the outermost included.
MAX_DEPTH = 64
TOO_DEEP = f"Nested more than {MAX_DEPTH} levels of arrays and objects deep."
TOO_DEEP_WORDS = f"nested more than {MAX_DEPTH} levels deep"
# Naming where a document passes the limit is a walk in Python: past this many tokens before
# the deep part, the document as a whole is named instead.
_NAMING_TOKENS = 100_000

# Objects and arrays nest alike: both become "[" and "]" (a mismatch is the decoder's to find).
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+"?|[\[\]{}:,]', re.S)


def too_deep(document: bytes | str, max_depth: int = MAX_DEPTH) -> str | None:
    """Where the document nests deeper than `max_depth` (a JSON pointer, "" for the whole
    document), or None when it does not. Text that is not JSON is left to the decoder."""
    raw = document.encode("utf-8", "replace") if isinstance(document, str) else document
    if not _nests_deeper(raw, max_depth):
        return None
    return _pointer_past(raw, max_depth)


def _nests_deeper(raw: bytes, max_depth: int) -> bool:
    brackets = _outside_strings(raw).translate(_AS_SQUARE, _NOT_BRACKETS)
    if brackets.count(b"[") <= max_depth:
        return False  # no more containers than levels allowed
    for _ in range(max_depth):
        # One pass removes exactly the innermost pairs: a pair closing around one just
        # removed was not a pair in the text this pass scanned.
        inner_removed = brackets.replace(b"[]", b"")
        if not inner_removed:
            return False  # every pair matched within the limit
        if inner_removed == brackets:
            # Unbalanced, so not JSON; but a decoder recurses into every unclosed opener
            # before it finds out.
            return brackets.count(b"[") > max_depth
        brackets = inner_removed
    return True


def _outside_strings(raw: bytes) -> bytes:
    """The text with every string's content left out: escaped backslashes go first, so an
    escaped quote is told from a quote after an escaped backslash; then every other piece
    between quotes is outside a string. (Backslashes outside strings are not JSON anyway.)"""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(unescaped.split(b'"')[0::2])


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
    steps = (str(step).replace("~", "~0").replace("/", "~1") for step in path)
    return "".join(f"/{step}" for step in steps)
