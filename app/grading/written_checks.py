"""What makes a written check unusable beyond its shape: a schema that cannot be compiled, a
matcher that is not one, a `$regex` that does not compile; and an agent's declared tool whose
input schema cannot be compiled. Refused at write time (a 422 naming where), so a run never
meets them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from agentlasso.domain.checks import Check, OutputMatchesSchema, ToolCalled, ToolOrder
from agentlasso.domain.declared_tools import declared_schemas
from agentlasso.domain.json_pointers import json_pointer
from agentlasso.domain.tool_arguments import ToolStep, is_matcher, matcher_problems
from agentlasso.grading.excerpts import VALUE_CHARS, shorten
from agentlasso.grading.patterns import regex_compile_error
from agentlasso.grading.schemas import SchemaProblem, compile_schema


def written_check_problems(check: Check) -> list[tuple[str, str]]:
    """(JSON pointer below the check, what is wrong) for each problem of this check."""
    if isinstance(check, OutputMatchesSchema):
        schema = compile_schema(check.schema)
        if isinstance(schema, SchemaProblem):
            where = f" at {schema.pointer}" if schema.pointer else ""
            return [
                (f"/schema{schema.pointer}", f"The schema cannot be used{where}: {schema.reason}.")
            ]
        return []
    if isinstance(check, ToolCalled) and check.arguments is not msgspec.UNSET:
        return list(_arguments_problems("/arguments", check.arguments))
    if isinstance(check, ToolOrder):
        return [
            problem
            for index, step in enumerate(check.tools)
            if isinstance(step, ToolStep)
            for problem in _arguments_problems(f"/tools/{index}/arguments", step.arguments)
        ]
    return []


def _arguments_problems(at: str, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for pointer, detail in matcher_problems(arguments):
        yield at + pointer, detail
    for key, value in arguments.items():
        pattern = value.get("$regex") if is_matcher(value) else None
        error = regex_compile_error(pattern) if isinstance(pattern, str) else None
        if error is not None:
            where = at + json_pointer([key, "$regex"])
            yield where, f"The regular expression does not compile: {error}."


def declared_tool_problems(tools: Sequence[Any] | None) -> list[tuple[str, str]]:
    """(JSON pointer below `tools`, what is wrong) for each declared input schema that cannot be
    compiled: tool_args_valid would leave every call of that tool ungraded."""
    problems: list[tuple[str, str]] = []
    for at, name, schema in declared_schemas(tools):
        compiled = compile_schema(schema)
        if isinstance(compiled, SchemaProblem):
            where = f" at {compiled.pointer}" if compiled.pointer else ""
            tool = shorten(name, VALUE_CHARS)
            detail = f"The input schema of {tool} cannot be used{where}: {compiled.reason}."
            problems.append((at + compiled.pointer, detail))
    return problems
