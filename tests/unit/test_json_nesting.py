"""The nesting bound on a client's JSON: exact at the limit, blind to brackets in strings."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.domain.json_nesting import MAX_DEPTH, too_deep


def arrays(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def objects(depth: int) -> str:
    return '{"k": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [0, 1, 2, 10, MAX_DEPTH - 1, MAX_DEPTH])
@pytest.mark.parametrize("build", [arrays, objects])
def test_within_the_limit_is_not_too_deep(depth: int, build: Callable[[int], str]) -> None:
    assert too_deep(build(depth)) is None


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, MAX_DEPTH + 2, 1_000, 100_000])
def test_past_the_limit_names_where(depth: int) -> None:
    assert too_deep(arrays(depth)) == "/0" * MAX_DEPTH
    assert too_deep(objects(depth)) == "/k" * MAX_DEPTH


def test_the_pointer_follows_keys_and_indexes() -> None:
    document = {
        "cases": [{"input": "x"}, {"input": "y", "context": {"a/b": json.loads(arrays(70))}}]
    }
    assert too_deep(json.dumps(document), max_depth=8) == "/cases/1/context/a~1b/0/0/0/0"


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"s": "[" * 500}),
        json.dumps({"s": "]" * 500 + "[" * 500}),
        json.dumps({"s": '\\"' + "[" * 500}),
        json.dumps({"s": "\\\\" + "{" * 500, "t": "\\"}),
        json.dumps(["[[[", {"a": "{{{"}] * 1_000),
        json.dumps([[i] for i in range(10_000)]),
    ],
)
def test_brackets_in_strings_and_wide_documents_are_not_depth(text: str) -> None:
    assert too_deep(text) is None


@pytest.mark.parametrize("text", ["", "not json", "[" * 10, "]" * 100, "[}" * 100, '"open'])
def test_text_that_is_not_json_is_left_to_the_decoder(text: str) -> None:
    assert too_deep(text) is None


def test_unclosed_openers_past_the_limit_are_too_deep() -> None:
    assert too_deep("[" * 100_000) == "/0" * MAX_DEPTH
    assert too_deep('{"a": ' * 1_000) == "/a" * MAX_DEPTH


def test_mixed_nesting_counts_every_level() -> None:
    assert too_deep('[{"a": [{"b": [1]}]}]', max_depth=5) is None
    assert too_deep('[{"a": [{"b": [1]}]}]', max_depth=4) == "/0/a/0/b"
