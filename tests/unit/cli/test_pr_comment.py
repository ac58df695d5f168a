"""The pull-request comment, rendered with a real Markdown library and read back as HTML."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from agentlasso.cli import pr_comment
from agentlasso.cli.pr_comment import (
    ComparedCase,
    ComparisonSummary,
    FailedCheck,
    render_comment,
    write_comment_file,
)
from agentlasso.client import BucketCounts
from agentlasso.domain.checks import PRODUCT_NAMES

RUN_URL = "https://lasso.example/runs/run-2"
# What the comment itself may produce; anything else came from a user's text.
ALLOWED_TAGS = {
    "h2", "h3", "p", "a", "strong", "code", "table", "thead", "tbody", "tr", "th", "td",
    "ul", "li", "details", "summary",
}  # fmt: skip
HOSTILE = [
    "a | b | c",
    "**bold** _em_ ~~gone~~",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "`code` and ``` fence",
    "line one\nline two\n\n| x | y |\n|---|---|\n| 1 | 2 |",
    "click ](https://evil.example) [here](https://evil.example) ![i](https://evil.example/i.png)",
    "<https://evil.example> https://evil.example www.evil.example",
    "# heading\n- item\n> quote\n1. one",
    "- starts like a list",
    "1) starts like an ordered list",
    "&lt;b&gt; &amp; \\*",
    "trailing backslash \\",
    "<details><summary>fake</summary>",
    "</details></li></ul>",
    "[x]: https://evil.example",
    "\u202eevil\u202c and \x1b[31m",
]


def make_case(
    index: int, bucket: str = "new_failure", *, card: bool = True, **changes: object
) -> ComparedCase:
    case_id = f"case-{index}"
    case = ComparedCase(
        test_case_id=case_id,
        bucket=bucket,
        description=f"Refund order {index} when the customer asks",
        input_preview=f"Please refund order {index}",
        failed_checks=[
            FailedCheck(
                id="c1", type="tool_called", severity="error", detail="stripe.refund not called"
            ),
            FailedCheck(id="c2", type="llm_judge", severity="warning", detail="Not polite."),
        ]
        if bucket != "fixed"
        else [],
        card_url=f"{RUN_URL}/cases/{case_id}" if card else None,
        revision_changed=False,
    )
    return msgspec.structs.replace(case, **changes)


def make_summary(**changes: object) -> ComparisonSummary:
    summary = ComparisonSummary(
        run_id="run-2",
        baseline_run_id="run-1",
        run_url=RUN_URL,
        gate_passed=False,
        gate_reason="2 cases are new failures",
        pass_rate=0.875,
        pass_threshold=0.9,
        counts=BucketCounts(
            new_failure=2,
            fixed=1,
            still_failing=3,
            still_passing=10,
            new_case=1,
            removed_case=0,
            flaky=1,
        ),
        new_failures=[make_case(1), make_case(2)],
        others={
            "still_failing": [make_case(i, "still_failing") for i in (3, 4, 5)],
            "fixed": [make_case(6, "fixed")],
            "new_case": [make_case(7, "new_case")],
            "flaky": [make_case(8, "flaky")],
        },
        truncated_from={},
    )
    return msgspec.structs.replace(summary, **changes)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def descendants(self) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                found += [child, *child.descendants()]
        return found

    def find_all(self, tag: str) -> list[Node]:
        return [node for node in self.descendants() if node.tag == tag]

    def kids(self, tag: str) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node) and c.tag == tag]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def rendered(markdown: str) -> Node:
    html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    builder = TreeBuilder()
    builder.feed(html.render(markdown))
    builder.close()
    assert builder.stack == [builder.root], "an element was left open"
    return builder.root


def count_rows(page: Node) -> dict[str, str]:
    (table,) = page.find_all("table")
    rows = table.find_all("tr")[1:]
    return {row.kids("td")[0].text(): row.kids("td")[1].text() for row in rows}


def new_failure_items(page: Node) -> list[Node]:
    """The top-level items of the list after the "New failures" heading."""
    top = page.children
    heading = next(i for i, c in enumerate(top) if isinstance(c, Node) and c.tag == "h3")
    listing = next(c for c in top[heading:] if isinstance(c, Node) and c.tag == "ul")
    return listing.kids("li")


def sections(page: Node) -> dict[str, Node]:
    return {d.kids("summary")[0].text(): d for d in page.find_all("details")}


def hrefs(page: Node) -> list[str | None]:
    return [a.attrs.get("href") for a in page.find_all("a")]


def test_the_heading_gives_the_verdict_in_words_the_reason_and_the_baseline() -> None:
    page = rendered(render_comment(make_summary()))
    (heading,) = page.find_all("h2")
    assert "gate failed" in heading.text()
    assert "2 cases are new failures" in heading.text()
    assert "baseline run run-1" in page.text()
    assert "87.5%" in page.text() and "threshold 90.0%" in page.text()
    assert RUN_URL in hrefs(page)

    passed = rendered(render_comment(make_summary(gate_passed=True, gate_reason=None)))
    assert passed.find_all("h2")[0].text().endswith("AgentLasso gate passed")


def test_without_a_baseline_the_comment_says_every_case_is_new() -> None:
    summary = make_summary(baseline_run_id=None, new_failures=[], counts=only_new_cases(3))
    text = rendered(render_comment(summary)).text()
    assert "No baseline: every case is new." in text
    assert "Nothing can be a new failure without a baseline." in text


def test_a_table_gives_every_bucket_count_in_words() -> None:
    counts = BucketCounts(
        new_failure=5_000, fixed=12, still_failing=3, still_passing=94_000, new_case=7,
        removed_case=2, flaky=1,
    )  # fmt: skip
    rows = count_rows(rendered(render_comment(make_summary(counts=counts))))
    assert rows == {
        "New failures": "5,000", "Fixed": "12", "Still failing": "3",
        "Still passing": "94,000", "New cases": "7", "Removed cases": "2", "Flaky": "1",
    }  # fmt: skip


def test_each_new_failure_links_to_its_card_with_its_failed_checks() -> None:
    items = new_failure_items(rendered(render_comment(make_summary())))
    assert len(items) == 2
    for index, item in zip((1, 2), items, strict=True):
        (link,) = item.kids("a")
        assert link.attrs["href"] == f"{RUN_URL}/cases/case-{index}"
        assert link.text() == f"Refund order {index} when the customer asks"
        assert f"case-{index}" in [code.text() for code in item.kids("code")]
        checks = [li.text() for li in item.kids("ul")[0].kids("li")]
        assert checks == [
            "Tool must be called (error, check c1): stripe.refund not called",
            "AI judge: meets a criterion (warning, check c2): Not polite.",
        ]
        assert "edited since the baseline" not in item.text()


def test_a_case_without_a_description_is_named_by_the_start_of_its_input() -> None:
    case = make_case(1, description=None, input_preview="word " * 100)
    (item,) = new_failure_items(rendered(render_comment(make_summary(new_failures=[case]))))
    name = item.kids("a")[0].text()
    assert name.startswith("word word") and name.endswith("…")
    assert len(name) <= 80


def test_a_conversations_failed_turn_check_is_named_by_its_turn() -> None:
    checks = [
        FailedCheck(id="c3", type="output_contains", severity="critical",
                    detail='"1234" not found', turn=3),
        FailedCheck(id="c4", type="tool_not_called", severity="critical",
                    detail="orders.cancel was called"),
    ]  # fmt: skip
    case = make_case(1, description=None, input_preview="My order 1234 never came.")
    case = msgspec.structs.replace(case, failed_checks=checks)
    (item,) = new_failure_items(rendered(render_comment(make_summary(new_failures=[case]))))
    assert item.kids("a")[0].text() == "My order 1234 never came."
    shown = [li.text() for li in item.kids("ul")[0].kids("li")]
    # A turn's check says which turn; the conversation's own checks have none to say.
    assert shown == [
        'turn 3: Output must contain (critical, check c3): "1234" not found',
        "Tool must NOT be called (critical, check c4): orders.cancel was called",
    ]


def test_an_edited_case_is_marked() -> None:
    case = make_case(1, revision_changed=True)
    (item,) = new_failure_items(rendered(render_comment(make_summary(new_failures=[case]))))
    assert "(the case was edited since the baseline)" in item.text()


def test_a_check_type_the_client_does_not_know_is_shown_by_its_type() -> None:
    check = FailedCheck(id="c9", type="output_is_haiku", severity="error", detail="no")
    case = make_case(1, failed_checks=[check])
    (item,) = new_failure_items(rendered(render_comment(make_summary(new_failures=[case]))))
    assert "output_is_haiku (error, check c9): no" in item.text()


def test_the_other_buckets_are_collapsed_sections_with_their_cases() -> None:
    page = rendered(render_comment(make_summary()))
    found = sections(page)
    assert list(found) == [
        "Still failing (3)", "New cases that fail (1)", "Flaky (1)", "Fixed (1)",
    ]  # fmt: skip
    still_failing = found["Still failing (3)"].find_all("li")
    assert [li.kids("a")[0].attrs["href"] for li in still_failing] == [
        f"{RUN_URL}/cases/case-{i}" for i in (3, 4, 5)
    ]
    assert still_failing[0].text().endswith(": Tool must be called, AI judge: meets a criterion")
    assert found["Fixed (1)"].find_all("li")[0].text().endswith("case-6")


def test_a_bucket_listed_in_part_says_how_many_more_there_are() -> None:
    summary = make_summary(truncated_from={"still_failing": 40, "new_failure": 9})
    page = rendered(render_comment(summary))
    still_failing = sections(page)["Still failing (40)"].find_all("li")
    assert still_failing[-1].text() == "and 37 more cases: see the run page"
    assert new_failure_items(page)[-1].text() == "and 7 more new failures: see the run page"
    assert still_failing[-1].kids("a")[0].attrs["href"] == RUN_URL


def test_without_urls_there_are_no_links() -> None:
    summary = make_summary(
        run_url=None,
        new_failures=[make_case(1, card=False)],
        others={"still_failing": [make_case(3, "still_failing", card=False)]},
        truncated_from={"still_failing": 5},
    )
    page = rendered(render_comment(summary))
    assert page.find_all("a") == []
    assert sections(page)["Still failing (5)"].find_all("li")[-1].text() == (
        "and 4 more cases: see the run page"
    )


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "//evil.example"])
def test_a_url_that_is_not_http_is_not_a_link(url: str) -> None:
    summary = make_summary(run_url=url, new_failures=[make_case(1, card_url=url)], others={})
    assert rendered(render_comment(summary)).find_all("a") == []


def test_a_url_cannot_end_its_link_early() -> None:
    card = f"{RUN_URL}/cases/a b)(c<d>\\e"
    summary = make_summary(new_failures=[make_case(1, card_url=card)], others={})
    (item,) = new_failure_items(rendered(render_comment(summary)))
    assert item.kids("a")[0].attrs["href"] == f"{RUN_URL}/cases/a%20b%29%28c%3Cd%3E%5Ce"


def assert_renders_as_text(summary: ComparisonSummary, expected_items: int) -> Node:
    """The comment's own structure, whatever the user's text: the tags it makes, its links,
    seven table rows, one list item per new failure."""
    page = rendered(render_comment(summary))
    assert {node.tag for node in page.descendants()} <= ALLOWED_TAGS
    allowed_links = {RUN_URL} | {
        case.card_url for case in summary.new_failures if case.card_url is not None
    }
    allowed_links |= {c.card_url for cs in summary.others.values() for c in cs if c.card_url}
    assert set(hrefs(page)) <= allowed_links
    assert len(page.find_all("img")) == 0
    assert len(count_rows(page)) == 7
    assert len(page.find_all("h2")) == 1 and len(page.find_all("h3")) == 1
    assert len(new_failure_items(page)) == expected_items
    return page


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_users_text_anywhere_renders_as_text(hostile: str) -> None:
    check = FailedCheck(id=hostile, type=hostile, severity=hostile, detail=hostile)
    case = make_case(
        1, test_case_id=hostile, description=hostile, input_preview=hostile, failed_checks=[check]
    )
    nameless = make_case(2, description=None, input_preview=hostile, card=False)
    summary = make_summary(
        gate_reason=hostile,
        run_id=hostile,
        baseline_run_id=hostile,
        new_failures=[case, nameless],
        others={"still_failing": [case], hostile: [nameless]},
    )
    page = assert_renders_as_text(summary, expected_items=2)
    first, second = new_failure_items(page)
    shown = " ".join(re.sub("[\x00-\x1f\u202a-\u202e]", " ", hostile).split())
    name = first.kids("a")[0].text().replace("\u2060", "")
    assert name == (shown if len(shown) <= 80 else shown[:79].rstrip() + "…")
    assert len(first.kids("ul")[0].kids("li")) == 1
    assert second.find_all("a") == []


def test_a_users_text_mentions_nobody_and_links_nothing_by_itself() -> None:
    text = "ask @support-team about #12 at https://evil.example or www.evil.example \u202eusd"
    summary = make_summary(new_failures=[make_case(1, description=text, card=False)])
    shown = rendered(render_comment(summary)).text()
    for autolinked in ("@support", "#12", "https://", "www.", "\u202e"):
        assert autolinked not in shown
    assert shown.count("\u2060") == 4  # a word joiner, invisible, after @, #, : and www


@settings(max_examples=150, deadline=None)
@given(description=st.text(max_size=200), detail=st.text(max_size=300))
def test_any_text_keeps_the_comments_structure(description: str, detail: str) -> None:
    check = FailedCheck(id="c1", type="output_contains", severity="error", detail=detail)
    case = make_case(1, description=description, failed_checks=[check])
    assert_renders_as_text(make_summary(new_failures=[case, make_case(2)]), expected_items=2)


def big_summary(new_failures: int = 5_000, cases: int = 100_000) -> ComparisonSummary:
    """A run of `cases` cases with `new_failures` new failures, as the client would list it."""
    detail = "The reply did not mention the refund policy at all; it said: " + "x" * 300
    checks = [
        FailedCheck(id=f"c{i}", type=kind, severity="error", detail=detail)
        for i, kind in enumerate(("tool_called", "output_contains", "llm_judge"))
    ]
    listed = 1_000  # the client asks the server for at most this many of each other bucket
    counts = BucketCounts(
        new_failure=new_failures, fixed=2_000, still_failing=3_000, new_case=500, flaky=300,
        removed_case=200, still_passing=max(0, cases - new_failures - 6_000),
    )  # fmt: skip
    others = {
        bucket: [
            make_case(i, bucket, failed_checks=[] if bucket == "fixed" else checks)
            for i in range(min(listed, getattr(counts, bucket)))
        ]
        for bucket in ("still_failing", "new_case", "flaky", "fixed", "removed_case")
    }
    return make_summary(
        counts=counts,
        new_failures=[make_case(i, failed_checks=checks) for i in range(new_failures)],
        others=others,
        truncated_from={bucket: getattr(counts, bucket) for bucket in others},
    )


def test_a_comment_for_100000_cases_and_5000_new_failures_stays_under_the_limit() -> None:
    summary = big_summary()
    started = time.perf_counter()
    markdown = render_comment(summary)
    elapsed_s = time.perf_counter() - started
    print(f"\nrendered {len(markdown):,} characters in {elapsed_s * 1000:.1f} ms")
    assert len(markdown) <= 65_000
    page = assert_renders_as_text(
        summary, expected_items=len(new_failure_items(rendered(markdown)))
    )
    items = new_failure_items(page)
    assert len(items) > 50
    assert items[-1].text() == f"and {5_001 - len(items):,} more new failures: see the run page"
    assert [i.kids("a")[0].attrs["href"] for i in items[:3]] == [
        f"{RUN_URL}/cases/case-{i}" for i in range(3)
    ]
    assert list(sections(page)) == [
        "Still failing (3,000)", "New cases that fail (500)", "Flaky (300)", "Fixed (2,000)",
        "Removed cases (200)",
    ]  # fmt: skip


def test_the_collapsed_sections_shrink_before_the_new_failures() -> None:
    summary = big_summary(new_failures=20)
    page = rendered(render_comment(summary, max_chars=25_000))
    assert len(new_failure_items(page)) == 20
    assert all(not li.text().startswith("and ") for li in new_failure_items(page))
    lists = [details.find_all("li") for details in sections(page).values()]
    assert [len(items) for items in lists] == [len(lists[0])] + [1] * 4
    assert lists[-1][0].text() == "200 cases: see the run page"


@pytest.mark.parametrize("max_chars", [800, 1_200, 2_500, 5_000, 8_000, 13_000, 21_000, 34_000])
def test_any_bound_is_kept_without_cutting_a_construct(max_chars: int) -> None:
    summary = big_summary(new_failures=300, cases=2_000)
    markdown = render_comment(summary, max_chars=max_chars)
    assert len(markdown) <= max_chars
    assert markdown.count("<details>") == markdown.count("</details>")
    page = rendered(markdown)  # raises when an element is left open or closed out of turn
    *listed, rest = new_failure_items(page)
    assert all(item.kids("a") and item.kids("ul") for item in listed)
    count = f"and {300 - len(listed)} more new failures" if listed else "300 new failures"
    assert rest.text() == f"{count}: see the run page"
    # At a bound too small for every section, the last ones go first.
    names = [name.split(" (")[0] for name in sections(page)]
    assert names == list(pr_comment.SECTION_NAMES.values())[: len(names)]


def test_a_bound_too_small_for_the_heading_and_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        render_comment(big_summary(new_failures=10, cases=100), max_chars=400)


def test_the_check_names_are_the_products() -> None:
    assert pr_comment.PRODUCT_NAMES == PRODUCT_NAMES


def test_the_comment_file_is_utf8(tmp_path: Path) -> None:
    path = tmp_path / "comment.md"
    summary = make_summary(new_failures=[make_case(1, description="Rückerstattung für 🧾")])
    write_comment_file(path, summary)
    text = path.read_bytes().decode("utf-8")
    assert text == render_comment(summary)
    assert "Rückerstattung für 🧾" in text and "\r" not in text


def only_new_cases(count: int) -> BucketCounts:
    """The counts of a run without a baseline: every case is new."""
    return BucketCounts(
        new_failure=0, fixed=0, still_failing=0, still_passing=0, new_case=count,
        removed_case=0, flaky=0,
    )  # fmt: skip
