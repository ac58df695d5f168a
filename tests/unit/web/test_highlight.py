"""The text checks' matches marked in the reply: found as the graders find them, escaped."""

from __future__ import annotations

import pytest

from agentlasso.domain.checks import Check, OutputContains, OutputNotContains, ToolCalled
from agentlasso.domain.grades import CheckResult, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case
from agentlasso.web.highlight import checks_that_matched, marked, marked_reply, merge

FORBIDDEN = OutputNotContains(id="no-promise", value="guarantee")


@pytest.mark.parametrize(
    ("reply", "check", "shown"),
    [
        (
            "I GUARANTEE it, guarantee!",
            FORBIDDEN,
            "I <mark>GUARANTEE</mark> it, <mark>guarantee</mark>!",
        ),
        # Caseless as str.casefold: ß folds to ss, and the mark covers the original letters.
        ("Die Straße ist da.", OutputContains(id="s", value="STRASSE"),
         "Die <mark>Straße</mark> ist da."),
        ("ﬃ then guarantee", FORBIDDEN, "ﬃ then <mark>guarantee</mark>"),
        # Regular expressions are RE2's, caseless unless the pattern turns it off.
        ("Refund in 3-5 days, 2-4 DAYS", OutputContains(id="d", value=r"\d-\d days", regex=True),
         "Refund in <mark>3-5 days</mark>, <mark>2-4 DAYS</mark>"),
        ("Order order", OutputContains(id="o", value="(?-i)order", regex=True),
         "Order <mark>order</mark>"),
        ("é and é", OutputContains(id="e", value="é", regex=True),
         "<mark>é</mark> and <mark>é</mark>"),
        # An empty match marks nothing, and the search still ends.
        ("abc", OutputContains(id="x", value="x*", regex=True), "abc"),
    ],
)  # fmt: skip
def test_every_match_is_marked(reply: str, check: OutputContains, shown: str) -> None:
    assert str(marked_reply(reply, [check]).html) == shown


def test_the_reply_is_escaped_and_only_marks_are_added() -> None:
    reply = '<script>alert("guarantee")</script> & guarantee'
    html = str(marked_reply(reply, [FORBIDDEN]).html)
    assert html == (
        "&lt;script&gt;alert(&#34;<mark>guarantee</mark>&#34;)&lt;/script&gt; &amp; "
        "<mark>guarantee</mark>"
    )


def test_a_check_text_that_looks_like_html_is_escaped_inside_the_mark() -> None:
    check = OutputContains(id="tag", value="<b>")
    assert str(marked_reply("bold <B> text", [check]).html) == "bold <mark>&lt;B&gt;</mark> text"


def test_marks_are_capped_and_the_cap_is_said() -> None:
    shown = marked_reply("guarantee " * 500, [FORBIDDEN], limit=100)
    assert shown.marks == 100 and shown.capped
    assert str(shown.html).count("<mark>") == 100
    few = marked_reply("guarantee " * 3, [FORBIDDEN], limit=100)
    assert few.marks == 3 and not few.capped


def test_overlapping_matches_of_two_checks_are_one_mark() -> None:
    checks = [FORBIDDEN, OutputNotContains(id="g", value="guar")]
    assert str(marked_reply("a guarantee", checks).html) == "a <mark>guarantee</mark>"
    assert merge([(5, 9), (0, 2), (1, 3), (9, 10)]) == [(0, 3), (5, 10)]
    assert str(marked("a<b", [])) == "a&lt;b"


def grade(checks: list[Check], reply: str) -> tuple[CheckResult, ...]:
    """The checks' results on this reply, graded as a run grades."""
    content = TestCaseContent(input="q", checks=tuple(checks))
    observation = Observation(actual_output=reply, tool_calls=())
    return grade_case(content, observation).check_results


def test_only_checks_whose_verdict_says_they_found_their_text_are_marked() -> None:
    wanted = OutputContains(id="wanted", value="refund")
    missing = OutputContains(id="missing", value="delay")
    allowed = OutputNotContains(id="allowed", value="cancel")
    broken = OutputContains(id="broken", value="(", regex=True)
    tool = ToolCalled(id="tool", tool="orders.cancel")
    checks: list[Check] = [wanted, missing, FORBIDDEN, allowed, broken, tool]
    results = grade(checks, "Your refund, I guarantee it.")
    assert checks_that_matched(checks, results) == [wanted, FORBIDDEN]
