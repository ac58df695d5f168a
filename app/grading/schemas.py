"""JSON Schemas for the grading core: compiled once per distinct schema, bounded, pure.

What a schema may be, and why:
- At most 64 KiB as compact JSON, nested at most 100 levels, an object or a boolean.
- The dialect is JSON Schema 2020-12 when `$schema` is absent or names it. The other drafts the
  validator knows (2019-09, 7, 6 and 4) are honoured when `$schema` names them, because the tool
  schemas agents declare are often written by SDKs that stamp draft 7 (zod-to-json-schema, the
  MCP TypeScript SDK); any other `$schema` is refused, since its metaschema would be fetched.
- `format` is an annotation, never asserted: that is 2020-12's default (the format-annotation
  vocabulary), what the official test suite's required cases expect, and what most validators
  do, so a tool call an agent's own SDK accepted is not failed here over how `email` or `uri` is
  read. A schema that needs a shape enforced says so with `pattern`.
- References stay inside the schema (`#/$defs/...`, anchors, embedded `$id`s); the metaschema
  of the schema's own dialect, which the validator has built in, resolves too. Anything else
  (http, file, urn, a relative URI with no base) is refused and named; nothing is fetched.
- Patterns run on Rust's `regex` crate, in time linear in the text; Python's `re` never runs a
  user's pattern. Each compiles to at most PATTERN_BYTES, and a schema has at most MAX_PATTERNS
  distinct ones: about 0.4 MB of memory each at the limit, measured. Linear is not free: the
  search falls back to an NFA when a pattern defeats its DFA (`(a|b)*a(a|b){1900}c`), whose time
  is the pattern's size times the text's, about 20 s for a megabyte of text at the limit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import jsonschema_rs
import msgspec

from agentlasso.domain.json_pointers import json_pointer
from agentlasso.grading.excerpts import shorten
from agentlasso.grading.patterns import MAX_PROGRAM_SIZE, MAX_SEARCH_COST, compile_pattern
from agentlasso.grading.schema_errors import describe, excerpt, message

MAX_SCHEMA_BYTES = 64 * 1024
# Nesting of a schema and of a value validated: serde_json, which parses schemas for the
# validator, stops at 128, and the validator's recursion can overflow the stack (a crash, not
# an error) on values nested tens of thousands deep.
MAX_DEPTH = 100
MAX_PATTERNS = 64
PATTERN_BYTES = 256 * 1024
# A run compiles each distinct schema once; the bound on patterns keeps a stream of
# pattern-heavy schemas from growing a worker's memory (64 x 0.4 MB per schema at worst).
_CACHE_ENTRIES = 256
_CACHE_PATTERNS = 512
_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-04/schema",
    }
)
_REGEX = jsonschema_rs.RegexOptions(size_limit=PATTERN_BYTES, dfa_size_limit=4 * PATTERN_BYTES)
_CANONICAL = msgspec.json.Encoder(order="sorted")
_GUARD = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()
_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """Why a schema cannot be used, and where in it (a JSON pointer, "" for the whole)."""

    pointer: str
    reason: str

    def detail(self) -> str:
        """`at /properties/price/minimum: "x" is not of type number`, for a person."""
        return f"at {self.pointer}: {self.reason}" if self.pointer else self.reason


class CompiledSchema:
    """A schema ready to validate values, any number of times."""

    __slots__ = ("_validator", "pattern_cost", "patterns")

    def __init__(
        self, validator: jsonschema_rs.Validator, patterns: int, pattern_cost: int = 0
    ) -> None:
        self._validator = validator
        self.patterns = patterns
        # The patterns' worst case per byte of text searched, in instructions, counted as the
        # RE2 rule counts a regular expression (patterns.search_cost): linear time is not
        # enough when the constant is a pattern's whole program (about 20 s a megabyte for
        # `(a|b)*a(a|b){1900}c`, measured). Checks refuse values this would make too costly.
        self.pattern_cost = pattern_cost

    def too_costly_for(self, value_bytes: int) -> bool:
        """Whether searching this many bytes of text with every pattern could stall grading."""
        return self.pattern_cost * value_bytes > MAX_SEARCH_COST

    def first_error(self, instance: object, *, decoded: bool = False) -> str | None:
        """None when the value is valid, else `$.items[2].price: -3 is less than the minimum 0`.

        `decoded`: the value is what a JSON decoder made of a document, so its depth is bounded
        by the decoder's own recursion limit and the guard below is not needed."""
        if not decoded:
            problem = _unvalidatable(instance)
            if problem is not None:
                return problem
        try:
            # validate() stops at the first error; iter_errors() collects every one before
            # yielding any (16 s for a million, measured), so no list of errors is offered.
            self._validator.validate(instance)
        except jsonschema_rs.ValidationError as error:
            return describe(error, instance)
        except (ValueError, TypeError, OverflowError) as exc:
            return f"$: the value cannot be validated: {shorten(str(exc), 120)}"
        return None

    def is_valid(self, instance: object) -> bool:
        """Whether the value is valid; the same answer as `first_error(...) is None`."""
        return self.first_error(instance) is None


