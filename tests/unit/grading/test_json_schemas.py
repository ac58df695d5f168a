"""JSON Schemas in the grading core: what is refused and where, and how a failure reads."""

from __future__ import annotations

import http.server
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlasso.grading.schemas import (
    MAX_DEPTH,
    MAX_PATTERNS,
    MAX_SCHEMA_BYTES,
    CompiledSchema,
    SchemaProblem,
    _Cache,
    compile_schema,
    compiled,
)


def compiled_ok(schema: object) -> CompiledSchema:
    result = compile_schema(schema)
    assert isinstance(result, CompiledSchema), result
    return result


def problem(schema: object) -> str:
    result = compile_schema(schema)
    assert isinstance(result, SchemaProblem), f"{schema!r} compiled"
    return result.detail()


def nested(depth: int, leaf: object, key: str = "not") -> object:
    """`depth` objects nested by `key` around `leaf`."""
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


LOOKAROUND = "is not a pattern the linear-time regex engine accepts"
OUTSIDE = "is outside the schema; only references within it are allowed"


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        pytest.param("x", 'a schema is a JSON object or a boolean, not "x"', id="string"),
        pytest.param([{}], "a schema is a JSON object or a boolean, not [{}]", id="array"),
        pytest.param(3, "a schema is a JSON object or a boolean, not 3", id="number"),
        pytest.param(None, "a schema is a JSON object or a boolean, not null", id="null"),
        pytest.param(1j, "a schema is a JSON object or a boolean, not 1j", id="not-json"),
        pytest.param(
            {"const": 1j},
            "the schema is not JSON: Encoding objects of type complex is unsupported",
            id="holds-what-is-not-json",
        ),
        pytest.param(
            {"$ref": "http://[invalid"},
            'at /$ref: the reference "http://[invalid" is not a valid URI reference',
            id="invalid-reference",
        ),
        pytest.param(
            {"type": 12},
            'at /type: 12 is not one of "array", "boolean", "integer", "null", "number", '
            '"object", "string"',
            id="type-not-a-name",
        ),
        pytest.param(
            {"type": ["string", "strin"]},
            'at /type/1: "strin" is not one of "array", "boolean", "integer", "null", '
            '"number", "object", "string"',
            id="type-list-misspelt",
        ),
        pytest.param({"minimum": "x"}, 'at /minimum: "x" is not of type number', id="minimum"),
        pytest.param(
            {"type": "object", "properties": {"price": {"type": "number", "minimum": "x"}}},
            'at /properties/price/minimum: "x" is not of type number',
            id="nested-minimum",
        ),
        pytest.param({"required": "id"}, 'at /required: "id" is not of type array', id="required"),
        pytest.param({"items": 3}, "at /items: 3 is not of type boolean or object", id="items"),
        pytest.param(
            {"$schema": 5}, "at /$schema: 5 is not of type string", id="dialect-not-a-string"
        ),
        pytest.param(
            {"$schema": "https://example.com/my-dialect"},
            'at /$schema: the dialect "https://example.com/my-dialect" is not one this validator '
            "knows; leave $schema out for JSON Schema 2020-12",
            id="unknown-dialect",
        ),
        pytest.param(
            {"$ref": "#/$defs/missing"},
            'at /$ref: the reference "#/$defs/missing" points at nothing in the schema',
            id="missing-definition",
        ),
        pytest.param(
            {"items": {"$ref": "#nope"}},
            'at /items/$ref: the reference "#nope" names an anchor the schema does not have',
            id="missing-anchor",
        ),
    ],
)
def test_a_bad_schema_is_refused_saying_where(schema: object, detail: str) -> None:
    assert problem(schema) == detail


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        pytest.param(
            {"$ref": "http://example.com/order.json#/$defs/a"},
            'at /$ref: the reference "http://example.com/order.json#/$defs/a" ' + OUTSIDE,
            id="http",
        ),
        pytest.param(
            {"properties": {"a": {"$ref": "https://example.com/a.json"}}},
            'at /properties/a/$ref: the reference "https://example.com/a.json" ' + OUTSIDE,
            id="https",
        ),
        pytest.param(
            {"$ref": "file:///etc/passwd"},
            'at /$ref: the reference "file:///etc/passwd" ' + OUTSIDE,
            id="file",
        ),
        pytest.param(
            {"$ref": "../other.json"},
            'at /$ref: the reference "../other.json" ' + OUTSIDE,
            id="relative-outside",
        ),
        pytest.param(
            {"$id": "https://example.com/root.json", "items": {"$ref": "other.json"}},
            'at /items/$ref: the reference "other.json" ("https://example.com/other.json") '
            + OUTSIDE,
            id="relative-to-the-base",
        ),
        pytest.param(
            {"$ref": "urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed"},
            'at /$ref: the reference "urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed" ' + OUTSIDE,
            id="urn",
        ),
        pytest.param(
            {"$dynamicRef": "https://example.com/x#meta"},
            'at /$dynamicRef: the reference "https://example.com/x#meta" ' + OUTSIDE,
            id="dynamic-ref",
        ),
        pytest.param(
            {
                "$defs": {"a": {}},
                "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "https://e.com/y"}},
            },
            'at /properties/y/$ref: the reference "https://e.com/y" ' + OUTSIDE,
            id="after-a-local-one",
        ),
        pytest.param(
            {"$id": "http://example.com/a/b", "$ref": "../../c"},
            'the reference "http://example.com/c" ' + OUTSIDE,
            id="known-by-where-it-resolves",
        ),
        pytest.param(
            {"$ref": "http://json-schema.org/draft-07/schema#"},
            'at /$ref: the reference "http://json-schema.org/draft-07/schema#" ' + OUTSIDE,
            id="another-drafts-metaschema",
        ),
    ],
)
def test_a_remote_reference_is_refused_and_named(schema: object, detail: str) -> None:
    assert problem(schema) == detail


