"""Tool fixtures on a test case (contract section 14): `{"tool name": [{"arguments"?,
"result"}]}`, sent to the agent with each call (the agentlasso body's `tool_fixtures`, A2A
message metadata; never to an openai_chat endpoint), so that an agent whose tools have side
effects can answer from them in a test. The platform sends them; it never grades them."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

MAX_FIXTURE_TOOLS = 100
MAX_FIXTURES_PER_TOOL = 100
ToolName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class ToolFixture(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True,
                  omit_defaults=True):  # fmt: skip
    """One answer of a tool: for calls with these arguments (any, when absent), this result."""

    arguments: dict[str, Any] | None = None
    result: Any


ToolFixtures = Annotated[
    dict[
        ToolName, Annotated[tuple[ToolFixture, ...], msgspec.Meta(max_length=MAX_FIXTURES_PER_TOOL)]
    ],
    msgspec.Meta(max_length=MAX_FIXTURE_TOOLS),
]


def fixtures_field(fixtures: dict[str, tuple[ToolFixture, ...]] | None) -> dict[str, Any]:
    """The request body's `tool_fixtures` field, or nothing when the case has none."""
    sent = fixtures_sent(fixtures)
    return {} if sent is None else {"tool_fixtures": sent}


def fixtures_sent(fixtures: dict[str, tuple[ToolFixture, ...]] | None) -> dict[str, Any] | None:
    """The fixtures as the request body carries them (plain JSON); None when there are none."""
    return msgspec.to_builtins(fixtures) if fixtures else None
