"""JSON bodies read once, strictly, without holding the event loop.

Litestar converts request bodies leniently (0 becomes false, "55" becomes 55), so a client's
mistake would be read as something it did not say, and the API would accept what its own
description forbids. So before a handler runs, its body is decoded here, strictly, against the
handler's own body type, and the decoded value is handed to Litestar, which then only passes
it on (it converts an instance of the right type to itself).

One leniency stays, because JSON itself has it: a whole number written as a float (`70.0`, as
Python's json writes a float that happens to be whole) is a JSON Schema integer, so an integer
field takes it. `70.5` is still refused.

A large body (a CI batch of up to 10,000 results) is decoded a slice of its list at a time,
letting other requests run between slices, and with the garbage collector paused: the
collector walking every object decoded so far is most of a large decode's time otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Request
from litestar.handlers import HTTPRouteHandler
from litestar.utils.scope.state import ScopeState

from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.json_nesting import TOO_DEEP, too_deep
from agentlasso.errors import FieldError, InvalidInput

# Bodies above this size are decoded a slice at a time; a slice is this many list items.
SLICED_ABOVE_BYTES = 1024 * 1024
SLICE_ITEMS = 2_000
DEPTH_ON_THREAD_ABOVE_BYTES = 256 * 1024
_FLOAT_FOR_INT = "Expected `int`, got `float`"


async def read_bodies_strictly(request: Request[Any, Any, Any]) -> None:
    """Before-request hook: the body as its handler's type, or a 422 naming the field."""
    handler = request.route_handler
    assert isinstance(handler, HTTPRouteHandler)
    if "data" not in handler.parsed_fn_signature.parameters:
        return
    raw = await request.body()
    await refuse_deep_nesting(raw)
    reader = _reader(handler)
    if reader is None or not raw.strip():
        return  # an empty body is Litestar's to refuse, as a 400
    try:
        if len(raw) > SLICED_ABOVE_BYTES and reader.list_field is not None:
            value = await reader.read_sliced(raw)
        else:
            value = reader.read(raw)
    except InvalidInput:
        if not _is_json(raw):
            return  # the shape failed before the syntax was seen whole: Litestar's 400 says so
        raise
    except msgspec.DecodeError:
        return  # not JSON at all: Litestar's own 400 says so
    ScopeState.from_scope(request.scope).json = value


async def refuse_deep_nesting(raw: bytes) -> None:
    """InvalidInput naming where the body nests too deeply to be decoded safely; a large body
    is looked at on a thread, so the loop goes on between the check's steps."""
    if len(raw) > DEPTH_ON_THREAD_ABOVE_BYTES:
        pointer = await asyncio.to_thread(too_deep, raw)
    else:
        pointer = too_deep(raw)
    if pointer is not None:
        error = FieldError(pointer=pointer or "/", detail=TOO_DEEP)
        raise InvalidInput("The request is not valid.", [error])


@dataclass(frozen=True)
class _BodyReader:
    """Strict decoding of one body type (and of the items of its longest list, if it has one)."""

    body_type: Any
    decoder: msgspec.json.Decoder[Any]
    list_field: str | None
    item_type: Any

    def read(self, raw: bytes) -> Any:
        with _collector_paused():
            return _strictly(raw, self.decoder, self.body_type)

    async def read_sliced(self, raw: bytes) -> Any:
        assert self.list_field is not None
        try:
            parts = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
            raw_items = msgspec.json.decode(
                parts.pop(self.list_field, b"[]"), type=list[msgspec.Raw]
            )
        except msgspec.ValidationError:
            return self.read(raw)  # not an object with a list there: the whole decode says so
        items = []
        item_decoder = msgspec.json.Decoder(self.item_type, strict=True)
        for start in range(0, len(raw_items), SLICE_ITEMS):
            with _collector_paused():
                for index in range(start, min(start + SLICE_ITEMS, len(raw_items))):
                    prefix = f"/{self.list_field}/{index}"
                    items.append(_strictly(raw_items[index], item_decoder, self.item_type, prefix))
            await asyncio.sleep(0)  # let other requests run between slices
        rest = {name: msgspec.json.decode(part) for name, part in parts.items()}
        try:
            return msgspec.convert({**rest, self.list_field: items}, self.body_type, strict=True)
        except msgspec.ValidationError as exc:
            raise _invalid(exc) from None


