"""LangSmith dataset examples (`inputs`, `outputs`, `metadata`), as a JSON list, an object with
`examples`, or JSON Lines.

`inputs` with one key is that value as the input; with several, the object. `outputs` becomes
the expected output the AI judge compares with: one key's value as text, else compact JSON.
The example's splits (`metadata.dataset_split`) become tags.
"""

from __future__ import annotations

from typing import IO, Any

from agentlasso.importers.items import ImportItem, Source
from agentlasso.importers.records import Reading, as_input, as_text, record_source

_SPLITS = "dataset_split"


def read(file: IO[bytes]) -> Source:
    """The examples of a LangSmith dataset export."""
    return record_source(file, ("examples",), "example", _example)


def _example(reading: Reading) -> ImportItem:
    example: dict[str, Any] = reading.record.value
    inputs = example.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        return reading.skip("it has no inputs, and a test case needs an input")
    if len(inputs) == 1:
        ((key, value),) = inputs.items()
        reading.put("input", as_input(value), f"inputs/{key}")
    else:
        reading.put("input", inputs, "inputs")
    outputs = example.get("outputs")
    if isinstance(outputs, dict) and len(outputs) == 1:
        ((key, value),) = outputs.items()
        reading.put("expected_output", as_text(value), f"outputs/{key}")
    elif outputs not in (None, {}, ""):
        reading.put("expected_output", as_text(outputs), "outputs")
    metadata = example.get("metadata")
    reading.kept_keys = (_SPLITS,)
    reading.metadata(metadata, _splits(metadata, example.get("split")))
    return reading.item()


def _splits(metadata: Any, split: Any) -> list[str]:
    """The example's splits, from its metadata or a top-level `split`."""
    found = metadata.get(_SPLITS) if isinstance(metadata, dict) else None
    found = found if found is not None else split
    if isinstance(found, str):
        return [found]
    if isinstance(found, list):
        return [value for value in found if isinstance(value, str)]
    return []
