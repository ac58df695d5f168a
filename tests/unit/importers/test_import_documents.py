"""Reading files within bounds: YAML's aliases, nesting and size, JSON lists and JSON Lines,
CSV rows, and telling a file's format."""

from __future__ import annotations

import io
import time
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import BodyTooLarge, InvalidInput
from agentlasso.importers import csv_cases
from agentlasso.importers.documents import load_document, read_bounded, read_records
from agentlasso.importers.formats import detect_format
from agentlasso.importers.items import (
    MAX_REPORTED_ITEMS,
    ItemReport,
    NotImported,
    ReportList,
    js_string,
)
from agentlasso.importers.yaml_documents import YamlProblem, load_yaml


def laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines)


def test_a_billion_laughs_is_refused_in_milliseconds() -> None:
    started = time.perf_counter()
    with pytest.raises(YamlProblem, match="aliases expand"):
        load_yaml(laughs(30))
    assert time.perf_counter() - started < 1


def test_aliases_a_real_file_uses_are_fine() -> None:
    text = "defaults: &d {type: icontains, value: sorry}\ntests:\n" + "".join(
        f"  - vars: {{q: '{n}'}}\n    assert: [*d, *d]\n" for n in range(2_000)
    )
    document = load_yaml(text)
    assert len(document["tests"]) == 2_000
    assert document["tests"][5]["assert"][1] == {"type": "icontains", "value": "sorry"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: &a [*a]", "a loop"),
        ("a: *nowhere", "names no anchor"),
        ("a: 1\na: 2", "given twice"),
        ("a: !custom x", "not one promptfoo reads"),
        ("a: !!int x", "does not fit"),
        ("? [1, 2]\n: x", "must be a scalar"),
        ("a: [unclosed", "Not valid YAML"),
        ("--- 1\n--- 2", "one YAML document"),
        ("[" * 250 + "]" * 250, "Nested more than 200"),
        ("x: &x0 [1]\n" + "".join(f"x{n}: &x{n} [*x{n - 1}]\n" for n in range(1, 260)), "aliases"),
    ],
)
def test_yaml_that_promptfoo_would_not_load_or_that_is_past_a_bound(text: str, words: str) -> None:
    with pytest.raises(YamlProblem, match=words):
        load_yaml(text)


def test_a_yaml_problem_names_its_line() -> None:
    with pytest.raises(YamlProblem) as raised:
        load_yaml("tests:\n  - vars: {q: 1}\n  - vars: {q: 1, q: 2}\n")
    assert raised.value.line == 3


def test_a_document_is_read_whole_up_to_its_limit() -> None:
    assert read_bounded(io.BytesIO(b"\xef\xbb\xbfabc"), limit=6) == b"abc"
    with pytest.raises(BodyTooLarge):
        read_bounded(io.BytesIO(b"abcd"), limit=3)
    with pytest.raises(InvalidInput) as raised:
        load_document(b"a: 1\nb: \xff\n")
    assert raised.value.errors[0].line == 2
    assert load_document(b'{"tests": []}') == {"tests": []}
    with pytest.raises(InvalidInput, match="cannot be read"):
        load_document(b'{"tests": [1,]')


@pytest.mark.parametrize(
    ("body", "places"),
    [
        (b'[{"a": 1}, {"a": 2}]', [("/0", None), ("/1", None)]),
        (b'{"data": [{"a": 1}], "meta": {}}', [("/data/0", None)]),
        (b'{\n  "examples": [{"a": 1}]\n}', [("/examples/0", None)]),
        (b'{"a": 1}\n\n{"a": 2}\n', [("", 1), ("", 3)]),
    ],
)
def test_records_come_from_a_list_an_object_holding_one_or_json_lines(
    body: bytes, places: list[tuple[str, int | None]]
) -> None:
    records = list(read_records(io.BytesIO(body), ("data", "examples")))
    assert [(record.pointer, record.line) for record in records] == places
    assert [record.number for record in records] == list(range(1, len(places) + 1))


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "true"), (None, "null"), (3, "3"), (3.0, "3"), (2.5, "2.5"), ("x", "x"),
     (float("nan"), "NaN"), (float("-inf"), "-Infinity"), ([1, "a"], '[1,"a"]')],
)  # fmt: skip
def test_scalars_are_spelled_as_javascript_spells_them(value: Any, text: str) -> None:
    assert js_string(value) == text


@pytest.mark.parametrize(
    ("filename", "head", "detected"),
    [
        ("cases.csv", b"anything", "csv"),
        ("promptfooconfig.yaml", b"anything", "promptfoo"),
        ("", b"input,expected_output\nHi,Hello\n", "csv"),
        ("x.json", b'{"tests": [{"vars": {"q": 1}}]}', "promptfoo"),
        ("", b"tests:\n  - vars:\n      q: 1\n", "promptfoo"),
        ("x.jsonl", b'{"inputs": {"q": 1}, "outputs": {"a": 2}}', "langsmith"),
        ("x.json", b'{"data": [{"input": "q", "expectedOutput": "a"}], "meta": {}}', "langfuse"),
        ("x.jsonl", b'{"input": "q", "datasetName": "support"}', "langfuse"),
        ("x.jsonl", b'{"input": "q", "checks": []}', "jsonl"),
        ("", b'{"input": "q", "expectedOutput": "a"}', "jsonl"),
        ("", b'[{"q": "which tool?"}]', None),
        ("", b"hello", None),
    ],
)
def test_a_format_is_detected_only_when_one_fits(
    filename: str, head: bytes, detected: str | None
) -> None:
    assert detect_format(filename, head) == detected


@given(
    text=st.text(max_size=60),
    description=st.text(min_size=1, max_size=30),
    tags=st.lists(st.from_regex(r"[a-z0-9:_.-]{1,8}", fullmatch=True), max_size=3),
)
def test_a_csv_row_reads_back_as_the_case_it_was_written_from(
    text: str, description: str, tags: list[str]
) -> None:
    content = TestCaseContent(
        input=text, description=description, tags=tuple(dict.fromkeys(tags)), checks=()
    )
    body = csv_cases.header_row() + csv_cases.export_row(content)
    (item,) = csv_cases.read(io.BytesIO(body)).items
    (case,) = item.cases
    read = msgspec.convert({"checks_version": 1, **case}, TestCaseContent)
    assert read == content


def test_a_large_files_report_lists_what_was_not_imported_first() -> None:
    reports = ReportList()
    for number in range(1, 1_501):
        lost = (NotImported("assert 1 (python)", "it runs code"),) if number % 500 == 0 else ()
        reports.add(ItemReport(item=number, label=f"test {number}", cases=1, not_imported=lost))
    shown = reports.reports()
    assert len(shown) == MAX_REPORTED_ITEMS
    assert [r.item for r in shown if r.not_imported] == [500, 1_000, 1_500]
    assert [r.item for r in shown] == sorted(r.item for r in shown)
    assert reports.not_imported == 3 and reports.seen == 1_500