@pytest.fixture
def requests_seen() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a schema, and the paths it was asked for."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_nothing_is_fetched(requests_seen: tuple[str, list[str]]) -> None:
    base, seen = requests_seen
    assert "outside the schema" in problem({"$ref": f"{base}/integer.json"})
    assert "not one this validator knows" in problem({"$schema": f"{base}/meta.json"})
    embedded = {"$defs": {"x": {"$id": f"{base}/x.json", "$schema": f"{base}/meta.json"}}}
    compile_schema(embedded)
    assert seen == []


@pytest.mark.parametrize(
    ("pattern", "where"),
    [
        pytest.param({"pattern": "^(?=a)"}, "at /pattern", id="lookahead"),
        pytest.param({"pattern": "(?<!a)b"}, "at /pattern", id="lookbehind"),
        pytest.param({"pattern": "(a)\\1"}, "at /pattern", id="backreference"),
        pytest.param({"pattern": "["}, "at /pattern", id="unbalanced"),
        pytest.param(
            {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": "(?=a)"},
            "at /pattern",
            id="lookahead-in-draft-7",
        ),
        pytest.param(
            {"properties": {"name": {"pattern": "\\p{L}{100}"}}},
            "at /properties/name/pattern",
            id="compiles-too-big",
        ),
        pytest.param(
            {"patternProperties": {"^(?=x)": {}}}, "at /patternProperties/^(?=x)", id="keyed"
        ),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_refused(pattern: object, where: str) -> None:
    detail = problem(pattern)
    assert detail.startswith(where + ": ")
    assert LOOKAROUND in detail


def test_a_hostile_pattern_answers_in_milliseconds() -> None:
    schema = compiled_ok({"type": "object", "properties": {"code": {"pattern": "^(a+)+$"}}})
    started = time.perf_counter()
    detail = schema.first_error({"code": "a" * 50_000 + "!"})
    elapsed_s = time.perf_counter() - started
    assert detail == ('$.code: "' + "a" * 80 + '..." does not match the pattern "^(a+)+$"')
    assert elapsed_s < 1.0


def test_the_size_limit_is_on_the_compact_json_in_bytes() -> None:
    # {"description":"..."} is 18 bytes around the text; "é" is two bytes in UTF-8.
    at_limit = {"description": "é" * ((MAX_SCHEMA_BYTES - 18) // 2)}
    compiled_ok(at_limit)
    over = {"description": "é" * ((MAX_SCHEMA_BYTES - 18) // 2) + "x"}
    assert problem(over) == (
        "the schema is 65,537 bytes as compact JSON; at most 65,536 are allowed"
    )
    text = '{"description":"' + "x" * (MAX_SCHEMA_BYTES - 17) + '"}'
    refused = compiled(text)
    assert isinstance(refused, SchemaProblem)
    assert refused.detail().startswith("the schema is 65,537 bytes")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        pytest.param(
            "nope",
            "the schema is not JSON: JSON is malformed: invalid character (byte 4)",
            id="not-json",
        ),
        pytest.param('"x"', 'a schema is a JSON object or a boolean, not "x"', id="a-string"),
        pytest.param(
            '{"not":' * 101 + "{}" + "}" * 101,
            "the schema is nested more than 100 levels deep",
            id="too-deep",
        ),
        pytest.param(
            "[" * 30_000 + "]" * 30_000,
            "the schema is nested more than 100 levels deep",
            id="too-deep-to-parse",
        ),
    ],
)
def test_schema_text_is_refused_in_words(text: str, detail: str) -> None:
    refused = compiled(text)
    assert isinstance(refused, SchemaProblem)
    assert refused.detail() == detail


def test_the_depth_and_pattern_limits() -> None:
    compiled_ok(nested(MAX_DEPTH - 1, {"type": "string"}))
    assert problem(nested(MAX_DEPTH + 1, {})) == "the schema is nested more than 100 levels deep"
    assert problem(nested(10_000, {})) == "the schema is nested more than 100 levels deep"
    patterns = {f"p{i}": {"pattern": f"^{i}$"} for i in range(MAX_PATTERNS + 1)}
    compiled_ok({"properties": dict(list(patterns.items())[:MAX_PATTERNS])})
    assert problem({"properties": patterns}) == (
        "the schema has 65 patterns; at most 64 are allowed"
    )


@pytest.mark.parametrize(
    ("schema", "valid", "invalid", "detail"),
    [
        pytest.param(
            {
                "$defs": {"price": {"type": "number", "minimum": 0}},
                "items": {"$ref": "#/$defs/price"},
            },
            [1, 2.5],
            [1, -2],
            "$[1]: -2 is less than the minimum 0",
            id="local-ref",
        ),
        pytest.param(
            {
                "$defs": {"id": {"$anchor": "id", "type": "string"}},
                "properties": {"id": {"$ref": "#id"}},
            },
            {"id": "a"},
            {"id": 7},
            "$.id: 7 is not of type string",
            id="anchor",
        ),
        pytest.param(
            {"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["name"]},
            {"name": "a", "child": {"name": "b"}},
            {"name": "a", "child": {"child": {}}},
            '$.child: the required property "name" is missing',
            id="recursive-ref",
        ),
        pytest.param(
            {"$ref": "https://json-schema.org/draft/2020-12/schema"},
            {"type": "string"},
            {"type": 12},
            "$.type: 12 is not valid under any of the schemas listed in the 'anyOf' keyword",
            id="the-metaschema-is-built-in",
        ),
        pytest.param(
            {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]},
            ["a", 1],
            [1],
            "$[0]: 1 is not of type string",
            id="draft-7-honoured",
        ),
        pytest.param(
            {"prefixItems": [{"type": "string"}], "items": False},
            ["a"],
            ["a", 1],
            "$[1]: 1 is not allowed here (the schema is false)",
            id="draft-2020-12-by-default",
        ),
        pytest.param(True, {"any": "thing"}, None, None, id="true"),
        pytest.param(False, None, 1, "$: 1 is not allowed here (the schema is false)", id="false"),
        pytest.param({"format": "email"}, "not an email", None, None, id="format-is-annotation"),
    ],
)
def test_schemas_that_compile(
    schema: object, valid: object, invalid: object, detail: str | None
) -> None:
    result = compiled_ok(schema)
    if valid is not None:
        assert result.first_error(valid) is None
        assert result.is_valid(valid)
    if invalid is not None:
        assert result.first_error(invalid) == detail
        assert not result.is_valid(invalid)


ORDER = {
    "type": "object",
    "required": ["id", "items"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^ord_[0-9]+$"},
        "items": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["price"],
                "properties": {"price": {"type": "number", "minimum": 0}},
            },
        },
        "status": {"enum": ["open", "paid", "refunded"]},
        "note": {"type": "string", "maxLength": 10},
        "tags": {"type": "array", "uniqueItems": True, "maxItems": 2},
        "odd key": {"type": "integer"},
        "prénom": {"const": "Zoë"},
        "2": {"type": "boolean"},
    },
}


@pytest.mark.parametrize(
    ("instance", "detail"),
    [
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}, {"price": 2}, {"price": -3}]},
            "$.items[2].price: -3 is less than the minimum 0",
            id="nested-path",
        ),
        pytest.param("order", '$: "order" is not of type object', id="root"),
        pytest.param({"id": "ord_1"}, '$: the required property "items" is missing', id="required"),
        pytest.param(
            {"id": "ord_1", "items": [{}]},
            '$.items[0]: the required property "price" is missing',
            id="required-nested",
        ),
        pytest.param(
            {"id": "ord_1", "items": []},
            "$.items: [] has 0 items, fewer than the minimum 1",
            id="min-items",
        ),
        pytest.param(
            {"id": "x", "items": [{"price": 1}]},
            '$.id: "x" does not match the pattern "^ord_[0-9]+$"',
            id="pattern",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "status": "lost"},
            '$.status: "lost" is not one of "open", "paid", "refunded"',
            id="enum",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "note": "n" * 5000},
            '$.note: "' + "n" * 80 + '..." has 5000 characters, more than the maximum 10',
            id="long-value-excerpted",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "tags": ["a", "a"]},
            '$.tags: ["a","a"] has items that are not unique',
            id="unique",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "odd key": 1.5},
            '$["odd key"]: 1.5 is not of type integer',
            id="odd-key",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "prénom": "Zoe"},
            '$.prénom: "Zoe" is not the expected value "Zoë"',
            id="unicode-key",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "2": "yes"},
            '$["2"]: "yes" is not of type boolean',
            id="digit-key-is-not-an-index",
        ),
        pytest.param(
            {"id": "ord_1", "items": [{"price": 1}], "extra": 1, "more": 2},
            '$: the property "extra" is not allowed',
            id="additional",
        ),
    ],
)
def test_the_first_error_reads_as_a_path_and_a_reason(instance: object, detail: str) -> None:
    assert compiled_ok(ORDER).first_error(instance) == detail


