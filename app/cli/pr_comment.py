"""The pull-request comment of a compared run (`--comment-file`): Markdown that GitHub and
GitLab render, under a size bound however large the run."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote, urlsplit

import msgspec

from agentlasso.client import BucketCounts
from agentlasso.domain import checks

# GitHub refuses a comment longer than 65,536 characters; this leaves room to spare.
MAX_COMMENT_CHARS = 65_000
DESCRIPTION_CHARS = 80
DETAIL_CHARS = 200
REASON_CHARS = 300
WARNINGS_SHOWN = 5
ID_CHARS = 100
CHECKS_SHOWN = 10
CHECK_NAMES_SHOWN = 5
URL_CHARS = 2_000

# The names people know the check types by, by the type names the API reports.
PRODUCT_NAMES: dict[str, str] = {name: text for name, text in checks.PRODUCT_NAMES.items()}
BUCKET_NAMES: dict[str, str] = {
    "new_failure": "New failures",
    "fixed": "Fixed",
    "still_failing": "Still failing",
    "still_passing": "Still passing",
    "new_case": "New cases",
    "removed_case": "Removed cases",
    "flaky": "Flaky",
}
# The collapsed sections, most worth a reader's time first; `new_case` lists failing ones.
SECTION_NAMES: dict[str, str] = {
    "still_failing": "Still failing",
    "new_case": "New cases that fail",
    "flaky": "Flaky",
    "fixed": "Fixed",
    "removed_case": "Removed cases",
}

_WORD_JOINER = "\u2060"
# A user's text is shown as text: HTML is escaped, Markdown's inline punctuation too, and a
# word joiner after `@` and `#` keeps a dataset from pinging people or linking issues.
_ESCAPES = str.maketrans(
    {
        "&": "&amp;", "<": "&lt;", ">": "&gt;",
        "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
        "|": "\\|", "~": "\\~", "@": "@" + _WORD_JOINER, "#": "#" + _WORD_JOINER,
    }
)  # fmt: skip
# Line breaks, control characters and bidirectional overrides (which can make text read
# other than it is) all become one space.
_SPACES = re.compile("[\\s\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]+")
# What GitHub would turn into a link by itself: a scheme's `://` and a leading `www.`.
_AUTOLINK = re.compile(r"(?i)(:)(//)|\b(www)(\.)")
# What would open a list item at the start of a line.
_BLOCK_START = re.compile(r"^(\d{1,9})([.)])|^([+\-])")
_SAFE_ID = re.compile(r"[A-Za-z0-9._:/-]{1,100}")


class FailedCheck(msgspec.Struct, frozen=True, kw_only=True):
    """A check that did not pass in the compared run."""

    id: str
    type: str
    severity: str
    detail: str
    # A conversation's turn check: the turn it grades.
    turn: int | None = None


class ComparedCase(msgspec.Struct, frozen=True, kw_only=True):
    """One case of a comparison, as the comment lists it."""

    test_case_id: str
    bucket: str
    description: str | None
    input_preview: str
    failed_checks: list[FailedCheck]
    card_url: str | None
    revision_changed: bool


class ComparisonSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A run compared with its baseline: the gate, the counts and the cases to list."""

    run_id: str
    baseline_run_id: str | None
    run_url: str | None
    gate_passed: bool
    gate_reason: str | None
    pass_rate: float | None
    pass_threshold: float
    counts: BucketCounts
    new_failures: list[ComparedCase]
    others: dict[str, list[ComparedCase]]
    truncated_from: dict[str, int]
    # The gate's doubts about its AI judge (contract section 15), in words.
    judge_warnings: list[str] = []

    def total(self, bucket: str, listed: int) -> int:
        """How many cases the bucket holds, when the summary lists only `listed` of them."""
        return max(self.truncated_from.get(bucket, listed), listed)


def write_comment_file(path: Path, summary: ComparisonSummary) -> None:
    """Write the comment as UTF-8, with the line ends it was rendered with."""
    path.write_text(render_comment(summary), encoding="utf-8", newline="")


