"""A word-level diff of two texts, for a person comparing a case's expected output with a reply.

Words are compared, whitespace is kept for display: a line break that moved is not a change,
but the text still reads as it was written. difflib's matcher costs up to the product of the two
lengths, so texts past MAX_WORD_PAIRS are not diffed at all (the caller says so instead).
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

SegmentKind = Literal["equal", "removed", "added"]
# (kind, text): text only in the first text is "removed", only in the second "added".
Segment = tuple[SegmentKind, str]

# Words of one text times words of the other: at this size a diff took at most 15 ms here
# (1,000 words against 1,000, or 100 against 10,000; pathological repeats included).
MAX_WORD_PAIRS = 1_000_000

# A word with the whitespace after it, or leading whitespace on its own.
_TOKEN = re.compile(r"\S+\s*|\s+")


def word_diff(before: str, after: str) -> list[Segment] | None:
    """The segments that turn `before` into `after`, word by word; None when too long to diff."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    if len(old) * len(new) > MAX_WORD_PAIRS:
        return None
    # autojunk (on by default) skips words too frequent to anchor a match: 10 times faster on
    # long prose, and the same segments on the texts measured.
    matcher = difflib.SequenceMatcher(None, _words(old), _words(new))
    segments: list[Segment] = []
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            # The reply's own spacing: it is the text being read.
            _append(segments, "equal", new[new_start:new_end])
            continue
        _append(segments, "removed", old[old_start:old_end])
        _append(segments, "added", new[new_start:new_end])
    return segments


def _words(tokens: list[str]) -> list[str]:
    """The tokens without their whitespace: what is compared."""
    return [token.strip() for token in tokens]


def _append(segments: list[Segment], kind: SegmentKind, tokens: list[str]) -> None:
    """Add the tokens as one segment, joined to the previous one when it is of the same kind."""
    if not tokens:
        return
    text = "".join(tokens)
    if segments and segments[-1][0] == kind:
        segments[-1] = (kind, segments[-1][1] + text)
    else:
        segments.append((kind, text))
