"""Whole documents (YAML or JSON) and lists of records (a JSON list, or JSON Lines), read
within bounds: a file's size, its nesting, and (app/importers/yaml_documents.py) what YAML
aliases expand to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import msgspec

from agentlasso.errors import BodyTooLarge, FieldError, InvalidInput
from agentlasso.importers.yaml_documents import MAX_DOCUMENT_DEPTH, YamlProblem, load_yaml

# A document is read whole, and its objects take several times its size in memory.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"


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
        return load_yaml(text)
    except YamlProblem as exc:
        if json_error is not None:
            raise _unreadable(f"Not valid JSON: {json_error}", None) from exc
        raise _unreadable(exc.detail, exc.line) from exc


def _unreadable(detail: str, line: int | None) -> InvalidInput:
    error = FieldError(pointer="/", detail=detail, line=line)
    where = f" (line {line})" if line else ""
    return InvalidInput(f"Nothing was imported: the file cannot be read{where}.", [error])


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
