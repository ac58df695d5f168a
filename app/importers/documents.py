"""Whole documents (YAML or JSON) and lists of records (a JSON list, or JSON Lines), read
within bounds: a file's size, its nesting, and what YAML aliases expand to.

A YAML alias is a reference, so PyYAML loads a "billion laughs" document quickly and small;
it is walking it (to encode a case, say) that would take forever. So a document with aliases is
measured first, each shared node once, and refused when it would expand past a bound.
"""

from __future__ import annotations

import base64
import datetime
import math
from collections.abc import Iterator
from typing import IO, Any

import msgspec
import yaml

from agentlasso.errors import BodyTooLarge, FieldError, InvalidInput

# A document is read whole, and its objects take several times its size in memory.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_DOCUMENT_DEPTH = 200
# What aliases may add: the document's own nodes ten times over, and this many more.
ALIAS_GROWTH = 10
ALIAS_ALLOWANCE = 100_000
_BOM = b"\xef\xbb\xbf"
# The C loader when PyYAML has it (several times faster), with the same safe constructors.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bounded(file: IO[bytes], limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The whole file, or BodyTooLarge past the limit."""
    data = file.read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge(f"This format is read whole: at most {limit // 1024 // 1024} MiB.")
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def decode_text(data: bytes) -> str:
    """The file as text; InvalidInput naming the line when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _unreadable(f"Not UTF-8 text: {exc.reason} at byte {exc.start}.", line) from exc


def load_document(data: bytes) -> Any:
    """A YAML or JSON document as plain values (JSON's types), within the bounds above."""
    try:
        return _load(data)
    except RecursionError as exc:  # JSON nested a thousand deep: no case could hold it
        raise _unreadable(f"Nested more than {MAX_DOCUMENT_DEPTH} levels deep.", None) from exc


def _load(data: bytes) -> Any:
    text = decode_text(data)
    if text.lstrip()[:1] in ("{", "["):
        try:
            return msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            json_error = exc  # YAML's flow style is looser than JSON: let YAML try it too
    else:
        json_error = None
    try:
        document = yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise _unreadable(f"Not valid JSON: {json_error}", None) from exc
        raise _yaml_problem(exc) from exc
    if "*" in text:  # an alias needs its `*`; without one every node is its own
        check_expansion(document)
    return plain(document)


def _yaml_problem(exc: yaml.YAMLError) -> InvalidInput:
    mark = getattr(exc, "problem_mark", None)
    line = None if mark is None else mark.line + 1
    problem = getattr(exc, "problem", None) or str(exc)
    return _unreadable(f"Not valid YAML: {problem}.", line)


def _unreadable(detail: str, line: int | None) -> InvalidInput:
    error = FieldError(pointer="/", detail=detail, line=line)
    where = f" (line {line})" if line else ""
    return InvalidInput(f"Nothing was imported: the file cannot be read{where}.", [error])


def check_expansion(document: Any) -> None:
    """InvalidInput when aliases make the document recursive, too deep, or too large."""
    memo: dict[int, int] = {}
    distinct = _count_distinct(document, set())
    budget = distinct * ALIAS_GROWTH + ALIAS_ALLOWANCE
    if _expanded(document, memo, set(), 0, budget) > budget:
        raise _too_large(budget)


def _count_distinct(node: Any, seen: set[int]) -> int:
    stack, count = [node], 0
    while stack:
        current = stack.pop()
        if isinstance(current, dict | list):
            if id(current) in seen:
                continue
            seen.add(id(current))
            stack.extend(current.values() if isinstance(current, dict) else current)
        count += 1
    return count


def _expanded(node: Any, memo: dict[int, int], active: set[int], depth: int, budget: int) -> int:
    """How many nodes the document has once every alias is expanded (past the budget: stops)."""
    if not isinstance(node, dict | list):
        return 1
    key = id(node)
    if key in memo:
        return memo[key]
    if key in active:
        raise _unreadable("A YAML alias refers to a node that contains it (a loop).", None)
    if depth > MAX_DOCUMENT_DEPTH:
        raise _unreadable(f"Nested more than {MAX_DOCUMENT_DEPTH} levels deep.", None)
    active.add(key)
    total = 1
    for child in node.values() if isinstance(node, dict) else node:
        total += _expanded(child, memo, active, depth + 1, budget)
        if total > budget:
            raise _too_large(budget)
    active.discard(key)
    memo[key] = total
    return total


def _too_large(budget: int) -> InvalidInput:
    return _unreadable(
        f"YAML aliases expand this document past {budget:,} values; write the repeated parts "
        "out, or use fewer aliases of aliases.",
        None,
    )


def plain(value: Any) -> Any:
    """A loaded value in JSON's types: dates as ISO text, mapping keys as text, sets as lists."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {key_text(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [plain(item) for item in items]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def key_text(key: Any) -> str:
    """A mapping key as JavaScript would spell it (YAML allows `1:` or `true:` as keys)."""
    if isinstance(key, str):
        return key
    if isinstance(key, datetime.date):
        return key.isoformat()
    return js_string(key)


def js_string(value: Any) -> str:
    """A scalar as JavaScript's String() spells it (promptfoo compares such strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) else msgspec.json.encode(value).decode()


class Record(msgspec.Struct, frozen=True):
    """One record of a list: its number, its line (JSON Lines), its pointer, its value."""

    number: int
    line: int | None
    pointer: str
    value: Any


def read_records(file: IO[bytes], list_keys: tuple[str, ...]) -> Iterator[Record]:
    """The records of a JSON list, of an object holding one under one of `list_keys`, or of
    JSON Lines (a line that is not JSON is a record of None, for the reader to name)."""
    head = file.read(4096)
    file.seek(0)
    stripped = head.removeprefix(_BOM).lstrip()
    if stripped[:1] == b"[" or _holds_list(file, list_keys):
        yield from _document_records(read_bounded(file), list_keys)
        return
    yield from _line_records(file)


def _holds_list(file: IO[bytes], list_keys: tuple[str, ...]) -> bool:
    """Whether the file is one JSON object holding the list (else it is JSON Lines)."""
    first = file.readline(MAX_DOCUMENT_BYTES).removeprefix(_BOM)
    file.seek(0)
    try:
        value = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return True  # a pretty-printed object: only the whole file is JSON
    return isinstance(value, dict) and any(isinstance(value.get(k), list) for k in list_keys)


def _document_records(data: bytes, list_keys: tuple[str, ...]) -> Iterator[Record]:
    document = load_document(data)
    prefix = ""
    if isinstance(document, dict):
        key = next((k for k in list_keys if isinstance(document.get(k), list)), None)
        if key is None:
            names = " or ".join(f"`{k}`" for k in list_keys)
            raise _unreadable(f"Expected a JSON list, or an object with a list in {names}.", None)
        document, prefix = document[key], f"/{key}"
    if not isinstance(document, list):
        raise _unreadable("Expected a JSON list of records.", None)
    for index, value in enumerate(document):
        yield Record(index + 1, None, f"{prefix}/{index}", value)


def _line_records(file: IO[bytes]) -> Iterator[Record]:
    number = 0
    for line_number, raw in enumerate(file, start=1):
        line = raw.removeprefix(_BOM) if line_number == 1 else raw
        if not line.strip():
            continue
        number += 1
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            value = NotJson(str(exc))
        yield Record(number, line_number, "", value)


class NotJson(msgspec.Struct, frozen=True):
    """A line of JSON Lines that does not parse, and why."""

    error: str