@functools.cache
def _reader(handler: HTTPRouteHandler) -> _BodyReader | None:
    """How to read the handler's JSON body; None when it takes no typed body."""
    body = handler.parsed_fn_signature.parameters.get("data")
    if body is None or body.annotation is Any:
        return None
    body_type = body.annotation
    list_field, item_type = _longest_list(msgspec.inspect.type_info(body_type))
    return _BodyReader(
        body_type=body_type,
        decoder=msgspec.json.Decoder(body_type, strict=True),
        list_field=list_field,
        item_type=item_type,
    )


def _longest_list(info: msgspec.inspect.Type) -> tuple[str | None, Any]:
    """The body's list field that may hold the most items, and its item type."""
    if not isinstance(info, msgspec.inspect.StructType):
        return None, None
    lists = [
        (field.type.max_length or 0, field.encode_name, field.type.item_type)
        for field in info.fields
        if isinstance(field.type, msgspec.inspect.ListType)
    ]
    if not lists:
        return None, None
    _, name, item_info = max(lists, key=lambda found: found[0])
    return name, _python_type(item_info)


def _python_type(info: msgspec.inspect.Type) -> Any:
    if isinstance(info, msgspec.inspect.StructType):
        return info.cls
    if isinstance(info, msgspec.inspect.UnionType):
        members = tuple(_python_type(member) for member in info.types)
        return functools.reduce(lambda left, right: left | right, members)
    return Any


def _strictly(raw: bytes, decoder: msgspec.json.Decoder[Any], type_: Any, prefix: str = "") -> Any:
    """The value decoded strictly, whole floats taken as ints; InvalidInput naming the field."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        if not str(exc).startswith(_FLOAT_FOR_INT):
            raise _invalid(exc, prefix) from None
    value = _whole_floats_as_ints(msgspec.json.decode(raw), msgspec.inspect.type_info(type_))
    try:
        return msgspec.convert(value, type_, strict=True)
    except msgspec.ValidationError as exc:
        raise _invalid(exc, prefix) from None


def _invalid(exc: msgspec.ValidationError, prefix: str = "") -> InvalidInput:
    error = field_error_from_msgspec(exc)
    inner = error.pointer or "/"
    pointer = prefix + (inner if inner != "/" else "") if prefix else inner
    return InvalidInput(
        "The request is not valid.", [FieldError(pointer=pointer, detail=error.detail)]
    )


def _is_json(raw: bytes) -> bool:
    try:
        msgspec.json.decode(raw, type=msgspec.Raw)
    except msgspec.DecodeError:
        return False
    return True


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a body decodes: it would walk everything decoded so far,
    again and again, for most of the decode's time. Decoded bodies hold no cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _whole_floats_as_ints(value: Any, info: msgspec.inspect.Type) -> Any:
    """The decoded JSON value with every whole float that `info` types as an int made one."""
    inspect = msgspec.inspect
    if isinstance(info, inspect.IntType):
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(info, inspect.UnionType):
        return _whole_floats_as_ints(value, _member_for(value, info))
    if isinstance(info, inspect.StructType) and isinstance(value, dict):
        for field in info.fields:
            if field.encode_name in value:
                value[field.encode_name] = _whole_floats_as_ints(
                    value[field.encode_name], field.type
                )
    elif isinstance(info, inspect.ListType | inspect.VarTupleType) and isinstance(value, list):
        return [_whole_floats_as_ints(item, info.item_type) for item in value]
    elif isinstance(info, inspect.DictType) and isinstance(value, dict):
        return {key: _whole_floats_as_ints(item, info.value_type) for key, item in value.items()}
    return value


def _member_for(value: Any, union: msgspec.inspect.UnionType) -> msgspec.inspect.Type:
    """The member of a union that a value would be decoded as (Any when none is clear)."""
    for member in union.types:
        if isinstance(member, msgspec.inspect.IntType) and isinstance(value, float):
            return member
        if isinstance(member, msgspec.inspect.StructType) and isinstance(value, dict):
            tag = value.get(member.tag_field) if member.tag_field else None
            if member.tag_field is None or tag == member.tag:
                return member
    return msgspec.inspect.AnyType()
