"""Rules the server enforces on request bodies that msgspec's schemas of them do not say.

- No text may hold U+0000, which PostgreSQL cannot store: the services refuse it with a 422
  naming the field, at any depth of a free-form value (contexts, criteria, tools), keys
  included. So every string of a request body gets a pattern without it, and every free-form
  object is a JSON value without it (one recursive schema). The exceptions are what is sent on
  to an agent and not stored (a free try) and what an agent answered (stored as it came): those
  fields are `{}` in msgspec's schemas, and stay so.
- An id a body names is a UUID (one of another shape names nothing: a 404).
- An OTLP/JSON body has OTLP's shape, as the server's decoder reads it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.domain.stored_text import WITHOUT_NUL_PATTERN
from agentlasso.traces.otlp_json import OTLP_JSON_REQUEST

JSON_WITHOUT_NUL = "JsonWithoutNul"
_JSON_REF = {"$ref": f"#/components/schemas/{JSON_WITHOUT_NUL}"}
# Request bodies whose text is sent on (to an agent, to the simulated user's model), never
# stored: they may hold U+0000.
SENT_ON_AS_IS = frozenset({"InvokeRequest", "UserTurnAsk"})
# A string already this exact needs no pattern (and may not take one beside its own).
_EXACT = frozenset({"pattern", "enum", "const", "format"})
_ID_SUFFIX = "_id"
OTLP_PREFIX = "Otlp"


def without_nul(schemas: dict[str, Any], body_schemas: set[str]) -> None:
    """Every string and free-form value of these request-body schemas (and of the schemas
    they refer to) described without U+0000."""
    schemas[JSON_WITHOUT_NUL] = {
        "description": "Any JSON value whose strings and keys hold no U+0000, at any depth.",
        "anyOf": [
            {"type": "string", "pattern": WITHOUT_NUL_PATTERN},
            {"type": ["number", "boolean", "null"]},
            {"type": "array", "items": _JSON_REF},
            _free_object(),
        ],
    }
    for name in sorted(_referred(schemas, body_schemas - SENT_ON_AS_IS)):
        _strings_without_nul(schemas[name])


def ids_as_uuids(schemas: dict[str, Any], body_schemas: set[str]) -> None:
    """Each `..._id` a request body names is described as a UUID."""
    for name in _referred(schemas, body_schemas):
        for field, schema in schemas[name].get("properties", {}).items():
            if field.endswith(_ID_SUFFIX):
                _mark_uuid(schema)


def otlp_json_components() -> dict[str, Any]:
    """The OTLP/JSON request's schema (`OtlpRequest`) and those it refers to, from the
    decoder's own types (their private names made readable)."""
    _, components = msgspec.json.schema_components(
        [OTLP_JSON_REQUEST], ref_template="#/components/schemas/{name}"
    )
    encoded = msgspec.json.encode(components).replace(
        b'"#/components/schemas/_Json', f'"#/components/schemas/{OTLP_PREFIX}'.encode()
    )
    renamed: dict[str, Any] = {}
    for name, schema in msgspec.json.decode(encoded).items():
        readable = OTLP_PREFIX + name.removeprefix("_Json")
        renamed[readable] = {**schema, "title": readable}
    return renamed


def schemas_named_in(node: Any) -> set[str]:
    """The component schemas a part of the document refers to directly."""
    return set(_refs(node))


def _free_object() -> dict[str, Any]:
    return {
        "type": "object",
        "propertyNames": {"pattern": WITHOUT_NUL_PATTERN},
        "additionalProperties": _JSON_REF,
    }


def _strings_without_nul(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _strings_without_nul(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not _EXACT & node.keys():
        node["pattern"] = WITHOUT_NUL_PATTERN
    elif node.get("type") == "object" and "properties" not in node:
        node.setdefault("propertyNames", {"pattern": WITHOUT_NUL_PATTERN})
        node.setdefault("additionalProperties", _JSON_REF)
    for key, value in node.items():
        if key != "propertyNames":
            _strings_without_nul(value)


def _mark_uuid(schema: dict[str, Any]) -> None:
    if schema.get("type") == "string":
        schema["format"] = "uuid"
    for option in schema.get("anyOf", []):
        _mark_uuid(option)


def _referred(schemas: dict[str, Any], names: set[str]) -> set[str]:
    """These schemas and every schema they refer to, at any depth."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in found or name not in schemas:
            continue
        found.add(name)
        todo += list(_refs(schemas[name]))
    return found


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [name for item in node for name in _refs(item)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"].rsplit("/", 1)[-1]] if isinstance(node.get("$ref"), str) else []
    return own + [name for value in node.values() for name in _refs(value)]
