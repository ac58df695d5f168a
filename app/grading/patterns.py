"""Users' regular expressions, compiled with RE2 once per distinct pattern.

RE2 runs in time linear in the reply, so no pattern can stall a worker. Matching is
case-insensitive unless the pattern turns it off inline, e.g. `(?-i)Order`. RE2 has no
backreferences or lookaround, and its `\\b \\w \\d \\s` classes are ASCII only: `\\w` does not
match `é`, so `\\bcafé\\b` cannot match at the `é` end. RE2's case-insensitivity uses simple
Unicode case folding (`É` matches `é`, but `ß` does not match `ss`), unlike plain-text checks.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

# Enough for every distinct pattern of a large run; bounded so a stream of unique patterns
# cannot grow a worker's memory without limit.
_CACHE_SIZE = 4096


def _options() -> Any:
    """RE2 options: case-insensitive, quiet (compile errors are returned, not logged)."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=_CACHE_SIZE)
def compile_pattern(pattern: str) -> tuple[Any, str | None]:
    """The compiled pattern and None, or None and the compile error in words."""
    try:
        return re2.compile(pattern, _OPTIONS), None
    except re2.error as exc:
        return None, _error_text(exc)
    except UnicodeEncodeError:
        # A lone surrogate (possible from JSON "\\ud800") cannot be encoded for RE2.
        return None, "the pattern contains a character that is not valid Unicode"


def _error_text(exc: Exception) -> str:
    """RE2 reports errors as bytes; make them text."""
    message = exc.args[0] if exc.args else exc
    if isinstance(message, bytes):
        return message.decode("utf-8", errors="replace")
    return str(message)


def regex_compile_error(pattern: str) -> str | None:
    """The compile error for a pattern, or None when it compiles (for write-time warnings)."""
    return compile_pattern(pattern)[1]


def search(regex: Any, encoded_text: bytes) -> tuple[int, int] | None:
    """The character span of the first match in UTF-8 encoded text, or None."""
    # Searching bytes skips the wrapper's per-call encoding and offset decoding (a third of
    # its cost); offsets are converted to characters only when there is a match to quote.
    match = regex.search(encoded_text)
    if match is None:
        return None
    start, end = match.span()
    start_char = len(encoded_text[:start].decode("utf-8", "replace"))
    return start_char, start_char + len(encoded_text[start:end].decode("utf-8", "replace"))
