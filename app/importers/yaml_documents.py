"""YAML read as promptfoo reads it, built straight from libyaml's events (through PyYAML).

promptfoo loads YAML with js-yaml's core schema plus merge keys, timestamps and binary: so
`yes`, `on` and `012` are the text, number and number they are in YAML 1.2 (PyYAML's own
YAML 1.1 rules would make them true, true and 10), a key given twice is an error, and a
timestamp is kept as written. Building values from the events, without PyYAML's node graph,
takes a fraction of the memory and half the time; and it measures what aliases expand to as it
goes: a "billion laughs" is refused after a few hundred events, not after a billion values.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from agentlasso.importers.items import js_string

MAX_DOCUMENT_DEPTH = 200
# What aliases may add: the document's own values ten times over, and this many more.
ALIAS_GROWTH = 10
ALIAS_ALLOWANCE = 100_000
# libyaml's parser when PyYAML was built with it (several times faster than PyYAML's own).
_PARSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CORE = "tag:yaml.org,2002:"
_INT = re.compile(r"(?:0o[0-7]+|0x[0-9a-fA-F]+|[-+]?[0-9]+)\Z")
_EXPLICIT_INT = re.compile(r"[-+]?(?:0b[01]+|0o[0-7]+|0x[0-9a-fA-F]+|[0-9]+)\Z")
_FLOAT = re.compile(
    r"(?:[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE, _FALSE = frozenset({"true", "True", "TRUE"}), frozenset({"false", "False", "FALSE"})


class YamlProblem(Exception):
    """The document is not YAML promptfoo would load, or is past a bound; `line` when known."""

    def __init__(self, detail: str, line: int | None) -> None:
        super().__init__(detail)
        self.detail, self.line = detail, line


@functools.lru_cache(maxsize=8192)
def plain_scalar(text: str) -> Any:
    """A plain scalar's value under the core schema (keys and words repeat: cached)."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text[:1] in "-+.0123456789":
        if _INT.match(text):
            return _integer(text)
        if _FLOAT.match(text):
            return _float(text)
    return text


def _integer(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits, 10)


def _float(text: str) -> float:
    lowered = text.lower()
    if lowered.lstrip("+-") in (".inf", ".nan"):
        return float(lowered.replace(".", ""))
    return float(text)


def _tagged(tag: str, text: str, line: int) -> Any:
    """A scalar with an explicit tag."""
    kind = tag.removeprefix(_CORE)
    if tag == "!" or kind in ("str", "timestamp"):
        return text
    if kind == "binary":
        return "".join(text.split())
    if kind == "int" and _EXPLICIT_INT.match(text):
        return _integer(text)
    if kind == "float" and (_FLOAT.match(text) or _EXPLICIT_INT.match(text)):
        return _float(text)
    value = plain_scalar(text)
    if (kind == "bool" and isinstance(value, bool)) or (kind == "null" and value is None):
        return value
    raise YamlProblem(f"The tag {tag} does not fit the value {text!r}, or is not one promptfoo "
                      "reads.", line)  # fmt: skip


class _Frame:
    """A mapping or sequence being built: its value, its pending key, and what it expands to."""

    __slots__ = ("anchor", "depth", "is_list", "key", "merges", "size", "value")

    def __init__(self, value: dict[str, Any] | list[Any], anchor: str | None) -> None:
        self.value, self.anchor, self.is_list = value, anchor, isinstance(value, list)
        self.key: Any = _NO_KEY
        self.merges: list[dict[str, Any]] = []
        # Its depth counting the scalars it may hold (an empty one is said one deeper).
        self.size, self.depth = 1, 2


_NO_KEY = object()
_IN_PROGRESS = (None, -1, -1)


