"""Tool calls of a baseline and of a run lined up, as the compare page shows them."""

from __future__ import annotations

import pytest

from agentlasso.web.tool_alignment import MAX_CALL_PAIRS, AlignedCall, align_tool_calls

SAME, ADDED, REMOVED = "same", "added", "removed"


@pytest.mark.parametrize(
    ("before", "after", "aligned"),
    [
        ([], [], []),
        (["lookup"], ["lookup"], [(SAME, "lookup", "lookup")]),
        ([], ["lookup"], [(ADDED, None, "lookup")]),
        (["lookup"], [], [(REMOVED, "lookup", None)]),
        (
            ["lookup", "refund"],
            ["lookup", "cancel", "refund"],
            [(SAME, "lookup", "lookup"), (ADDED, None, "cancel"), (SAME, "refund", "refund")],
        ),
        (
            ["lookup", "refund", "notify"],
            ["lookup", "cancel", "notify"],
            [
                (SAME, "lookup", "lookup"),
                (REMOVED, "refund", None),
                (ADDED, None, "cancel"),
                (SAME, "notify", "notify"),
            ],
        ),
        (
            ["a", "b"],
            ["b", "a"],
            [(ADDED, None, "b"), (SAME, "a", "a"), (REMOVED, "b", None)],
        ),
        (
            ["lookup", "lookup", "lookup"],
            ["lookup", "lookup"],
            [(SAME, "lookup", "lookup"), (SAME, "lookup", "lookup"), (REMOVED, "lookup", None)],
        ),
    ],
)
def test_calls_are_the_same_added_or_removed_in_order(
    before: list[str], after: list[str], aligned: list[tuple[str, str | None, str | None]]
) -> None:
    assert align_tool_calls(before, after) == [AlignedCall(*line) for line in aligned]


def test_every_call_of_both_sequences_is_shown_once_in_its_order() -> None:
    before = ["search", "lookup", "refund", "lookup", "notify"]
    after = ["lookup", "refund", "refund", "cancel", "notify", "search"]
    aligned = align_tool_calls(before, after)
    assert aligned is not None
    assert [line.before for line in aligned if line.before is not None] == before
    assert [line.after for line in aligned if line.after is not None] == after
    assert all((line.kind == SAME) == (line.before == line.after) for line in aligned)


def test_a_tool_called_many_times_still_anchors_the_alignment() -> None:
    # 200 calls of one tool would be junk to difflib's default heuristic.
    before = ["lookup"] * 200 + ["refund"]
    after = ["lookup"] * 200 + ["cancel"]
    aligned = align_tool_calls(before, after)
    assert aligned is not None
    assert [line.kind for line in aligned] == [SAME] * 200 + [REMOVED, ADDED]


def test_sequences_too_long_to_align_are_not_aligned() -> None:
    calls = ["lookup"] * (MAX_CALL_PAIRS // 1000 + 1)
    assert align_tool_calls(calls, ["lookup"] * 1000) is None
    assert align_tool_calls(["lookup"], ["lookup"] * MAX_CALL_PAIRS) is not None
