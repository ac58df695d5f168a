"""Excerpts, caseless search with position mapping, and the RE2 pattern cache."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlasso.grading import regex_compile_error
from agentlasso.grading.excerpts import around, count_noun, name_list, quoted, shorten
from agentlasso.grading.folding import find_folded, original_span
from agentlasso.grading.patterns import _error_text, compile_pattern, search


@pytest.mark.parametrize(
    ("text", "span", "excerpt"),
    [
        pytest.param(
            "short guarantee here", (6, 15), "short guarantee here", id="whole-short-text"
        ),
        pytest.param(
            "a" * 100 + "X" + "b" * 100,
            (100, 101),
            "..." + "a" * 40 + "X" + "b" * 40 + "...",
            id="forty-either-side",
        ),
        pytest.param(
            "one two three four five six seven eight nine ten MATCH eleven twelve thirteen "
            "fourteen fifteen sixteen",
            (49, 54),
            "...four five six seven eight nine ten MATCH eleven twelve thirteen fourteen "
            "fifteen...",
            id="cut-at-word-boundaries",
        ),
        pytest.param(
            "x" * 10 + "M" * 500 + "y" * 10,
            (10, 510),
            "x" * 10 + "M" * 120 + "..." + "y" * 10,
            id="long-match-cut",
        ),
        pytest.param(
            "line\r\nbreaks\tand\u2028more", (0, 4), "line  breaks and more", id="one-line"
        ),
    ],
)
def test_around(text: str, span: tuple[int, int], excerpt: str) -> None:
    assert around(text, *span) == excerpt


def test_shorten_quoted_and_lists() -> None:
    assert shorten("abc", 3) == "abc"
    assert shorten("abcd", 3) == "abc..."
    assert shorten("a\nb", 5) == "a b"
    assert quoted("x" * 100) == '"' + "x" * 80 + '..."'
    assert name_list(["a", "b"]) == "a, b"
    assert name_list([]) == ""
    assert name_list(["a\tb", "c" * 90]) == "a b, " + "c" * 80 + "..."
    assert name_list([str(n) for n in range(25)], " -> ").endswith("18 -> 19 and 5 more")
    assert (
        count_noun(1, "case"),
        count_noun(2, "case"),
        count_noun(0, "criterion", "criteria"),
    ) == (
        "1 case",
        "2 cases",
        "0 criteria",
    )


@pytest.mark.parametrize(
    ("text", "needle", "span"),
    [
        ("Die STRAẞE", "strasse", (4, 10)),
        ("Maße", "ss", (2, 3)),
        ("xßy", "sy", (1, 3)),
        ("ßa", "a", (1, 2)),
        ("aß", "", (0, 0)),
        ("İstanbul", "i̇stan", (0, 5)),
        ("ﬃ office", "OFFICE", (2, 8)),
        ("plain ascii", "ASCII", (6, 11)),
        ("ßß", "x", None),
    ],
)
def test_find_folded_maps_back_to_the_original(
    text: str, needle: str, span: tuple[int, int] | None
) -> None:
    assert find_folded(text, text.casefold(), needle) == span


def test_an_empty_span_at_the_end_maps_to_the_end() -> None:
    assert original_span("aß", "ass", 3, 3) == (2, 2)


alphabets = st.text(alphabet="aßẞİﬃΣςé xS", max_size=300)


@given(alphabets, st.data())
def test_mapped_spans_cover_exactly_the_folded_span(text: str, data: st.DataObject) -> None:
    folded = text.casefold()
    start = data.draw(st.integers(0, len(folded)))
    end = data.draw(st.integers(start, len(folded)))
    first, last = original_span(text, folded, start, end)
    # The original characters [first, last) fold to a superset of folded[start:end] and no
    # smaller run of characters does.
    before = len(text[:first].casefold())
    assert before <= start
    if end == start:
        # An empty span maps to the start of the character it falls in (or the very end).
        assert first == last
        assert first == len(text) or len(text[: first + 1].casefold()) > start
        return
    through = len(text[:last].casefold())
    assert end <= through
    assert len(text[: first + 1].casefold()) > start
    assert len(text[: last - 1].casefold()) < end


@given(st.text(max_size=200))
def test_casefold_is_per_character(text: str) -> None:
    # The position mapping relies on this property of str.casefold.
    assert "".join(char.casefold() for char in text) == text.casefold()


def test_patterns_are_compiled_once() -> None:
    compile_pattern.cache_clear()
    first = compile_pattern(r"refund\s+\d+")
    second = compile_pattern(r"refund\s+\d+")
    assert first[0] is second[0]
    assert compile_pattern.cache_info().hits == 1


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        (r"\d+", None),
        ("(?-i)Order", None),
        ("(?=x)", "invalid perl operator: (?="),
        ("[z-a]", "invalid character class range: z-a"),
    ],
)
def test_regex_compile_error(pattern: str, error: str | None) -> None:
    assert regex_compile_error(pattern) == error


def test_search_returns_character_spans_in_utf8_text() -> None:
    regex, _ = compile_pattern("straße")
    text = "Grüße aus der STRAßE"
    assert search(regex, text.encode()) == (14, 20)
    assert search(regex, b"nothing") is None


@pytest.mark.parametrize(
    ("exception", "text"),
    [
        (ValueError(b"missing ): (a"), "missing ): (a"),
        (ValueError(b"bad \xff byte"), "bad \ufffd byte"),
        # Older and newer google-re2 releases may word errors as text; they pass through.
        (ValueError("missing ): (a"), "missing ): (a"),
        (ValueError(), ""),
    ],
)
def test_compile_errors_become_text(exception: Exception, text: str) -> None:
    assert _error_text(exception) == text


def test_re2s_own_too_large_error_says_what_the_limit_is() -> None:
    text = _error_text(ValueError(b"pattern too large - compile failed"))
    assert text.startswith("the pattern compiles to too many instructions; at most 5,000")