class _Builder:
    """Values from events, bounded in depth and in what aliases expand to."""

    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int, int]] = {}
        self.root: Any = None
        self.documents = 0
        self.events = 0
        self.expanded = 0

    def scalar(self, event: Any) -> None:
        # The most frequent event, so its way is written out (a scalar expands to itself).
        plain = event.tag is None and event.implicit[0]
        if plain:
            value = plain_scalar(event.value)
        elif event.tag is None:
            value = event.value  # quoted, or a block scalar: text
        else:
            value = _tagged(event.tag, event.value, _line(event))
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, 1, 1)
        self.expanded += 1
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        parent.size += 1
        self._place(parent, value, event, plain)

    def start_mapping(self, event: Any) -> None:
        self.start(event, {})

    def start_sequence(self, event: Any) -> None:
        self.start(event, [])

    def start(self, event: Any, value: dict[str, Any] | list[Any]) -> None:
        if event.tag not in (None, "!", f"{_CORE}map", f"{_CORE}seq"):
            raise YamlProblem(f"The tag {event.tag} is not one promptfoo reads here.", _line(event))
        if len(self.stack) >= MAX_DOCUMENT_DEPTH:
            raise YamlProblem(f"Nested more than {MAX_DOCUMENT_DEPTH} levels deep.", _line(event))
        if event.anchor is not None:
            self.anchors[event.anchor] = _IN_PROGRESS
        self.stack.append(_Frame(value, event.anchor))

    def end(self, event: Any) -> None:
        frame = self.stack.pop()
        if isinstance(frame.value, dict) and frame.merges:
            merged: dict[str, Any] = {}
            for source in frame.merges:
                for key, item in source.items():
                    merged.setdefault(key, item)
            merged.update(frame.value)
            frame.value = merged
        self._remember(frame.anchor, frame.value, frame.size, frame.depth)
        self._add(frame.value, frame.size, frame.depth, event, merge=False, counted=True)

    def alias(self, event: Any) -> None:
        found = self.anchors.get(event.anchor)
        if found is None:
            raise YamlProblem(f"The alias *{event.anchor} names no anchor before it.", _line(event))
        value, size, depth = found
        if size < 0:
            raise YamlProblem(f"The alias *{event.anchor} is inside what it names (a loop).",
                              _line(event))  # fmt: skip
        self._add(value, size, depth, event, merge=False)

    def _remember(self, anchor: str | None, value: Any, size: int, depth: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, size, depth)

    def _add(self, value: Any, size: int, depth: int, event: Any, *, merge: bool,
             counted: bool = False) -> None:  # fmt: skip
        """Put a finished value in its parent (as a key, a mapping's value, or an item)."""
        if not counted:  # a container counted itself and its children as they came
            self.expanded += size
            if self.expanded > self.events * ALIAS_GROWTH + ALIAS_ALLOWANCE:
                raise _too_large(_line(event))
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        parent.size += size
        if depth >= parent.depth:
            parent.depth = depth + 1
            if parent.depth > MAX_DOCUMENT_DEPTH:
                raise YamlProblem(f"Nested more than {MAX_DOCUMENT_DEPTH} levels deep (through "
                                  "aliases).", _line(event))  # fmt: skip
        self._place(parent, value, event, merge)

    def _place(self, parent: _Frame, value: Any, event: Any, may_merge: bool) -> None:
        """The value as the parent's next item, key, or value of its pending key."""
        if parent.is_list:
            parent.value.append(value)  # type: ignore[union-attr]
        elif parent.key is _NO_KEY:
            parent.key = ("<<" if may_merge and value == "<<" else None, value)
        else:
            self._put(parent, value, event)

    def _put(self, parent: _Frame, value: Any, event: Any) -> None:
        mapping = parent.value
        assert isinstance(mapping, dict)
        merge_key, key = parent.key
        parent.key = _NO_KEY
        if merge_key is None and type(key) is str and key not in mapping:
            mapping[key] = value  # the usual key: text, and new
            return
        if merge_key is not None:
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(source, dict) for source in sources):
                raise YamlProblem("A merge key (<<) takes a mapping or a list of them.",
                                  _line(event))  # fmt: skip
            parent.merges += sources
            return
        if isinstance(key, dict | list):
            raise YamlProblem("A mapping key must be a scalar.", _line(event))
        text = key if isinstance(key, str) else js_string(key)
        if text in mapping:
            raise YamlProblem(f"The key {text!r} is given twice in one mapping.", _line(event))
        mapping[text] = value


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return 0 if mark is None else int(mark.line) + 1


def _too_large(line: int) -> YamlProblem:
    return YamlProblem(
        "YAML aliases expand this document far past its size; write the repeated parts out, "
        "or use fewer aliases of aliases.",
        line,
    )


def load_yaml(text: str) -> Any:
    """The one document of a YAML text, as JSON's types (YamlProblem when it cannot be)."""
    parser = _PARSER(text)
    builder = _Builder()
    handlers = {
        yaml.ScalarEvent: builder.scalar,
        yaml.AliasEvent: builder.alias,
        yaml.MappingStartEvent: builder.start_mapping,
        yaml.SequenceStartEvent: builder.start_sequence,
        yaml.MappingEndEvent: builder.end,
        yaml.SequenceEndEvent: builder.end,
    }
    try:
        while True:
            event = parser.get_event()
            builder.events += 1
            handle = handlers.get(type(event))
            if handle is not None:
                handle(event)
            elif isinstance(event, yaml.DocumentStartEvent):
                builder.documents += 1
                if builder.documents > 1:
                    raise YamlProblem("Expected one YAML document; found more.", _line(event))
            elif isinstance(event, yaml.StreamEndEvent):
                return builder.root
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = None if mark is None else mark.line + 1
        raise YamlProblem(f"Not valid YAML: {problem}.", line) from exc
    finally:
        dispose = getattr(parser, "dispose", None)
        if dispose is not None:
            dispose()
