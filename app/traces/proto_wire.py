"""An OTLP protobuf request walked on the wire, counting its values before anything is built.

Protobuf's parser builds every value it meets: a 32 MB request of empty array elements is 16
million of them. Walking the wire format reads only tags and lengths, stops at the first
limit passed (so the walk costs at most the limit), and finds the span ids `check` needs.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentlasso.traces.limits import ValueCounter

# Wire types (the low three bits of a tag).
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
# Field numbers of the OTLP messages walked (opentelemetry/proto/trace/v1/trace.proto, ...).
_REQUEST_RESOURCE_SPANS = 1
_RESOURCE, _SCOPE_SPANS = 1, 2
_RESOURCE_ATTRIBUTES = 1
_SCOPE, _SPANS = 1, 2
_SCOPE_ATTRIBUTES = 3
_TRACE_ID, _SPAN_ID, _PARENT_SPAN_ID, _SPAN_ATTRIBUTES, _EVENTS, _LINKS = 1, 2, 4, 9, 11, 13
_EVENT_ATTRIBUTES, _LINK_ATTRIBUTES = 3, 4
_KEY_VALUE_VALUE = 2
_ARRAY_VALUE, _KVLIST_VALUE = 5, 6
_LIST_VALUES = 1

Ids = tuple[str, str, str]


class WireError(Exception):
    """The bytes are not protobuf: a tag, a length or a number runs past its end."""


def span_ids(body: bytes, counter: ValueCounter) -> Iterator[Ids]:
    """Each span's (trace id, span id, parent id) as hex, in order, counting every value."""
    for number, start, end in _messages(body, 0, len(body)):
        if number == _REQUEST_RESOURCE_SPANS:
            yield from _resource_spans(body, start, end, counter)


def _resource_spans(body: bytes, start: int, end: int, counter: ValueCounter) -> Iterator[Ids]:
    resource_values = 0
    scope_spans = []
    for number, first, last in _messages(body, start, end):
        if number == _RESOURCE:
            resource_values += _attributes(body, first, last, _RESOURCE_ATTRIBUTES, counter)
        elif number == _SCOPE_SPANS:
            scope_spans.append((first, last))
    counter.values -= resource_values  # counted with each span instead, below
    for first, last in scope_spans:
        for ids in _scope_spans(body, first, last, counter):
            # The resource's attributes are kept with every span under it.
            counter.add(resource_values)
            yield ids


def _scope_spans(body: bytes, start: int, end: int, counter: ValueCounter) -> Iterator[Ids]:
    for number, first, last in _messages(body, start, end):
        if number == _SCOPE:
            _attributes(body, first, last, _SCOPE_ATTRIBUTES, counter)
        elif number == _SPANS:
            yield _span(body, first, last, counter)


def _span(body: bytes, start: int, end: int, counter: ValueCounter) -> Ids:
    ids = {_TRACE_ID: "", _SPAN_ID: "", _PARENT_SPAN_ID: ""}
    attributes = 0
    for number, first, last in _messages(body, start, end):
        if number in ids:
            ids[number] = body[first:last].hex()
        elif number == _SPAN_ATTRIBUTES:
            attributes += 1
            counter.attributes(attributes)
            _key_value(body, first, last, counter)
        elif number == _EVENTS:
            counter.add(1)
            _attributes(body, first, last, _EVENT_ATTRIBUTES, counter)
        elif number == _LINKS:
            _attributes(body, first, last, _LINK_ATTRIBUTES, counter)
    return ids[_TRACE_ID], ids[_SPAN_ID], ids[_PARENT_SPAN_ID]


def _attributes(body: bytes, start: int, end: int, field: int, counter: ValueCounter) -> int:
    """Count the attributes (field `field`, KeyValues) of a message; the values they hold."""
    before = counter.values
    attributes = 0
    for number, first, last in _messages(body, start, end):
        if number == field:
            attributes += 1
            counter.attributes(attributes)
            _key_value(body, first, last, counter)
    return counter.values - before


def _key_value(body: bytes, start: int, end: int, counter: ValueCounter) -> None:
    """One attribute: itself and every element nested in its value."""
    before = counter.values
    counter.add(1)
    if _is_scalar(body, start, end):
        return
    for number, first, last in _messages(body, start, end):
        if number == _KEY_VALUE_VALUE:
            _any_value(body, first, last, counter, 1, before)


def _any_value(
    body: bytes, start: int, end: int, counter: ValueCounter, depth: int, attribute_start: int
) -> None:
    for number, first, last in _messages(body, start, end):
        if number not in (_ARRAY_VALUE, _KVLIST_VALUE):
            continue
        counter.depth(depth)
        for element, element_first, element_last in _messages(body, first, last):
            if element != _LIST_VALUES:
                continue
            counter.add(1)
            counter.attribute(counter.values - attribute_start)
            if number == _ARRAY_VALUE:
                _any_value(body, element_first, element_last, counter, depth + 1, attribute_start)
            else:
                _kvlist_entry(body, element_first, element_last, counter, depth, attribute_start)


def _kvlist_entry(
    body: bytes, start: int, end: int, counter: ValueCounter, depth: int, attribute_start: int
) -> None:
    for number, first, last in _messages(body, start, end):
        if number == _KEY_VALUE_VALUE:
            _any_value(body, first, last, counter, depth + 1, attribute_start)


# The tags of a KeyValue's value and of an AnyValue's array_value and kvlist_value.
_VALUE_TAG = _KEY_VALUE_VALUE << 3 | _LENGTH
_NESTED_TAGS = frozenset({_ARRAY_VALUE << 3 | _LENGTH, _KVLIST_VALUE << 3 | _LENGTH})


def _is_scalar(body: bytes, start: int, end: int) -> bool:
    """Whether a KeyValue written as exporters write it (its key, then its value of one field)
    holds no array or kvlist: most attributes, read without walking them. Anything else is
    walked in full."""
    if start >= end or body[start] != 0x0A:  # the key (field 1, length-delimited) first
        return start >= end
    length, position = _varint(body, start + 1, end)
    position += length
    if position >= end or body[position] != _VALUE_TAG:
        return position == end  # no value at all is a scalar (an empty one)
    length, position = _varint(body, position + 1, end)
    if position + length != end:
        return False
    return length == 0 or body[position] not in _NESTED_TAGS


def _messages(body: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The length-delimited fields of the message in body[start:end]: (number, first, last).
    Other fields are skipped; bytes that are not protobuf raise WireError."""
    position = start
    while position < end:
        tag, position = _varint(body, position, end)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == _LENGTH:
            length, position = _varint(body, position, end)
            if position + length > end:
                raise WireError("a length runs past the end of its message")
            yield number, position, position + length
            position += length
        elif wire_type == _VARINT:
            _, position = _varint(body, position, end)
        elif wire_type in (_FIXED64, _FIXED32):
            position += 8 if wire_type == _FIXED64 else 4
            if position > end:
                raise WireError("a number runs past the end of its message")
        else:
            raise WireError(f"wire type {wire_type} is not used by OTLP")
        if number == 0:
            raise WireError("field number 0 is not valid")


def _varint(body: bytes, position: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while position < end:
        byte = body[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift > 63:
            break
    raise WireError("a number is cut short or too long")
