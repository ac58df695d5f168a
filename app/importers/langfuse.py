"""Langfuse dataset items (`input`, `expectedOutput`, `metadata`), as its API lists them
(`{"data": [...]}`), a JSON list, or JSON Lines.

`input` is the case's input (text or an object as it is, anything else as JSON text);
`expectedOutput` the expected output (text, or compact JSON). Archived items are not imported.
"""

from __future__ import annotations

from typing import IO, Any

from agentlasso.importers.items import ImportItem, Source
from agentlasso.importers.records import Reading, as_input, as_text, record_source


def read(file: IO[bytes]) -> Source:
    """The items of a Langfuse dataset."""
    return record_source(file, ("data", "items"), "item", _item)


def _item(reading: Reading) -> ImportItem:
    item: dict[str, Any] = reading.record.value
    if item.get("status") == "ARCHIVED":
        return reading.skip("it is archived in Langfuse")
    value = item.get("input")
    if value is None or value == "":
        return reading.skip("it has no input, and a test case needs an input")
    reading.put("input", as_input(value), "input")
    expected = item.get("expectedOutput", item.get("expected_output"))
    if expected is not None and expected != "":
        source = "expectedOutput" if "expectedOutput" in item else "expected_output"
        reading.put("expected_output", as_text(expected), source)
    reading.metadata(item.get("metadata"), [])
    return reading.item()