def test_the_first_error_does_not_depend_on_the_schemas_key_order() -> None:
    reordered = dict(reversed(list(ORDER.items())))
    instance = {"id": 1, "items": [], "note": 3, "status": "lost", "extra": True}
    assert compile_schema(reordered) is compile_schema(ORDER)
    assert compiled_ok(reordered).first_error(instance) == compiled_ok(ORDER).first_error(instance)


def test_a_deep_value_is_validated_or_refused_in_words() -> None:
    schema = compiled_ok({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})
    value: object = "leaf"
    for _ in range(MAX_DEPTH):
        value = [value]
    assert schema.first_error(value) is None
    for _ in range(100_000):
        value = [value]
    assert schema.first_error(value) == ("$: the value is nested too deeply to validate")


def test_a_deep_failure_keeps_the_start_and_end_of_its_path() -> None:
    schema = compiled_ok(nested(60, {"type": "integer"}, key="items"))
    value: object = "x"
    for _ in range(60):
        value = [value]
    detail = schema.first_error(value)
    assert detail is not None
    location, reason = detail.split(": ", 1)
    assert location.startswith("$[0][0]") and "..." in location and len(location) < 130
    assert reason == '"x" is not of type integer'


def test_a_value_that_is_not_json_is_a_failure_not_an_exception() -> None:
    assert compiled_ok({"type": "string"}).first_error(b"bytes") == (
        "$: the value cannot be validated: Unsupported type: 'bytes'"
    )
    assert compiled_ok({"type": "string"}).first_error(object()) == (
        "$: the value cannot be validated: Encoding objects of type object is unsupported"
    )


