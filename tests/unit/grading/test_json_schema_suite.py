"""The official JSON-Schema-Test-Suite, draft 2020-12, against the grading core's schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlasso.grading.schemas import CompiledSchema, SchemaProblem, compile_schema

SUITE = Path(__file__).parents[2] / "support" / "vendor" / "json_schema_test_suite"

_REMOTE = "it references a document served on localhost:1234; remote references are refused"
_DIALECT = "its $schema is a custom metaschema on localhost:1234, which would be fetched"

# Deliberate differences from the suite, with why: each is asserted to be refused, naming the
# reference or dialect, never skipped.
REFUSED: dict[tuple[str, str], str] = {
    ("dynamicRef.json", "strict-tree schema, guards against misspelled properties"): _REMOTE,
    ("dynamicRef.json", "tests for implementation dynamic anchor and reference link"): _REMOTE,
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $defs first"): _REMOTE,
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $ref first"): _REMOTE,
    ("dynamicRef.json", "$ref to $dynamicRef finds detached $dynamicAnchor"): _REMOTE,
    ("refRemote.json", "remote ref"): _REMOTE,
    ("refRemote.json", "fragment within remote ref"): _REMOTE,
    ("refRemote.json", "anchor within remote ref"): _REMOTE,
    ("refRemote.json", "ref within remote ref"): _REMOTE,
    ("refRemote.json", "base URI change"): _REMOTE,
    ("refRemote.json", "base URI change - change folder"): _REMOTE,
    ("refRemote.json", "base URI change - change folder in subschema"): _REMOTE,
    ("refRemote.json", "root ref in remote ref"): _REMOTE,
    ("refRemote.json", "remote ref with ref to defs"): _REMOTE,
    ("refRemote.json", "Location-independent identifier in remote ref"): _REMOTE,
    ("refRemote.json", "retrieved nested refs resolve relative to their URI not $id"): _REMOTE,
    ("refRemote.json", "remote HTTP ref with different $id"): _REMOTE,
    ("refRemote.json", "remote HTTP ref with different URN $id"): _REMOTE,
    ("refRemote.json", "remote HTTP ref with nested absolute ref"): _REMOTE,
    ("refRemote.json", "$ref to $ref finds detached $anchor"): _REMOTE,
    ("vocabulary.json", "schema that uses custom metaschema with with no validation vocabulary"): (
        _DIALECT
    ),
    ("vocabulary.json", "ignore unrecognized optional vocabulary"): _DIALECT,
}


def _groups() -> list[Any]:
    """One pytest case per test group of every file, named `file: description`."""
    cases = []
    for path in sorted((SUITE / "draft2020-12").glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            name = f"{path.name}: {group['description']}"
            cases.append(pytest.param(path.name, group, id=name))
    return cases


GROUPS = _groups()


def test_the_suite_is_vendored_with_its_license() -> None:
    assert "Permission is hereby granted" in (SUITE / "LICENSE").read_text(encoding="utf-8")
    assert len(GROUPS) > 300


def test_every_listed_difference_is_a_group_of_the_suite() -> None:
    names = {(file, group["description"]) for file, group in (case.values for case in GROUPS)}
    assert set(REFUSED) <= names


@pytest.mark.parametrize(("file", "group"), GROUPS)
def test_group(file: str, group: dict[str, Any]) -> None:
    compiled = compile_schema(group["schema"])
    reason = REFUSED.get((file, group["description"]))
    if reason is not None:
        assert isinstance(compiled, SchemaProblem), reason
        assert "localhost:1234" in compiled.detail(), compiled.detail()
        return
    assert isinstance(compiled, CompiledSchema), compiled
    wrong = [
        test["description"]
        for test in group["tests"]
        if (compiled.first_error(test["data"]) is None) != test["valid"]
    ]
    assert wrong == []
