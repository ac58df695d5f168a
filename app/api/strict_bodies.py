"""JSON bodies read strictly: a value of the wrong type is refused, never coerced.

Litestar converts request bodies leniently (0 becomes false, "55" becomes 55), so a client's
mistake would be read as something it did not say, and the API would accept what its own
description forbids. Before a handler runs, its body is decoded again, strictly, against the
handler's own body type; the lenient reading then only ever sees what the strict one accepted.

One leniency stays, because JSON itself has it: a whole number written as a float (`70.0`, as
Python's json writes a float that happens to be whole) is a JSON Schema integer, so an integer
field takes it. `70.5` is still refused.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from litestar import Request
from litestar.handlers import HTTPRouteHandler

from app.errors import InvalidInput, field_error_from_msgspec


async def refuse_lax_bodies(request: Request[Any, Any, Any]) -> None:
    """Before-request hook: a 422 naming the field when the body is not exactly its type."""
    handler = request.route_handler
    assert isinstance(handler, HTTPRouteHandler)
    decoder = _decoder(handler)
    if decoder is None:
        return
    raw = await request.body()
    if not raw.strip():
        return  # an empty body is Litestar's to refuse, as a 400
    try:
        decoder.decode(raw)
    except msgspec.ValidationError as exc:
        if not _is_json(raw):
            return  # the shape failed before the syntax was seen whole: Litestar's 400 says so
        if str(exc).startswith(_FLOAT_FOR_INT):
            _refuse_unless_whole_numbers(raw, decoder.type)
            return
        raise _invalid(exc) from None
    except msgspec.DecodeError:
        return  # not JSON at all: Litestar's own 400 says so


_FLOAT_FOR_INT = "Expected `int`, got `float`"


def _invalid(exc: msgspec.ValidationError) -> InvalidInput:
    return InvalidInput("The request is not valid.", [field_error_from_msgspec(exc)])


def _refuse_unless_whole_numbers(raw: bytes, body_type: Any) -> None:
    """Strictly again, with each whole float where the type wants an int read as that int."""
    value = _whole_floats_as_ints(msgspec.json.decode(raw), msgspec.inspect.type_info(body_type))
    try:
        msgspec.convert(value, body_type, strict=True)
    except msgspec.ValidationError as exc:
        raise _invalid(exc) from None


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


def _is_json(raw: bytes) -> bool:
    try:
        msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return False
    return True


@functools.cache
def _decoder(handler: HTTPRouteHandler) -> msgspec.json.Decoder[Any] | None:
    """A strict decoder of the handler's JSON body type; None when it takes no typed body."""
    body = handler.parsed_fn_signature.parameters.get("data")
    if body is None or body.annotation is Any:
        return None
    return msgspec.json.Decoder(body.annotation, strict=True)