def render_comment(summary: ComparisonSummary, max_chars: int = MAX_COMMENT_CHARS) -> str:
    """The comment: the gate, the bucket counts, each new failure that fits, then the other
    buckets collapsed; at most `max_chars` characters, never cut inside a construct."""
    run_url = _url(summary.run_url)
    head = _head(summary, run_url)
    sections = [
        (bucket, summary.others.get(bucket, []), words) for bucket, words in _section_order(summary)
    ]
    sections = [s for s in sections if summary.total(s[0], len(s[1])) > 0]
    least = [_section_least(summary, bucket, words, run_url) for bucket, _, words in sections]
    fixed = len(head) + len(_new_failures(summary, run_url, room=0))
    while sections and fixed + sum(least) > max_chars:
        del sections[-1], least[-1]  # only at a tiny max_chars: the counts table has them
    if fixed > max_chars:
        raise ValueError(f"max_chars={max_chars} leaves no room for the gate and counts")
    parts = [head, _new_failures(summary, run_url, max_chars - len(head) - sum(least))]
    used = sum(map(len, parts))
    for index, (bucket, cases, words) in enumerate(sections):
        room = max_chars - used - sum(least[index + 1 :])
        parts.append(_section(summary, bucket, words, cases, run_url, room))
        used += len(parts[-1])
    return "".join(parts)


def _section_order(summary: ComparisonSummary) -> list[tuple[str, str]]:
    """The known sections in their order, then any other bucket the summary holds."""
    extra = [(b, BUCKET_NAMES.get(b) or _text(b, ID_CHARS)) for b in summary.others]
    return list(SECTION_NAMES.items()) + [e for e in extra if e[0] not in SECTION_NAMES]


def _head(summary: ComparisonSummary, run_url: str | None) -> str:
    """The verdict heading, the pass rate, the baseline and the bucket counts table."""
    verdict = "✅ AgentLasso gate passed" if summary.gate_passed else "❌ AgentLasso gate failed"
    reason = f": {_text(summary.gate_reason, REASON_CHARS)}" if summary.gate_reason else ""
    rate = (
        f"Pass rate **{_percent(summary.pass_rate)}** "
        f"(threshold {_percent(summary.pass_threshold)}) in run {_id(summary.run_id)}."
    )
    baseline = (
        f"Compared with baseline run {_id(summary.baseline_run_id)}."
        if summary.baseline_run_id
        else "No baseline: every case is new."
    )
    lines = [f"## {verdict}{reason}", "", f"{rate} {baseline}"]
    if run_url is not None:
        lines += ["", f"[Open the run in AgentLasso]({run_url})"]
    if summary.judge_warnings:
        lines += ["", "**Judge warnings**", ""]
        shown = summary.judge_warnings[:WARNINGS_SHOWN]
        lines += [f"- {_text(warning, REASON_CHARS)}" for warning in shown]
        if len(summary.judge_warnings) > WARNINGS_SHOWN:
            lines.append(f"- …and {len(summary.judge_warnings) - WARNINGS_SHOWN} more on the run.")
    lines += ["", "| Bucket | Cases |", "|---|---:|"]
    lines += [
        f"| {words} | {getattr(summary.counts, bucket):,} |"
        for bucket, words in BUCKET_NAMES.items()
    ]
    return "\n".join(lines) + "\n\n"


def _new_failures(summary: ComparisonSummary, run_url: str | None, room: int) -> str:
    """The new failures heading and as many entries as fit in `room` characters."""
    total = summary.total("new_failure", len(summary.new_failures))
    if total == 0:
        none = "Nothing can be a new failure without a baseline."
        return f"{none if summary.baseline_run_id is None else 'No new failures.'}\n\n"
    heading = f"### New failures ({total:,})\n\n"
    entries = (_new_failure(case) for case in summary.new_failures)
    listing = _listing(entries, total, room - len(heading) - 1, _more("new failures", run_url))
    return f"{heading}{listing}\n"


def _new_failure(case: ComparedCase) -> str:
    """A list item: the case, linked to its card, and each of its failed checks."""
    lines = [f"- {_case_title(case)}"]
    lines += [f"  - {_check_line(check)}" for check in case.failed_checks[:CHECKS_SHOWN]]
    if len(case.failed_checks) > CHECKS_SHOWN:
        lines.append(f"  - and {len(case.failed_checks) - CHECKS_SHOWN:,} more failed checks")
    return "\n".join(lines) + "\n"


