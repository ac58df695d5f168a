"""The word-level diff of an expected output against a reply, as the case card shows it."""

from __future__ import annotations

import pytest

from agentlasso.web.word_diff import MAX_WORD_PAIRS, Segment, word_diff


@pytest.mark.parametrize(
    ("expected", "reply", "segments"),
    [
        ("Same words.", "Same words.", [("equal", "Same words.")]),
        (
            "The refund arrives in 3-5 days.",
            "The refund is on its way: 3-5 days.",
            [
                ("equal", "The refund "),
                ("removed", "arrives in "),
                ("added", "is on its way: "),
                ("equal", "3-5 days."),
            ],
        ),
        (
            "Say hello.",
            "Say hello. Then goodbye.",
            [("equal", "Say hello. "), ("added", "Then goodbye.")],
        ),
        (
            "Say hello. Then goodbye.",
            "Say hello.",
            [("equal", "Say hello."), ("removed", "Then goodbye.")],
        ),
        ("", "Anything", [("added", "Anything")]),
        ("Something", "", [("removed", "Something")]),
        ("", "", []),
    ],
)
def test_words_are_equal_removed_or_added(
    expected: str, reply: str, segments: list[Segment]
) -> None:
    assert word_diff(expected, reply) == segments


def test_whitespace_is_not_a_change_and_the_replys_spacing_is_kept() -> None:
    assert word_diff("one two\nthree", "one  two three") == [("equal", "one  two three")]


def test_the_reply_can_be_read_back_from_the_equal_and_added_segments() -> None:
    expected = "Refunds take 3-5 business days.\n\nWe never guarantee a date."
    reply = "  Your refund takes 3-5 business days. I guarantee it arrives Monday.\n"
    segments = word_diff(expected, reply)
    assert segments is not None
    assert "".join(text for kind, text in segments if kind != "removed") == reply
    assert {kind for kind, _text in segments} == {"equal", "removed", "added"}


def test_segments_of_one_kind_are_joined() -> None:
    segments = word_diff("a b c d", "w x y z")
    assert segments == [("removed", "a b c d"), ("added", "w x y z")]


def test_texts_too_long_to_diff_quickly_are_not_diffed() -> None:
    words = int(MAX_WORD_PAIRS**0.5)
    near = " ".join(["word"] * words)
    assert word_diff(near, near) is not None
    assert word_diff(near, near + " one more") is None
    assert word_diff("short", "long " * (MAX_WORD_PAIRS + 1)) is None
