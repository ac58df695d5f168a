"""output_contains and output_not_contains: caseless text (Unicode folding) or RE2 patterns."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentlasso.domain.checks import Check, OutputContains, OutputNotContains, OutputValidJson
from agentlasso.domain.grades import CheckResult, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case

MB = 1_000_000


def grade_one(check: Check, reply: str | None) -> CheckResult:
    observation = Observation(actual_output=reply, tool_calls=())
    return grade_case(TestCaseContent(input="q", checks=(check,)), observation).check_results[0]


def contains(value: str, *, regex: bool = False) -> OutputContains:
    return OutputContains(id="c1", value=value, regex=regex)


def forbids(value: str, *, regex: bool = False) -> OutputNotContains:
    return OutputNotContains(id="c1", value=value, regex=regex)


@pytest.mark.parametrize(
    ("reply", "value", "found"),
    [
        pytest.param("Die STRASSE ist lang", "straße", True, id="sharp-s-folds-to-ss"),
        pytest.param("die straße", "STRASSE", True, id="ss-finds-sharp-s"),
        pytest.param("DIE STRAẞE", "straße", True, id="capital-sharp-s"),
        pytest.param("Maße", "MASSE", True, id="sharp-s-in-word"),
        pytest.param("ÉCOLE NORMALE", "école", True, id="accented-capital"),
        pytest.param("Ça va", "ÇA", True, id="cedilla"),
        pytest.param("ΟΔΟΣ", "οδος", True, id="greek-final-sigma"),
        pytest.param("the ﬁle", "FILE", True, id="ligature"),
        pytest.param("İSTANBUL", "İstanbul", True, id="turkish-dotted-capital-i-matches-itself"),
        pytest.param("i̇stanbul", "İSTANBUL", True, id="dotted-capital-i-is-i-plus-dot"),
        # Full (non-Turkic) folding maps İ to i + U+0307, so plain i does not find it.
        pytest.param("İstanbul", "istanbul", False, id="dotted-capital-i-is-not-plain-i"),
        pytest.param("ISTANBUL", "istanbul", True, id="dotless-capital-i"),
        # No Unicode normalisation: precomposed and decomposed accents differ.
        pytest.param("cafe\u0301", "café", False, id="no-normalisation"),
        pytest.param("3-5 Business Days", "3-5 BUSINESS days", True, id="ascii-case"),
        pytest.param("", "x", False, id="empty-reply"),
        pytest.param("refund", "refunds", False, id="absent"),
    ],
)
def test_plain_text_matching_folds_case(reply: str, value: str, found: bool) -> None:
    assert grade_one(contains(value), reply).passed is found
    assert grade_one(forbids(value), reply).passed is not found


@pytest.mark.parametrize(
    ("reply", "pattern", "found"),
    [
        pytest.param("REFUND  ISSUED", r"refund\s+issued", True, id="case-insensitive-by-default"),
        pytest.param("order 7", "(?-i)Order", False, id="inline-case-sensitive-no-match"),
        pytest.param("Order 7", "(?-i)Order", True, id="inline-case-sensitive-match"),
        pytest.param("ORDER 7", "(?-i:O)rder", True, id="inline-group-flag"),
        pytest.param("ÉCOLE", "école", True, id="simple-unicode-folding"),
        # RE2 folds simply: ß does not match ss (plain text does).
        pytest.param("STRASSE", "straße", False, id="re2-sharp-s-no-full-folding"),
        # RE2 \b \w \d are ASCII: é is not a word character, ٣ is not a digit.
        pytest.param("un café au lait", r"\bcafé\b", False, id="ascii-word-boundary"),
        pytest.param("٣ items", r"\d", False, id="ascii-digit"),
        pytest.param("card 4111 1111 1111 1111", r"\b(?:\d[ -]?){13,16}\b", True, id="card"),
        pytest.param("", "^$", True, id="empty-reply-matches-empty-pattern"),
        pytest.param("", "x", False, id="empty-reply"),
    ],
)
def test_regular_expressions_use_re2(reply: str, pattern: str, found: bool) -> None:
    assert grade_one(contains(pattern, regex=True), reply).passed is found
    assert grade_one(forbids(pattern, regex=True), reply).passed is not found


@pytest.mark.parametrize(
    ("check", "reply", "detail"),
    [
        pytest.param(
            forbids("guarantee"),
            "Thanks for waiting. Your refund has been issued and should arrive in 3-5 business "
            "days. I guarantee it.",
            'Forbidden "guarantee" found: ...should arrive in 3-5 business days. I guarantee it.',
            id="forbidden-text-excerpt",
        ),
        pytest.param(
            forbids(r"\b(?:\d[ -]?){13,16}\b", regex=True),
            "Grüße! Ihre Karte 4111 1111 1111 1111 ist gesperrt.",
            r'Forbidden pattern "\b(?:\d[ -]?){13,16}\b" matched: '
            "Grüße! Ihre Karte 4111 1111 1111 1111 ist gesperrt.",
            id="forbidden-pattern-excerpt-non-ascii",
        ),
        pytest.param(
            forbids("strasse"),
            "ß" * 100 + " and then the STRAẞE at last, then more words after it for a while.",
            'Forbidden "strasse" found: ...and then the STRAẞE at last, then more words after it '
            "for a...",
            id="excerpt-maps-folded-positions-back",
        ),
        pytest.param(
            forbids("strasse"),
            "ß" * 100 + "STRAẞE" + "ﬃ" * 100,
            'Forbidden "strasse" found: ...' + "ß" * 40 + "STRAẞE" + "ﬃ" * 40 + "...",
            id="excerpt-after-expanding-characters",
        ),
        pytest.param(
            forbids("x*", regex=True),
            "",
            'Forbidden pattern "x*" matched: (the reply is empty).',
            id="empty-match-on-empty-reply",
        ),
        pytest.param(
            forbids("guarantee"),
            "We\nguarantee\tit",
            'Forbidden "guarantee" found: We guarantee it',
            id="excerpt-on-one-line",
        ),
        pytest.param(
            forbids("guarantee"), "fine", 'The reply does not contain "guarantee".', id="ok"
        ),
        pytest.param(
            forbids("g+", regex=True),
            "fine",
            'The reply does not match the pattern "g+".',
            id="ok-pattern",
        ),
        pytest.param(contains("days"), "3 DAYS", 'The reply contains "days".', id="contains"),
        pytest.param(
            contains("d.ys", regex=True),
            "3 DAYS",
            'The reply matches the pattern "d.ys".',
            id="matches",
        ),
        pytest.param(
            contains("3-5 business days"),
            "Your refund is on its way.",
            '"3-5 business days" was not found in the reply: "Your refund is on its way.".',
            id="missing-text",
        ),
        pytest.param(
            contains(r"\d+ days", regex=True),
            "soon",
            r'The pattern "\d+ days" did not match the reply: "soon".',
            id="missing-pattern",
        ),
        pytest.param(
            contains("days"),
            "",
            '"days" was not found in the reply, which is empty.',
            id="missing-in-empty-reply",
        ),
        pytest.param(
            contains("days"),
            None,
            "The reply was not reported, so this check cannot be verified.",
            id="reply-not-reported",
        ),
        pytest.param(
            forbids("days"),
            None,
            "The reply was not reported, so this check cannot be verified.",
            id="forbidden-reply-not-reported-fails",
        ),
    ],
)
def test_details(check: Check, reply: str | None, detail: str) -> None:
    assert grade_one(check, reply).detail == detail


def test_a_long_reply_is_never_echoed_whole() -> None:
    reply = "word " * 200_000
    missing = grade_one(contains("refund"), reply)
    assert missing.detail == f'"refund" was not found in the reply: "{reply[:80]}...".'
    matched = grade_one(forbids("w.*", regex=True), reply)
    assert len(matched.detail) < 300
    assert matched.detail.startswith('Forbidden pattern "w.*" matched: word word')
    assert matched.detail.endswith("...")


def test_a_long_value_is_shortened_in_the_detail() -> None:
    value = "v" * 5_000
    assert (
        grade_one(contains(value), "x").detail
        == f'"{"v" * 80}..." was not found in the reply: "x".'
    )


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        ("(?=x)", "invalid perl operator: (?="),
        ("(a", "missing ): (a"),
        ("(.*a){1001}", "invalid repetition size: {1001}"),
        (r"(a)\1", r"invalid escape sequence: \1"),
        ("\ud800", "the pattern contains a character that is not valid Unicode"),
    ],
)
def test_an_invalid_pattern_fails_only_its_own_check(pattern: str, error: str) -> None:
    content = TestCaseContent(
        input="q",
        checks=(
            OutputContains(id="c1", value=pattern, regex=True),
            OutputNotContains(id="c2", value=pattern, regex=True),
            OutputContains(id="c3", value="fine"),
            OutputValidJson(id="c4", severity="minor"),
        ),
    )
    result = grade_case(content, Observation(actual_output="fine", tool_calls=()))
    expected = f'Invalid regular expression "{pattern}": {error}.'
    assert [(r.id, r.status, r.detail) for r in result.check_results[:2]] == [
        ("c1", "failed", expected),
        ("c2", "failed", expected),
    ]
    assert [r.status for r in result.check_results[2:]] == ["passed", "failed"]


@pytest.mark.parametrize(
    ("pattern", "reply"),
    [
        ("(x+x+)+y", "x" * MB),
        ("(a|aa)*b", "a" * MB),
        ("(.*a){20}", "a" * MB),
        (r"^(\w+\s?)*$", "word " * (MB // 5) + "!"),
    ],
)
def test_pathological_patterns_run_in_linear_time(pattern: str, reply: str) -> None:
    started = time.perf_counter()
    result = grade_one(forbids(pattern, regex=True), reply)
    # A backtracking engine takes hours here; RE2 takes milliseconds. The bound is generous.
    assert time.perf_counter() - started < 10.0
    assert result.status in ("passed", "failed")


def test_a_reply_with_a_lone_surrogate_still_matches() -> None:
    reply = "\ud800 card 4111 1111 1111 1111 end"
    result = grade_one(forbids(r"(?:\d{4} ){3}\d{4}", regex=True), reply)
    assert result.detail == (
        'Forbidden pattern "(?:\\d{4} ){3}\\d{4}" matched: \ud800 card 4111 1111 1111 1111 end'
    )


# Bounds on users' patterns: the hardening review's first defect was one pattern, `\pL{300}x`,
# costing about 11 s per search of a 2 MB reply and 120 ms to compile.


@pytest.mark.parametrize("check", [contains, forbids])
def test_a_pattern_over_a_thousand_characters_fails_saying_so(check: Callable[..., Check]) -> None:
    result = grade_one(check("a" * 1001, regex=True), "aaa")
    assert (result.status, result.passed) == ("failed", False)
    assert result.detail.endswith(
        "the pattern is 1,001 characters long; at most 1,000 are allowed."
    )


@pytest.mark.parametrize(
    ("pattern", "size"),
    [(r"\pL{300}x", "too many instructions"), (r"\pL{50}x", "59,855 instructions")],
)
def test_a_pattern_compiling_to_a_huge_program_fails_at_once(pattern: str, size: str) -> None:
    started = time.perf_counter()
    result = grade_one(forbids(pattern, regex=True), "no letters here")
    # Compiling the 360,000-instruction program took 110 ms: it is now refused while building.
    assert time.perf_counter() - started < 0.1
    assert result.status == "failed"
    assert f"compiles to {size}; at most 5,000 are allowed" in result.detail


@pytest.mark.parametrize("check", [contains, forbids])
def test_a_search_whose_worst_case_is_too_costly_is_not_run(check: Callable[..., Check]) -> None:
    # RE2's NFA fallback takes program size x reply bytes: 17 s measured for these two.
    pattern, reply = r"(a|b)*a(a|b){1000}c", "ab" * MB
    started = time.perf_counter()
    result = grade_one(check(pattern, regex=True), reply)
    assert time.perf_counter() - started < 0.5
    assert (result.status, result.passed) == ("not_graded", None)
    assert result.detail == (
        "Not run: the pattern (3,009 instructions) over this reply (2,000,000 bytes) could take "
        "longer than a search may; a simpler pattern would run."
    )


def test_the_same_pattern_runs_on_a_reply_it_can_afford() -> None:
    result = grade_one(forbids(r"(a|b)*a(a|b){1000}c", regex=True), "ab" * 1000)
    assert result.status == "passed"


def test_patterns_not_run_once_the_time_is_spent_are_not_graded_and_plain_text_still_is() -> None:
    checks = (
        OutputContains(id="c1", value="refund"),
        OutputContains(id="c2", value="ref.nd", regex=True),
        OutputNotContains(id="c3", value="guarantee"),
    )
    content = TestCaseContent(input="q", checks=checks)
    observation = Observation(actual_output="your refund", tool_calls=())
    result = grade_case(content, observation, out_of_time=lambda: True)
    assert [(r.id, r.status) for r in result.check_results] == [
        ("c1", "passed"),
        ("c2", "not_graded"),
        ("c3", "passed"),
    ]
    assert result.check_results[1].detail == (
        "Not run: the time for grading this request ran out before this check."
    )
    assert result.pass_fail is False and result.partially_graded is True
