"""Realistic promptfoo files, each one promptfoo itself accepts (`promptfoo validate`), imported
through the API: per test, the cases made, the checks they carry and what was not imported."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.integration.test_import_export import all_cases
from tests.integration.test_tool_imports import JSON, YAML, import_file
from tests.support import promptfoo
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "promptfoo"
# Per test: how many cases, the check types of its (first) case, and what was not imported.
Expected = list[tuple[int, list[str], list[str]]]
NOT_IN_DEFAULT = ["output_not_contains", "latency_below"]
EXPECTED: dict[str, Expected] = {
    "support_bot.yaml": [
        (1, [*NOT_IN_DEFAULT, "output_contains", "output_contains", "llm_judge"],
         ["assert 4 (javascript)"]),
        (1, [*NOT_IN_DEFAULT, "output_not_contains", "output_not_contains"],
         ["assert 3 (python)"]),
        (2, [*NOT_IN_DEFAULT, "llm_judge"], ["assert 1 (g-eval) threshold"]),
        (1, ["output_matches_schema", "output_matches_schema"], ["threshold"]),
        (1, [*NOT_IN_DEFAULT, "tool_args_valid"], ["assert 2 (similar)", "assert 3 (cost)"]),
    ],
    "json_tools.yaml": [
        (1, ["output_valid_json", "output_matches_schema", "output_equals", "output_contains"],
         []),
        (1, ["output_valid_json", "output_contains", "output_not_contains"],
         ["assert 1 (assert-set) threshold", "assert 2 (not-equals)"]),
        (1, [], ["defaultTest assert 1 (is-json)", "assert 1 (contains)"]),
        (1, ["output_valid_json", "output_contains"], ["assert 1 (regex)", "assert 3 (webhook)"]),
    ],
    "tests_only.yaml": [
        (1, ["output_contains"], ["assert 2 (rouge-n)"]),
        (0, [], ["test 2", "var question"]),
        (1, ["output_not_contains"], ["assert 2 (perplexity)"]),
    ],
    "chat_config.json": [
        (1, ["output_contains", "llm_judge", "latency_below"], []),
        (1, ["output_equals"], ["assert 2 (moderation)"]),
    ],
}  # fmt: skip


def promptfoo_config(name: str) -> Path:
    """A config promptfoo validates: the file itself, or a config naming a test file."""
    if name != "tests_only.yaml":
        return FIXTURES / name
    return FIXTURES / "tests_config.yaml"


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_a_promptfoo_file_promptfoo_accepts_imports_as_it_reads(
    client: httpx.AsyncClient, promptfoo_installed: Path, name: str
) -> None:
    valid, said = promptfoo.validate(promptfoo_config(name))
    assert valid, said
    dataset = await create_dataset(client)
    body = (FIXTURES / name).read_bytes()
    headers = JSON if name.endswith(".json") else YAML
    response = await import_file(client, dataset["id"], "promptfoo", body, headers)
    assert response.status_code == 201, response.text
    answer = response.json()
    expected = EXPECTED[name]
    assert answer["imported"] == sum(cases for cases, _, _ in expected)
    reports = answer["items"]
    assert [report["label"] for report in reports] == [
        f"test {n + 1}" for n in range(len(expected))
    ]
    cases = iter(await all_cases(client, dataset["id"]))
    for report, (count, check_types, not_imported) in zip(reports, expected, strict=True):
        assert report["cases"] == count, report
        assert [lost["what"] for lost in report["not_imported"]] == not_imported, report
        made = [next(cases) for _ in range(count)]
        for case in made:
            assert [check["type"] for check in case["checks"]] == check_types, report


async def test_a_config_whose_tests_are_in_another_file_says_to_import_that_file(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = (FIXTURES / "tests_config.yaml").read_bytes()
    problem = assert_problem(await import_file(client, dataset["id"], "promptfoo", body), 422)
    (error,) = problem["errors"]
    assert error["pointer"] == "/tests"
    assert "import that file itself" in error["detail"]


async def test_promptfoos_meaning_is_kept_in_the_checks(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    body = (FIXTURES / "support_bot.yaml").read_bytes()
    assert (await import_file(client, dataset["id"], "promptfoo", body)).status_code == 201
    refund, dates, german, french, status, _tools = await all_cases(client, dataset["id"])
    assert refund["input"] == "My order #1234 arrived broken, I want my money back"
    assert refund["checks"][1] == {"id": "c2", "type": "latency_below", "ms": 3000,
                                   "total": False, "severity": "critical"}  # fmt: skip
    assert refund["checks"][3]["value"] == "#1234"  # no letters: plain text means the same
    assert dates["checks"][2]["value"] == "(?-i)Guaranteed"  # promptfoo's contains has case
    assert (german["input"], french["input"]) == (
        "Hallo, wo ist meine Bestellung?",
        "Bonjour, où est ma commande ?",
    )
    assert status["input"] == {"question": "status of order 1234 as JSON", "format": "json"}
    assert status["checks"][1]["schema"] == {"const": {"order": "1234", "status": "shipped"}}
