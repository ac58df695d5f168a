"""The nesting bound on a client's JSON: exact at the limit, blind to brackets in strings."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Callable

import pytest

from agentlasso.domain import json_nesting
from agentlasso.domain.json_nesting import MAX_DEPTH, too_deep


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


def reference_depth(text: bytes) -> int:
    """The deepest level outside strings, read a byte at a time as a decoder would."""
    level = deepest = 0
    in_string = escaped = False
    for byte in text:
        char = chr(byte)
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def random_document(rng: random.Random, max_depth: int) -> bytes:
    """Valid JSON of a random shape: strings full of brackets, quotes and backslashes."""

    def value(depth: int) -> str:
        roll = rng.random()
        if depth < max_depth and roll < 0.45:
            items = [value(depth + 1) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.5:
                return "[" + ",".join(items) + "]"
            return "{" + ",".join(f"{text()}:{item}" for item in items) + "}"
        return text() if roll < 0.8 else str(rng.randint(0, 99))

    def text() -> str:
        return json.dumps("".join(rng.choice('ab[]{}"\\\\é') for _ in range(rng.randint(0, 6))))

    return value(1).encode()


@pytest.mark.parametrize("slice_bytes", [1, 2, 3, 7, 64])
def test_documents_read_a_slice_at_a_time_are_read_as_a_whole(
    slice_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slices this small end inside every string, escape and run of backslashes somewhere.
    monkeypatch.setattr(json_nesting, "SLICE_BYTES", slice_bytes)
    rng = random.Random(slice_bytes)
    for _ in range(300):
        document = random_document(rng, max_depth=rng.randint(1, 12))
        depth = reference_depth(document)
        limit = rng.randint(max(1, depth - 2), depth + 2)
        found = too_deep(document, max_depth=limit)
        assert (found is not None) == (depth > limit), document


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_deep_nesting_across_a_slice_end_is_counted(depth: int) -> None:
    padding = json.dumps("[" * (json_nesting.SLICE_BYTES - 40))
    document = "[" + padding + "," * 7 + arrays(depth - 1) + "]"
    assert (too_deep(document) is not None) == (depth > MAX_DEPTH)


def test_a_large_document_is_read_a_slice_at_a_time() -> None:
    # A body of 10 MiB of quotes was split into 10 million pieces in one call (over 500 ms
    # holding the interpreter, so the event loop stopped even with the check on a thread).
    body = b'"' * (10 * 1024 * 1024)
    tracemalloc.start()
    try:
        assert too_deep(body) is None
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_bytes < 8 * json_nesting.SLICE_BYTES


@pytest.mark.parametrize(
    "document",
    ["\ud800" + arrays(MAX_DEPTH + 1), "é" + arrays(MAX_DEPTH + 1), b"\xff\xfe" + b"[" * 70],
)
def test_text_that_is_not_utf8_is_still_measured(document: str | bytes) -> None:
    assert too_deep(document) == "/0" * MAX_DEPTH
