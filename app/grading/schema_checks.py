"""Checks against JSON Schemas: the reply's shape (output_matches_schema) and the arguments of
the agent's calls against its declared tools' input schemas (tool_args_valid). Schemas are
compiled once per process, not per case (schemas.compiled)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import msgspec

from agentlasso.domain.checks import OutputMatchesSchema, ToolArgsValid
from agentlasso.domain.grades import CheckResult, DeclaredTools, ToolCall
from agentlasso.domain.tool_arguments import named_tool
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import VALUE_CHARS, shorten
from agentlasso.grading.json_checks import json_error, may_be_json
from agentlasso.grading.outcomes import decided, not_graded
from agentlasso.grading.schemas import CompiledSchema, SchemaProblem, compile_schema


def grade_output_matches_schema(check: OutputMatchesSchema, context: GradingContext) -> CheckResult:
    """Passes when the trimmed reply is JSON and validates against the schema."""
    instance = _decoded(context.reply)
    if instance is _NOT_JSON:
        detail = f"The reply is not valid JSON: {json_error(context.reply)}."
        return decided(check, "output_matches_schema", False, detail)
    schema = compile_schema(check.schema)
    if isinstance(schema, SchemaProblem):
        # Refused at write time; a case stored before a rule tightened is not passed unchecked.
        detail = f"The schema cannot be used: {schema.detail()}."
        return not_graded(check.id or "", check.severity, detail, "output_matches_schema")
    size = len(context.encoded_reply())
    if schema.too_costly_for(size):
        detail = _too_costly(schema, size, "this reply")
        return not_graded(check.id or "", check.severity, detail, "output_matches_schema")
    first = schema.first_error(instance, decoded=True)
    if first is None:
        return decided(check, "output_matches_schema", True, "The reply matches the schema.")
    detail = f"The reply does not match the schema: {first}."
    return decided(check, "output_matches_schema", False, detail)


def _too_costly(schema: CompiledSchema, size: int, what: str) -> str:
    """Why a schema's patterns were not run, in the words the RE2 rule uses."""
    return (
        f"Not run: the schema's patterns ({schema.pattern_cost:,} instructions) over {what} "
        f"({size:,} bytes) could take longer than a search may; simpler patterns would run"
    )


def _decoded(reply: str) -> Any:
    """The trimmed reply as JSON, or _NOT_JSON when it is not JSON."""
    trimmed = reply.strip()
    if not may_be_json(trimmed):
        return _NOT_JSON  # prose, the usual failure: no decoder raising to say so
    try:
        return msgspec.json.decode(trimmed)
    except (msgspec.DecodeError, RecursionError):
        pass
    if json_error(reply) is not None:
        return _NOT_JSON
    # What only Python's parser takes, such as "\ud800": a lone surrogate becomes "?", one
    # character for one, as the text checks read it, so the validator can take it.
    text = json.dumps(json.loads(trimmed), ensure_ascii=False)
    return msgspec.json.decode(text.encode("utf-8", "replace"))


# The reply is not JSON (json_error says why).
_NOT_JSON = object()


def grade_tool_args_valid(check: ToolArgsValid, context: GradingContext) -> CheckResult:
    """Passes when every call (of the named tool) has arguments valid against that tool's
    input_schema among the agent's declared tools; not graded when it declares none."""
    declared = context.declared_tools
    if not declared:
        return _not_graded(check, _NO_TOOLS)
    only = named_tool(check.tool)
    if only is not None and only not in declared:
        why = f"The agent declares no tool named {shorten(only, VALUE_CHARS)}."
        return _not_graded(check, why)
    calls = [
        call for call in context.observation.tool_calls or () if only is None or call.name == only
    ]
    schemas = _run_schemas(declared)
    for call in calls:
        problem = _call_problem(call, declared, schemas)
        if isinstance(problem, SchemaProblem):
            why = f"The input_schema {shorten(call.name, VALUE_CHARS)} declares cannot be used: "
            return _not_graded(check, why + problem.detail() + ".")
        if isinstance(problem, _Unchecked):
            return _not_graded(check, f"{shorten(call.name, VALUE_CHARS)}: {problem.why}.")
        if problem is not None:
            return decided(check, "tool_args_valid", False, problem)
    if context.observation.unreadable_tool_calls:
        detail = "Cannot confirm every call had valid arguments." + context.unreadable_note()
        return decided(check, "tool_args_valid", False, detail)
    return decided(check, "tool_args_valid", True, _all_valid(len(calls), only))


_NO_TOOLS = (
    "The agent declares no tools with an input_schema (Settings: your agent; in CI mode, the "
    "run's tools), so their arguments cannot be checked."
)


class _Unchecked(NamedTuple):
    """Arguments not validated, and why (the check is then not graded)."""

    why: str


def _call_problem(
    call: ToolCall, declared: DeclaredTools, schemas: _Schemas
) -> str | SchemaProblem | _Unchecked | None:
    """Why this call's arguments are not valid, an unusable schema, unchecked ones, or None."""
    schema = schemas.get(call.name)
    if schema is None:
        if call.name not in declared:
            name = shorten(call.name, VALUE_CHARS)
            return f"{name} was called, but the agent declares no such tool."
        schema = schemas[call.name] = compile_schema(declared[call.name])
    if isinstance(schema, SchemaProblem):
        return schema
    # No arguments at all is an empty object of them (an OpenAI call may leave them out).
    arguments = {} if call.arguments is None else call.arguments
    if schema.pattern_cost:
        size = len(msgspec.json.encode(arguments))
        if schema.too_costly_for(size):
            return _Unchecked(_too_costly(schema, size, "its arguments"))
    # Arguments come from the agent's JSON answer (or a JSON string in it), decoded.
    first = schema.first_error(arguments, decoded=True)
    if first is None:
        return None
    return (
        f"{shorten(call.name, VALUE_CHARS)} was called with arguments that are not valid: {first}."
    )


# The compiled input schemas of a run's declared tools, by tool name.
_Schemas = dict[str, CompiledSchema | SchemaProblem]
# A run's declared tools are one dict for all its cases: their schemas compiled once per run,
# held by the dict's identity (the entry keeps the dict alive, so an id is never reused while
# it is here). Bounded: a worker grades a few runs at a time.
_RUN_TOOLS: dict[int, tuple[DeclaredTools, _Schemas]] = {}
_RUNS_HELD = 32


def _run_schemas(declared: DeclaredTools) -> _Schemas:
    """The run's compiled schemas so far (each compiled when a call of it is first checked)."""
    entry = _RUN_TOOLS.get(id(declared))
    if entry is None or entry[0] is not declared:
        if len(_RUN_TOOLS) >= _RUNS_HELD:
            _RUN_TOOLS.clear()
        entry = _RUN_TOOLS[id(declared)] = (declared, {})
    return entry[1]


def _all_valid(count: int, tool: str | None) -> str:
    """`All 3 tool calls had valid arguments.`, and the like."""
    name = None if tool is None else shorten(tool, VALUE_CHARS)
    one, many = (
        ("tool call", "tool calls") if name is None else (f"call of {name}", f"calls of {name}")
    )
    if count == 0:
        return f"The agent made no {many}, so none had invalid arguments."
    return (
        f"The {one} had valid arguments."
        if count == 1
        else f"All {count} {many} had valid arguments."
    )


def _not_graded(check: ToolArgsValid, why: str) -> CheckResult:
    return not_graded(check.id or "", check.severity, why, "tool_args_valid")
