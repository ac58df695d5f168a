"""Users' regular expressions, compiled with RE2 once per distinct pattern, and bounded.

RE2 runs in time linear in the reply, but not in the pattern: when its DFA cannot keep up (a
pattern like `(a|b)*a(a|b){1000}c`) it falls back to an NFA whose time is the program's size
times the reply's length: 17 s for one search of 2 MB measured here. So a pattern is limited in
length and in compiled size, and a search whose worst case (program size x reply bytes) is over
MAX_SEARCH_COST is not run at all; the caller can also bound a whole request's time. Matching is
case-insensitive unless the pattern turns it off inline, e.g. `(?-i)Order`. RE2 has no
backreferences or lookaround, and its `\\b \\w \\d \\s` classes are ASCII only: `\\w` does not
match `é`, so `\\bcafé\\b` cannot match at the `é` end. RE2's case-insensitivity uses simple
Unicode case folding (`É` matches `é`, but `ß` does not match `ss`), unlike plain-text checks.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

# Enough for the distinct patterns of a large run; bounded (each may hold up to
# _MEMORY_BYTES of DFA state) so a stream of unique patterns cannot grow a process's memory.
_CACHE_SIZE = 512
# Per compiled pattern: a program too big for this fails to compile in milliseconds, instead of
# taking 100 ms to build 360,000 instructions (`\pL{300}x`) that the size check then refuses.
_MEMORY_BYTES = 1 << 20
MAX_PATTERN_CHARS = 1_000
MAX_PROGRAM_SIZE = 5_000
# Program instructions x reply bytes: a search's worst case, at about 3 ns a unit measured here
# (5e8 is about 1.5 s). Patterns of up to 500 instructions (realistic ones have tens) run on
# replies of a megabyte, the largest an agent may send by default.
MAX_SEARCH_COST = 500_000_000


def _options() -> Any:
    """RE2 options: case-insensitive, bounded memory, quiet (errors are returned, not logged)."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = _MEMORY_BYTES
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=_CACHE_SIZE)
def compile_pattern(pattern: str) -> tuple[Any, str | None]:
    """The compiled pattern and None, or None and why it cannot be used, in words."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return None, (
            f"the pattern is {len(pattern):,} characters long; at most "
            f"{MAX_PATTERN_CHARS:,} are allowed"
        )
    try:
        regex = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        return None, _error_text(exc)
    except UnicodeEncodeError:
        # A lone surrogate (possible from JSON "\\ud800") cannot be encoded for RE2.
        return None, "the pattern contains a character that is not valid Unicode"
    if regex.programsize > MAX_PROGRAM_SIZE:
        return None, _too_big(regex.programsize)
    return regex, None


def _too_big(size: int | None) -> str:
    """Why a pattern is too big to run; its size when RE2 got far enough to know it."""
    compiled = f"compiles to {size:,} instructions" if size else "compiles to too many instructions"
    return (
        f"the pattern {compiled}; at most {MAX_PROGRAM_SIZE:,} are allowed (use a smaller "
        "repeat count, or a narrower class than \\pL or .)"
    )


def search_cost(regex: Any, encoded_text: bytes) -> int:
    """The worst case of a search, in program instructions times bytes of text."""
    size: int = regex.programsize
    return size * len(encoded_text)


def _error_text(exc: Exception) -> str:
    """RE2 reports errors as bytes; make them text (saying what "too large" means)."""
    message = exc.args[0] if exc.args else exc
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    return _too_big(None) if text.startswith("pattern too large") else text


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
