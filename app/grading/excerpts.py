"""Short quotes of user and agent text for details: a long reply is never echoed whole."""

from __future__ import annotations

from collections.abc import Sequence

ELLIPSIS = "..."
# Characters of context shown on each side of a match.
CONTEXT_CHARS = 40
# Longest part of a match quoted; a regex like `.*` can match a whole reply.
MATCH_CHARS = 120
# Longest user value (a forbidden text, a pattern, a tool name) quoted in a detail.
VALUE_CHARS = 80
# Longest start of a reply quoted when the expected text is missing.
REPLY_CHARS = 80
# Most tool names listed in a detail.
NAMES_SHOWN = 20

_WHITESPACE = str.maketrans(dict.fromkeys("\n\r\t\v\f\x85\u2028\u2029", " "))


def one_line(text: str) -> str:
    """Text with line breaks and tabs as spaces, so a detail stays on one line."""
    return text.translate(_WHITESPACE)


def shorten(text: str, limit: int) -> str:
    """Text cut to about `limit` characters, with an ellipsis when cut."""
    if len(text) <= limit:
        # isprintable is false for line breaks and tabs; most names and values skip translate.
        return text if text.isprintable() else one_line(text)
    return one_line(text[:limit]) + ELLIPSIS


def quoted(value: str, limit: int = VALUE_CHARS) -> str:
    """A user value in double quotes, shortened."""
    return f'"{shorten(value, limit)}"'


def around(text: str, start: int, end: int) -> str:
    """The match text[start:end] with about 40 characters either side and ellipses."""
    before_start = _word_start(text, max(0, start - CONTEXT_CHARS), start)
    after_end = _word_end(text, end, min(len(text), end + CONTEXT_CHARS))
    if end - start > MATCH_CHARS:
        middle = text[start : start + MATCH_CHARS] + ELLIPSIS
    else:
        middle = text[start:end]
    prefix = ELLIPSIS if before_start > 0 else ""
    suffix = ELLIPSIS if after_end < len(text) else ""
    return one_line(prefix + text[before_start:start] + middle + text[end:after_end] + suffix)


def _word_start(text: str, cut: int, start: int) -> int:
    """Move a cut inside a word forward to the next word, so the quote starts cleanly."""
    if cut == 0 or text[cut - 1].isspace():
        return cut
    space = text.find(" ", cut, start)
    return cut if space < 0 else space + 1


def _word_end(text: str, end: int, cut: int) -> int:
    """Move a cut inside a word back to the end of the previous word."""
    if cut == len(text) or text[cut].isspace():
        return cut
    space = text.rfind(" ", end, cut)
    return cut if space < 0 else space


def name_list(names: Sequence[str], separator: str = ", ") -> str:
    """Names joined for a detail: the first 20, each shortened, then how many more."""
    shown = names[:NAMES_SHOWN]
    joined = separator.join(shown)
    # Typical names are short and printable: check them all at C speed before going one by one.
    if max(map(len, shown), default=0) > VALUE_CHARS or not joined.isprintable():
        joined = separator.join(shorten(name, VALUE_CHARS) for name in shown)
    hidden = len(names) - NAMES_SHOWN
    return f"{joined} and {hidden} more" if hidden > 0 else joined


def count_noun(count: int, singular: str, plural: str | None = None) -> str:
    """`1 case`, `3 cases`."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"