def _unvalidatable(instance: object) -> str | None:
    """Why a Python value cannot be given to the validator, or None."""
    try:
        # The validator recurses natively and crashes the process past about 20,000 levels.
        # Encoding recurses too, in C, and stops near 1,000 with RecursionError: a depth guard
        # at a microsecond for a typical value, where walking it in Python cost five. (JSON
        # decoders stop below that depth too, which is why a decoded value skips this.)
        _GUARD.encode(instance)
    except RecursionError:
        return "$: the value is nested too deeply to validate"
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        return f"$: the value cannot be validated: {shorten(str(exc), 120)}"
    return None


def compile_schema(schema: object) -> CompiledSchema | SchemaProblem:
    """The schema compiled (from the cache when seen before), or why it cannot be used."""
    if not isinstance(schema, (dict, bool)):
        return SchemaProblem("", f"a schema is a JSON object or a boolean, not {excerpt(schema)}")
    try:
        # Only a schema not seen before is walked for its depth (in _compile): a cache hit
        # costs one encoding, and one too deep to encode is refused here.
        text = _CANONICAL.encode(schema)
    except RecursionError:
        return _too_deep()
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        return SchemaProblem("", f"the schema is not JSON: {shorten(str(exc), 120)}")
    return _compiled_json(text)


def compiled(text: str) -> CompiledSchema | SchemaProblem:
    """A schema's JSON text compiled, once per distinct text (canonical: sorted and compact)."""
    return _compiled_json(text.encode("utf-8"))


def _compiled_json(text: bytes) -> CompiledSchema | SchemaProblem:
    # compile_schema passes canonical text, so every key order of a schema shares one entry and
    # one validator, whose first error is then the same whichever order the schema came in.
    # The cache is keyed by the encoded bytes: a hit, once per check per case, decodes nothing.
    if len(text) > MAX_SCHEMA_BYTES:
        return SchemaProblem(
            "",
            f"the schema is {len(text):,} bytes as compact JSON; at most {MAX_SCHEMA_BYTES:,} "
            "are allowed",
        )
    cached = _CACHE.get(text)
    if cached is None:
        cached = _compile(text.decode("utf-8"))
        _CACHE.put(text, cached)
    return cached


