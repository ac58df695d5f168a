"""The input schemas of the tools an agent declares, read from its `tools` as agents write them:
Anthropic's `{"name", "input_schema"}`, OpenAI's `{"type": "function", "function": {"name",
"parameters"}}` and the flat `{"name", "parameters"}`. What tool_args_valid validates against."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from agentlasso.domain.grades import DeclaredTools


def declared_tools(tools: Sequence[Any] | None) -> DeclaredTools | None:
    """Each declared tool's input schema by name; None when no tool declares one."""
    schemas: DeclaredTools = {}
    for _, name, schema in declared_schemas(tools):
        # The first declaration of a name is the one an agent framework would use.
        schemas.setdefault(name, schema)
    return schemas or None


def declared_schemas(tools: Sequence[Any] | None) -> Iterator[tuple[str, str, Any]]:
    """(JSON pointer of the schema within `tools`, the tool's name, its schema) per declaration."""
    for index, tool in enumerate(tools or ()):
        entry = _entry(tool)
        if entry is not None:
            where, name, schema = entry
            yield f"/{index}{where}", name, schema


def _entry(tool: Any) -> tuple[str, str, Any] | None:
    if not isinstance(tool, dict):
        return None
    at = ""
    function = tool.get("function")
    if isinstance(function, dict):
        tool, at = function, "/function"
    name = tool.get("name")
    key = "input_schema" if "input_schema" in tool else "parameters"
    schema = tool.get(key)
    if not isinstance(name, str) or not name or schema is None:
        return None
    return f"{at}/{key}", name, schema