def _check_line(check: FailedCheck) -> str:
    """The check's product name, severity and id, then its detail."""
    name = PRODUCT_NAMES.get(check.type) or _text(check.type, ID_CHARS)
    detail = _text(check.detail, DETAIL_CHARS)
    line = f"{name} ({_text(check.severity, ID_CHARS)}, check {_id(check.id)})"
    if check.turn is not None:
        line = f"turn {check.turn}: {line}"
    return f"{line}: {detail}" if detail else line


def _section(
    summary: ComparisonSummary,
    bucket: str,
    words: str,
    cases: list[ComparedCase],
    run_url: str | None,
    room: int,
) -> str:
    """A collapsed section with as many of the bucket's cases as fit in `room` characters."""
    total = summary.total(bucket, len(cases))
    opening, closing = _section_frame(words, total)
    entries = (_case_line(case) for case in cases)
    room -= len(opening) + len(closing)
    return f"{opening}{_listing(entries, total, room, _more('cases', run_url))}{closing}"


def _section_least(summary: ComparisonSummary, bucket: str, words: str, url: str | None) -> int:
    """The size of the section when it lists no case at all."""
    total = summary.total(bucket, len(summary.others.get(bucket, [])))
    opening, closing = _section_frame(words, total)
    return len(opening) + len(_more("cases", url)(total, 0)) + len(closing)


def _section_frame(words: str, total: int) -> tuple[str, str]:
    # The blank line after <summary> lets the Markdown inside <details> render.
    return f"<details><summary>{words} ({total:,})</summary>\n\n", "\n</details>\n\n"


def _case_line(case: ComparedCase) -> str:
    """A list item of one line: the case and the names of its failed checks."""
    names = dict.fromkeys(
        PRODUCT_NAMES.get(check.type) or _text(check.type, ID_CHARS) for check in case.failed_checks
    )
    shown = list(names)[:CHECK_NAMES_SHOWN]
    if len(names) > len(shown):
        shown.append(f"{len(names) - len(shown)} more")
    checks = f": {', '.join(shown)}" if shown else ""
    return f"- {_case_title(case)}{checks}\n"


def _case_title(case: ComparedCase) -> str:
    """The description (or the start of the input), linked to the card, and the case's id."""
    name = _text(case.description, DESCRIPTION_CHARS) or _text(
        case.input_preview, DESCRIPTION_CHARS
    )
    card = _url(case.card_url)
    if card is not None:
        name = f"[{name or 'Case card'}]({card})"
    title = f"{name} · {_id(case.test_case_id)}" if name else _id(case.test_case_id)
    return f"{title} (the case was edited since the baseline)" if case.revision_changed else title


def _listing(entries: Iterable[str], total: int, room: int, more: Callable[[int, int], str]) -> str:
    """As many whole entries as fit in `room` characters, then a line for the rest.

    Entries are rendered only until one does not fit, so a large bucket costs nothing."""
    parts: list[str] = []
    used = len(more(total, 1))  # the widest line for the rest it may need
    for entry in entries:
        if used + len(entry) > room:
            break
        parts.append(entry)
        used += len(entry)
    if len(parts) < total:
        parts.append(more(total - len(parts), len(parts)))
    return "".join(parts)


def _more(noun: str, run_url: str | None) -> Callable[[int, int], str]:
    """The line that stands for the `count` cases not listed, after `listed` that are."""
    page = "the run page" if run_url is None else f"[the run page]({run_url})"

    def line(count: int, listed: int) -> str:
        said = f"and {count:,} more {noun}" if listed else f"{count:,} {noun}"
        return f"- {said}: see {page}\n"

    return line


def _text(value: str | None, limit: int) -> str:
    """A user's text on one line, cut to `limit` characters, that renders as itself."""
    if not value:
        return ""
    text = _SPACES.sub(" ", value).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    text = _AUTOLINK.sub(rf"\1\3{_WORD_JOINER}\2\4", text.translate(_ESCAPES))
    return _BLOCK_START.sub(r"\1\\\2\3", text, count=1)


def _id(value: str) -> str:
    """An id in a code span when it is plain, else as escaped text."""
    return f"`{value}`" if _SAFE_ID.fullmatch(value) else _text(value, ID_CHARS)


def _url(value: str | None) -> str | None:
    """An http(s) link target that cannot end early, or None when it is not one."""
    if not value or len(value) > URL_CHARS or urlsplit(value).scheme not in ("http", "https"):
        return None
    return quote(value, safe=":/?#[]@!$&'*+,;=%~-._")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"