def _compile(text: str) -> CompiledSchema | SchemaProblem:
    """Compile a schema's text: its shape, its dialect and its patterns checked first."""
    try:
        schema = _DECODER.decode(text)
    except msgspec.DecodeError as exc:
        return SchemaProblem("", f"the schema is not JSON: {shorten(str(exc), 120)}")
    except RecursionError:
        return _too_deep()
    problem = _shape_problem(schema)
    if problem is not None:
        return problem
    patterns = _patterns(schema)
    if len(patterns) > MAX_PATTERNS:
        return SchemaProblem(
            "", f"the schema has {len(patterns):,} patterns; at most {MAX_PATTERNS} are allowed"
        )
    try:
        validator = jsonschema_rs.validator_for(
            text, retriever=_refuse, pattern_options=_REGEX, validate_formats=False
        )
    except jsonschema_rs.ValidationError as error:
        # The validator checks the schema against its dialect's metaschema first, so a
        # `{"minimum": "x"}` lands here with the pointer to it; references and patterns that
        # cannot be used land here too. Anything else it raises is a bug, which the case
        # grader records as the check's error.
        return _problem(schema, error)
    return CompiledSchema(validator, len(patterns), _pattern_cost(patterns))


def _shape_problem(schema: object) -> SchemaProblem | None:
    """A schema that is not an object or boolean, too deep, or of an unknown dialect."""
    if not isinstance(schema, dict | bool):
        return SchemaProblem("", f"a schema is a JSON object or a boolean, not {excerpt(schema)}")
    if _deeper_than(schema, MAX_DEPTH):
        return _too_deep()
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(dialect, str) and dialect.removesuffix("#") not in _DIALECTS:
        return SchemaProblem(
            "/$schema",
            f"the dialect {excerpt(dialect)} is not one this validator knows; leave $schema out "
            "for JSON Schema 2020-12",
        )
    return None


def _too_deep() -> SchemaProblem:
    """The problem of a schema nested too deep."""
    return SchemaProblem("", f"the schema is nested more than {MAX_DEPTH} levels deep")


def _refuse(uri: str) -> jsonschema_rs.JSONType:
    """The retriever: every reference outside the schema is refused, none is fetched."""
    raise ValueError(f"remote references are not allowed ({uri})")


def _problem(schema: object, error: jsonschema_rs.ValidationError) -> SchemaProblem:
    """A compile error in words, at its place in the schema."""
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Referencing):
        return _reference_problem(schema, str(kind.error))
    error = _deepest_alternative(error)
    pointer, kind = json_pointer(error.instance_path), error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Format) and kind.format == "regex":
        return SchemaProblem(
            pointer,
            f"{excerpt(error.instance)} is not a pattern the linear-time regex engine accepts "
            "(no lookaround or backreferences, and at most "
            f"{PATTERN_BYTES // 1024} KiB compiled)",
        )
    return SchemaProblem(pointer, message(error))


def _deepest_alternative(error: jsonschema_rs.ValidationError) -> jsonschema_rs.ValidationError:
    """For a metaschema's anyOf, the error of the alternative that got furthest."""
    # `type` is a name or a list of names: `"strin" is not one of "array", ...` says what
    # anyOf's own "is not valid under any of the schemas" does not.
    kind = error.kind
    if not isinstance(kind, jsonschema_rs.ValidationErrorKind.AnyOf):
        return error
    firsts = [errors[0] for errors in kind.context if errors]
    return max(firsts, key=lambda inner: len(inner.instance_path), default=error)


def _reference_problem(schema: object, text: str) -> SchemaProblem:
    """A `$ref` that leaves the schema or points at nothing, named, at its place."""
    # The library's messages start with what failed and quote the reference first:
    # `Resource 'x' is not present ...`, `Pointer '/a' does not exist`.
    prefix, what = _REFERENCE_WORDS.get(text.partition(" ")[0], ("", "cannot be resolved"))
    return _at_reference(schema, prefix + _quoted(text), what)


_REFERENCE_WORDS = {
    "Resource": ("", "is outside the schema; only references within it are allowed"),
    "Pointer": ("#", "points at nothing in the schema"),
    "Anchor": ("#", "names an anchor the schema does not have"),
    "Invalid": ("", "is not a valid URI reference"),
}


def _quoted(text: str) -> str:
    """The first single-quoted part of the library's message (`Resource 'x' is ...`)."""
    return text.partition("'")[2].partition("'")[0]


