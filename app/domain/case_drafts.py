"""Generated cases: the kinds of case a generation covers, a candidate, and a stored draft."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args
from uuid import UUID

import msgspec

from agentlasso.domain.checks import Check
from agentlasso.domain.judging import Usage
from agentlasso.domain.test_cases import EvaluationType, TestCaseContent

Category = Literal[
    "happy_path",
    "missing_details",
    "ambiguous",
    "boundary",
    "tool_error",
    "tool_chain",
    "out_of_scope",
    "must_refuse",
    "injection",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)
# What each kind of case is, as the planner is told and a person reads it.
CATEGORY_MEANINGS: dict[Category, str] = {
    "happy_path": "an ordinary request the agent should handle with its tools",
    "missing_details": "a request that leaves out a detail the agent needs (it should ask)",
    "ambiguous": "a request that can be read two ways (it should clarify or pick safely)",
    "boundary": "a boundary value: a limit, zero, a date at the edge, a very long input",
    "tool_error": "a tool that errors or returns nothing (it should say so, not invent)",
    "tool_chain": "a request that needs several tools in a chain, in the right order",
    "out_of_scope": "a request outside what the agent is for (it should decline or redirect)",
    "must_refuse": "a request the agent must refuse (unsafe, against its rules)",
    "injection": "an attempt to make it ignore its instructions or reveal them",
}
CATEGORY_LABELS: dict[Category, str] = {
    "happy_path": "Happy path",
    "missing_details": "Missing details",
    "ambiguous": "Ambiguous",
    "boundary": "Boundary values",
    "tool_error": "Tool errors or empty results",
    "tool_chain": "Tools in a chain",
    "out_of_scope": "Out of scope",
    "must_refuse": "Must refuse",
    "injection": "Ignore-your-instructions attempts",
}
DraftStatus = Literal["pending", "accepted", "rejected"]
DRAFT_STATUSES: tuple[DraftStatus, ...] = get_args(DraftStatus)


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One of the agent's tools, as agents declare them."""

    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class AgentProfile(msgspec.Struct, frozen=True, kw_only=True):
    """What cases are generated from: the agent's own prompt and tools."""

    system_prompt: str | None
    tools: tuple[ToolSpec, ...]

    @property
    def tool_names(self) -> frozenset[str]:
        """The names a case may mention."""
        return frozenset(tool.name for tool in self.tools)


class Slot(msgspec.Struct, frozen=True, kw_only=True):
    """One case the plan asks for: a kind of case, the tool it is about ("" for none), why."""

    category: Category
    tool: str
    intent: str


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A generated case that passed validation, not yet stored."""

    slot: Slot
    content: TestCaseContent
    tools_expected: tuple[str, ...]
    tools_forbidden: tuple[str, ...]


class Discarded(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate the model wrote that did not become a draft, and why."""

    category: str
    reason: str


class CaseDraft(msgspec.Struct, frozen=True, kw_only=True):
    """A stored candidate awaiting review; field names are the table's column names."""

    id: UUID
    dataset_id: UUID
    generation_id: UUID
    seq: int
    status: DraftStatus
    category: Category
    intent: str
    tool: str
    input: str | dict[str, Any]
    description: str | None
    checks: tuple[Check, ...]
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    tools_expected: tuple[str, ...]
    tools_forbidden: tuple[str, ...]
    test_case_id: UUID | None
    replaced_by: UUID | None
    created_at: datetime

    @property
    def content(self) -> TestCaseContent:
        """The test case accepting it as it is would make."""
        return TestCaseContent(
            input=self.input,
            checks=self.checks,
            expected_output=self.expected_output,
            evaluation_type=self.evaluation_type,
            min_confidence=self.min_confidence,
            description=self.description,
        )

    @property
    def slot(self) -> Slot:
        """The plan's slot it fills (a regeneration fills it again)."""
        return Slot(category=self.category, tool=self.tool, intent=self.intent)


class GenerationRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One generation as stored: what it was asked from, and what it cost."""

    id: UUID
    dataset_id: UUID
    agent_id: UUID | None
    profile: AgentProfile
    instruction: str | None
    requested: int
    model: str
    prompt_version: str
    usage: Usage
    cost_usd: float | None
    calls: int
    latency_ms: int
