"""The text checks' matches marked in a reply, found as the graders find them.

A reply is an agent's text, never HTML: every character is escaped and only `<mark>` is added.
The marks are found again rather than read from the detail, which quotes only the first match
and only part of it: plain text caselessly through `str.casefold` (as `find_folded` does), a
pattern with the graders' own RE2 compilation and search bound. The marks are capped, so a
reply of a megabyte matching everywhere costs a bounded amount of markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import NamedTuple

from markupsafe import Markup, escape

from agentlasso.domain.checks import Check, OutputContains, OutputNotContains
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.patterns import MAX_SEARCH_COST, compile_pattern, search_cost

TextCheck = OutputContains | OutputNotContains
Span = tuple[int, int]

# Marks shown in one reply; a page of marks is plenty to see what matched and where.
MAX_MARKS = 100
# Characters folded at a time while mapping folded positions back (as agentlasso.grading.folding).
_CHUNK = 64


class MarkedReply(NamedTuple):
    """The reply as HTML with its matches marked, how many marks, and whether more were left."""

    html: Markup
    marks: int
    capped: bool


def checks_that_matched(checks: Sequence[Check], results: Iterable[CheckResult]) -> list[TextCheck]:
    """The text checks whose verdict says their text was found: a passed `Output must contain`,
    a failed `Forbidden in output` (a check not run, or failed for another cause, has none)."""
    found = {
        result.id
        for result in results
        if (result.type, result.status)
        in (("output_contains", "passed"), ("output_not_contains", "failed"))
    }
    return [
        check
        for check in checks
        if isinstance(check, TextCheck) and check.id in found and _ran(check)
    ]


def _ran(check: TextCheck) -> bool:
    """A pattern that does not compile failed with its error; there is no match to show."""
    return not check.regex or compile_pattern(check.value)[0] is not None


def marked_reply(reply: str, checks: Iterable[TextCheck], limit: int = MAX_MARKS) -> MarkedReply:
    """The reply, escaped, with every match of the checks (up to `limit`) in `<mark>`."""
    spans: list[Span] = []
    capped = False
    for check in checks:
        found = list(islice(matches(reply, check), limit + 1))
        capped = capped or len(found) > limit
        spans.extend(found[:limit])
    merged = merge(spans)
    capped = capped or len(merged) > limit
    merged = merged[:limit]
    return MarkedReply(html=marked(reply, merged), marks=len(merged), capped=capped)


def matches(reply: str, check: TextCheck) -> Iterator[Span]:
    """The character spans of the check's matches in the reply, in order, none empty."""
    if check.regex:
        return _pattern_matches(reply, check.value)
    return _text_matches(reply, check.value)


def _text_matches(reply: str, text: str) -> Iterator[Span]:
    """Caseless occurrences, without overlap, mapped back from folded positions."""
    folded, needle = reply.casefold(), text.casefold()
    if not needle:
        return
    mapper = _FoldedPositions(reply, equal_lengths=len(folded) == len(reply))
    start = folded.find(needle)
    while start >= 0:
        end = start + len(needle)
        yield mapper.original(start), mapper.original(end - 1) + 1
        start = folded.find(needle, end)


class _FoldedPositions:
    """Maps increasing positions of casefold(text) to the original characters, in one pass."""

    def __init__(self, text: str, *, equal_lengths: bool) -> None:
        self._text = text
        # Every character folds to one or more: equal lengths mean one to one.
        self._equal = equal_lengths
        self._index = self._position = 0

    def original(self, folded_index: int) -> int:
        """The index of the character whose folded form covers folded_index."""
        if self._equal:
            return folded_index
        text = self._text
        while self._index < len(text):
            step = len(text[self._index : self._index + _CHUNK].casefold())
            if self._position + step > folded_index:
                break
            self._position += step
            self._index += _CHUNK
        while self._index < len(text):
            width = len(text[self._index].casefold())
            if self._position + width > folded_index:
                return self._index
            self._position += width
            self._index += 1
        return len(text)


def _pattern_matches(reply: str, pattern: str) -> Iterator[Span]:
    """The pattern's non-empty matches, searched as the grader searches (RE2, caseless unless
    the pattern says otherwise), and not at all when the grader would not have run it."""
    regex, _error = compile_pattern(pattern)
    encoded = reply.encode("utf-8", "replace")
    if regex is None or search_cost(regex, encoded) > MAX_SEARCH_COST:
        return
    position = characters = 0  # a byte offset, and the characters before it
    while position <= len(encoded):
        match = regex.search(encoded, position)
        if match is None:
            return
        start, end = match.span()
        characters += _characters(encoded[position:start])
        if end > start:
            width = _characters(encoded[start:end])
            yield characters, characters + width
            characters, position = characters + width, end
        else:
            # An empty match marks nothing: go on from the next character, whole.
            following = _next_character(encoded, end)
            characters, position = characters + _characters(encoded[end:following]), following


def _next_character(encoded: bytes, at: int) -> int:
    """The byte offset of the character after the one starting at `at`."""
    following = at + 1
    while following < len(encoded) and encoded[following] & 0xC0 == 0x80:
        following += 1  # a UTF-8 continuation byte: still inside the same character
    return following


def _characters(encoded: bytes) -> int:
    return len(encoded.decode("utf-8", "replace"))


def merge(spans: Iterable[Span]) -> list[Span]:
    """The spans sorted, overlapping or touching ones joined: two checks may mark one text."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def marked(text: str, spans: Sequence[Span]) -> Markup:
    """The text escaped, each span (sorted, disjoint) inside `<mark>`."""
    pieces: list[str] = []
    shown = 0
    for start, end in spans:
        pieces.append(escape(text[shown:start]))
        pieces.append(Markup("<mark>{}</mark>").format(text[start:end]))
        shown = end
    pieces.append(escape(text[shown:]))
    return Markup("").join(pieces)