def _at_reference(schema: object, target: str, what: str) -> SchemaProblem:
    """The problem at the `$ref` that names the target (as written or as resolved)."""
    for pointer, written in _references(schema):
        document = written.partition("#")[0]
        if written == target or (document and target.partition("#")[0].endswith(document)):
            shown = excerpt(written)
            if written != target and target.partition("#")[0] != document:
                shown += f" ({excerpt(target)})"
            return SchemaProblem(pointer, f"the reference {shown} {what}")
    return SchemaProblem("", f"the reference {excerpt(target)} {what}")


def _references(schema: object) -> Iterator[tuple[str, str]]:
    """Every `$ref` and `$dynamicRef` in the schema, with its pointer, in document order."""
    stack: list[tuple[object, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        children: list[tuple[str | int, object]] = []
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    yield json_pointer((*path, key)), value
                children.append((key, value))
        elif isinstance(node, list):
            children = list(enumerate(node))
        stack.extend((child, (*path, key)) for key, child in reversed(children))


def _pattern_cost(patterns: set[str]) -> int:
    """The patterns' RE2 program sizes together (one RE2 cannot read counts as the largest
    a regular expression check may have)."""
    total = 0
    for pattern in patterns:
        regex, _ = compile_pattern(pattern)
        total += MAX_PROGRAM_SIZE if regex is None else int(regex.programsize)
    return total


def _patterns(schema: object) -> set[str]:
    """The distinct regular expressions a schema holds (`pattern`, `patternProperties`)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                found.add(pattern)
            keyed = node.get("patternProperties")
            if isinstance(keyed, dict):
                found.update(keyed)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _deeper_than(value: object, limit: int) -> bool:
    """Whether containers nest more than `limit` deep, found without recursing."""
    level: list[object] = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[object] = []
        for node in level:
            children: Iterable[object] = node.values() if isinstance(node, dict) else node  # type: ignore[assignment]
            # The scalar test first: a value's leaves are most of it, and a set lookup of the
            # exact type is three times cheaper than isinstance against three classes.
            below += [c for c in children if type(c) not in _SCALARS and isinstance(c, _CONTAINERS)]
        level = below
    return False


class _Cache:
    """A least-recently-used map of compiled schemas, bounded in entries and in patterns."""

    def __init__(self, entries: int, patterns: int) -> None:
        self._items: OrderedDict[bytes, CompiledSchema | SchemaProblem] = OrderedDict()
        self._entries, self._patterns, self._held = entries, patterns, 0
        # Grading may run in threads; OrderedDict's reorder-and-evict is not atomic.
        self._lock = threading.Lock()

    def get(self, key: bytes) -> CompiledSchema | SchemaProblem | None:
        """The entry, now the most recently used, or None."""
        # No lock on a hit, the path of every case: each OrderedDict call is atomic under the
        # GIL, and an entry another thread's put() evicted meanwhile is still a good answer.
        value = self._items.get(key)
        if value is None:
            return None
        try:
            self._items.move_to_end(key)
        except KeyError:
            return value
        return value

    def put(self, key: bytes, value: CompiledSchema | SchemaProblem) -> None:
        """Hold an entry, evicting the least recently used past either bound."""
        with self._lock:
            # Two threads may compile the same schema at once: the second replaces the first.
            self._held -= _weight(self._items.pop(key, _NOTHING))
            self._items[key] = value
            self._held += _weight(value)
            # An entry weighs at most MAX_PATTERNS, less than the bound, so the newest stays.
            while len(self._items) > self._entries or self._held > self._patterns:
                _, evicted = self._items.popitem(last=False)
                self._held -= _weight(evicted)


def _weight(value: CompiledSchema | SchemaProblem) -> int:
    """What an entry counts against the cache's bound on patterns."""
    return value.patterns if isinstance(value, CompiledSchema) else 0


_NOTHING = SchemaProblem("", "")
_CACHE = _Cache(_CACHE_ENTRIES, _CACHE_PATTERNS)
