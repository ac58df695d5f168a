"""Generated cases on the wire: what a generation is asked for."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

Count = Annotated[int, msgspec.Meta(ge=1, le=20)]
SystemPrompt = Annotated[str, msgspec.Meta(max_length=200_000)]
Instruction = Annotated[str, msgspec.Meta(max_length=4_000)]
ToolName = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class Tool(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One of the agent's tools, as agents declare them."""

    name: ToolName
    description: Annotated[str, msgspec.Meta(max_length=10_000)] | None = None
    input_schema: dict[str, Any] | None = None


class GenerationCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What to generate from: a registered agent (the project's default when nothing is
    given), or its system prompt and tools typed in (they override the agent's)."""

    agent_id: str | None = None
    system_prompt: SystemPrompt | None = None
    tools: Annotated[list[Tool], msgspec.Meta(max_length=1000)] | None = None
    instruction: Instruction | None = None
    count: Count = 10
