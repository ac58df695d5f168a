"""Caseless text matching with Unicode full case folding (`str.casefold`).

Folding can lengthen text (`ß` -> `ss`, `ﬃ` -> `ffi`, `İ` -> `i` + combining dot), so a
position in the folded text is mapped back to the original before it is quoted. No Unicode
normalisation is applied: a precomposed `é` and `e` + combining accent are different text.
"""

from __future__ import annotations


def find_folded(text: str, folded_text: str, needle: str) -> tuple[int, int] | None:
    """The span in `text` of the first caseless occurrence of needle, or None."""
    folded_needle = needle.casefold()
    start = folded_text.find(folded_needle)
    if start < 0:
        return None
    return original_span(text, folded_text, start, start + len(folded_needle))


def original_span(text: str, folded_text: str, start: int, end: int) -> tuple[int, int]:
    """Map a span of casefold(text) back to the span of the original characters covering it."""
    # Every character folds to one or more characters, so equal lengths mean one to one.
    if len(folded_text) == len(text):
        return start, end
    original_start = _original_index(text, start)
    if end <= start:
        return original_start, original_start
    return original_start, _original_index(text, end - 1) + 1


# Characters folded at a time while skipping ahead: fewer Python steps on long replies.
_CHUNK = 64


def _original_index(text: str, folded_index: int) -> int:
    """The index of the character whose folded form covers folded_index (len(text) past the end)."""
    index = position = 0
    while index < len(text):
        step = len(text[index : index + _CHUNK].casefold())
        if position + step > folded_index:
            break
        position += step
        index += _CHUNK
    for char in text[index : index + _CHUNK]:
        position += len(char.casefold())
        if position > folded_index:
            return index
        index += 1
    return len(text)
