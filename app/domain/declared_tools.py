"""The input schemas of the tools an agent declares, read from its `tools` as agents write them:
Anthropic's `{"name", "input_schema"}`, OpenAI's `{"type": "function", "function": {"name",
"parameters"}}` and the flat `{"name", "parameters"}`. What tool_args_valid validates against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentlasso.domain.grades import DeclaredTools


def declared_tools(tools: Sequence[Any] | None) -> DeclaredTools | None:
    """Each declared tool's input schema by name; None when no tool declares one."""
    schemas: DeclaredTools = {}
    for tool in tools or ():
        entry = _entry(tool)
        if entry is None:
            continue
        name, schema = entry
        # The first declaration of a name is the one an agent framework would use.
        schemas.setdefault(name, schema)
    return schemas or None


def _entry(tool: Any) -> tuple[str, Any] | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    if isinstance(function, dict):
        tool = function
    name = tool.get("name")
    schema = tool.get("input_schema", tool.get("parameters"))
    if not isinstance(name, str) or not name or schema is None:
        return None
    return name, schema
