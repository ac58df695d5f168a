"""Imports from other tools through the API: promptfoo, LangSmith and Langfuse files become
cases, the answer says per source item what was not imported, and a bad item saves nothing."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from tests.integration.test_import_export import all_cases, count_cases
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

YAML = {"content-type": "application/yaml"}
JSON = {"content-type": "application/json"}


async def import_file(
    client: httpx.AsyncClient, dataset_id: str, source_format: str, body: bytes,
    headers: dict[str, str] | None = None,
) -> httpx.Response:  # fmt: skip
    return await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases/import",
        params={"format": source_format},
        content=body,
        headers=headers or YAML,
    )


SUPPORT_CONFIG = b"""
description: support bot
prompts:
  - "Answer the customer: {{question}}"
providers:
  - echo
defaultTest:
  assert:
    - type: not-icontains
      value: guarantee
tests:
  - description: refund
    vars:
      question: My order arrived broken
    assert:
      - type: contains
        value: Refund
      - type: javascript
        value: output.length < 500
      - type: llm-rubric
        value: Apologises once
  - vars:
      question: Where is my parcel?
      locale: de-DE
    assert:
      - type: regex
        value: "\\\\d{5}"
"""


async def test_a_promptfoo_config_becomes_cases_and_says_what_was_left_out(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    response = await import_file(client, dataset["id"], "promptfoo", SUPPORT_CONFIG)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["imported"] == 2 and answer["format"] == "promptfoo"
    assert [note["what"] for note in answer["notes"]] == ["prompts", "providers"]
    first, second = answer["items"]
    assert first["label"] == "test 1" and first["cases"] == 1
    assert first["not_imported"] == [
        {"what": "assert 2 (javascript)", "why": "javascript asserts run code; write it as a check"}
    ]
    assert second["not_imported"] == []
    cases = await all_cases(client, dataset["id"])
    assert cases[0]["input"] == "My order arrived broken"
    assert cases[0]["description"] == "refund"
    assert [(c["type"], c.get("value"), c.get("regex", False)) for c in cases[0]["checks"]] == [
        ("output_not_contains", "guarantee", False),
        ("output_contains", "(?-i)Refund", True),
        ("llm_judge", None, False),
    ]
    assert cases[1]["input"] == {"question": "Where is my parcel?", "locale": "de-DE"}
    assert cases[1]["checks"][1] == {
        "id": "c2", "type": "output_contains", "value": "(?-i)\\d{5}", "regex": True,
        "severity": "critical",
    }  # fmt: skip


async def test_a_test_that_cannot_be_read_saves_nothing_and_is_named(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = b"- vars: {q: one}\n- vars: {q: two}\n  assert:\n    - value: no type\n- 42\n"
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", body), 422)
    assert problem["errors"] == [
        {"item": 2, "pointer": "/1/assert/0/type", "detail": "An assert needs a type."},
        {"item": 3, "pointer": "/2", "detail": "A test is an object with vars and assert."},
    ]
    assert "test 2" in problem["detail"] and "Nothing was imported" in problem["detail"]
    assert await count_cases(client, dataset["id"]) == 0


async def test_a_case_a_check_refuses_names_the_assert_it_came_from(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = (
        b"tests:\n  - vars: {q: x}\n    assert:\n      - type: icontains\n        value: ok\n"
        + (b"      - type: llm-rubric\n        value: '" + b"x" * 10_001 + b"'\n")
    )
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", body), 422)
    (error,) = problem["errors"]
    assert error["item"] == 1
    assert error["pointer"] == "/tests/0/assert/1/criterion"
    assert await count_cases(client, dataset["id"]) == 0


async def test_yaml_that_is_not_yaml_names_its_line(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    body = b"tests:\n  - vars: {q: x}\n  - vars: [unclosed\n"
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", body), 422)
    (error,) = problem["errors"]
    assert error["line"] == 4 and "Not valid YAML" in error["detail"]


async def test_a_billion_laughs_is_refused_quickly(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 20):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("tests:\n  - vars: {q: *a19}")
    body = "\n".join(lines).encode()
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", body), 422)
    assert "aliases expand" in problem["errors"][0]["detail"]
    loop = b"tests: &t\n  - vars: {q: *t}\n"
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", loop), 422)
    assert "loop" in problem["errors"][0]["detail"]


def jsonl(records: list[Any]) -> bytes:
    return b"".join(msgspec.json.encode(record) + b"\n" for record in records)


async def test_langsmith_examples_become_cases(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    examples = [
        {
            "id": "7d0c0a8e-0000-0000-0000-000000000001",
            "inputs": {"question": "How do I reset my password?"},
            "outputs": {"answer": "Use the reset link on the sign-in page."},
            "metadata": {"source": "tickets"},
        },
        {"inputs": {"question": "Refund?", "order": 42}, "outputs": {"a": 1, "b": [2]}},
        {"inputs": {}, "outputs": {"answer": "nothing asked"}},
    ]
    response = await import_file(client, dataset["id"], "langsmith", jsonl(examples), JSON)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["imported"] == 2
    assert answer["items"][0]["not_imported"] == [
        {"what": "metadata.source", "why": "a test case has no metadata"}
    ]
    assert answer["items"][2]["cases"] == 0
    assert "no inputs" in answer["items"][2]["not_imported"][0]["why"]
    cases = await all_cases(client, dataset["id"])
    assert cases[0]["input"] == "How do I reset my password?"
    assert cases[0]["expected_output"] == "Use the reset link on the sign-in page."
    assert cases[1]["input"] == {"question": "Refund?", "order": 42}
    assert cases[1]["expected_output"] == '{"a":1,"b":[2]}'


async def test_langfuse_items_from_its_api_become_cases(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    page = {
        "data": [
            {
                "id": "item-1",
                "status": "ACTIVE",
                "input": {"messages": [{"role": "user", "content": "Cancel my plan"}]},
                "expectedOutput": "Confirms the cancellation date",
                "metadata": {"description": "cancellation", "owner": "ops"},
                "datasetName": "support",
            },
            {"id": "item-2", "status": "ARCHIVED", "input": "old", "datasetName": "support"},
        ],
        "meta": {"page": 1, "limit": 50, "totalItems": 2, "totalPages": 1},
    }
    body = msgspec.json.encode(page)
    response = await import_file(client, dataset["id"], "langfuse", body, JSON)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["imported"] == 1
    assert answer["items"][1]["not_imported"][0]["why"] == "it is archived in Langfuse"
    (case,) = await all_cases(client, dataset["id"])
    assert case["input"] == {"messages": [{"role": "user", "content": "Cancel my plan"}]}
    assert case["expected_output"] == "Confirms the cancellation date"
    assert case["description"] == "cancellation"


async def test_a_langfuse_line_that_is_not_json_is_named_by_its_line(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = b'{"input": "a"}\n\n{"input": \n'
    problem = assert_problem(await import_file(client, dataset["id"], "langfuse", body, JSON), 422)
    (error,) = problem["errors"]
    assert error["line"] == 3 and error["item"] == 2
    assert "Not valid JSON" in error["detail"]


async def test_an_unknown_format_is_refused_naming_the_parameter(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    response = await import_file(client, dataset["id"], "excel", b"x")
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["parameter"] == "format"