def test_the_cache_compiles_each_schema_once_and_stays_bounded() -> None:
    first = compile_schema({"const": "cache-probe"})
    assert compile_schema({"const": "cache-probe"}) is first
    assert compile_schema({"type": 12}) is compile_schema({"type": 12})
    for i in range(300):
        compile_schema({"const": i})
    assert compile_schema({"const": "cache-probe"}) is not first


class _EvictedMeanwhile(OrderedDict[bytes, Any]):
    """Entries that another thread's put() evicts between a get's read and its reorder."""

    def move_to_end(self, key: bytes, last: bool = True) -> None:
        del self[key]
        super().move_to_end(key, last)


def test_a_hit_evicted_by_another_thread_meanwhile_is_still_answered() -> None:
    # A hit takes no lock, so the race is real; made to happen here rather than waited for.
    cache = _Cache(entries=4, patterns=64)
    schema = compiled_ok({"type": "string"})
    cache.put(b'{"type":"string"}', schema)
    cache._items = _EvictedMeanwhile(cache._items)
    assert cache.get(b'{"type":"string"}') is schema
    assert cache.get(b'{"type":"string"}') is None


def test_the_cache_is_bounded_in_patterns_too() -> None:
    def patterned(tag: int) -> object:
        return {"properties": {f"p{i}": {"pattern": f"^{tag}-{i}$"} for i in range(MAX_PATTERNS)}}

    first = compile_schema(patterned(0))
    for tag in range(1, 9):
        compile_schema(patterned(tag))
    assert compile_schema(patterned(8)) is compile_schema(patterned(8))
    assert compile_schema(patterned(0)) is not first


def test_a_long_value_is_excerpted_in_the_librarys_words_too() -> None:
    schema = compiled_ok({"anyOf": [{"type": "integer"}, {"type": "null"}]})
    assert schema.first_error("z" * 1000) == (
        '$: "' + "z" * 80 + '..." is not valid under any of the schemas listed in the '
        "'anyOf' keyword"
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "items", "$ref", "pattern", "minimum", "enum", "x", "not"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(schema=json_values, instance=json_values)
def test_any_json_is_compiled_or_refused_and_never_raises(schema: object, instance: object) -> None:
    result = compile_schema(schema)
    if isinstance(result, CompiledSchema):
        detail = result.first_error(instance)
        assert detail is None or detail.startswith("$")
    else:
        assert result.detail()
