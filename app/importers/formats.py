"""The formats an import reads, and telling which one a file is when that is plain."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import IO, Literal, get_args

from agentlasso.importers import csv_cases, langfuse, langsmith, promptfoo
from agentlasso.importers.items import Source

ImportFormat = Literal["jsonl", "csv", "promptfoo", "langsmith", "langfuse"]
FORMATS: tuple[str, ...] = get_args(ImportFormat)
FORMAT_NAMES = {
    "jsonl": "JSON Lines (AgentLasso)",
    "csv": "CSV (AgentLasso columns)",
    "promptfoo": "promptfoo test file or config (YAML or JSON)",
    "langsmith": "LangSmith dataset export (JSON or JSON Lines)",
    "langfuse": "Langfuse dataset items (JSON or JSON Lines)",
}
# As a page's heading names a file: "Import from promptfoo".
SHORT_NAMES = {"jsonl": "JSON Lines", "csv": "CSV", "promptfoo": "promptfoo",
               "langsmith": "LangSmith", "langfuse": "Langfuse"}  # fmt: skip
# JSON Lines is the import's own format: app/services/transfer.py streams it line by line.
READERS: dict[str, Callable[[IO[bytes]], Source]] = {
    "csv": csv_cases.read,
    "promptfoo": promptfoo.read,
    "langsmith": langsmith.read,
    "langfuse": langfuse.read,
}

# What marks a file as one tool's (JSON Lines of our own may also say `expectedOutput`).
_MARKS = {
    "promptfoo": re.compile(rb'"?\b(?:vars|assert|defaultTest|prompts|providers)"?\s*:'),
    "langsmith": re.compile(rb'"(?:inputs|outputs|source_run_id)"\s*:'),
    "langfuse": re.compile(
        rb'"(?:datasetName|datasetId|sourceTraceId|sourceObservationId)"\s*:|^\s*\{\s*"data"\s*:'
    ),
}


def detect_format(filename: str, head: bytes) -> str | None:
    """The format of a file, from its name and first bytes, when only one fits; else None."""
    name = filename.lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".yaml", ".yml")):
        return "promptfoo"  # the one format here that is YAML
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if _is_csv_header(head.split(b"\n", 1)[0]):
        return "csv"
    fits = [fmt for fmt, marks in _MARKS.items() if marks.search(head)]
    if len(fits) == 1:
        return fits[0]
    if not fits and head[:1] == b"{" and re.search(rb'"(?:input|conversation)"\s*:', head):
        return "jsonl"
    return None


def _is_csv_header(line: bytes) -> bool:
    names = {cell.strip().strip(b'"') for cell in line.split(b",")}
    return b"," in line and not line.startswith((b"{", b"[")) and bool(names & _CSV_NAMES)


_CSV_NAMES = {b"input", b"input_json", b"conversation"}
