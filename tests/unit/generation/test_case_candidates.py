"""Reading generated cases: nothing the model writes becomes a candidate unless it names only
the agent's tools and carries checks a test case could be written with; near-duplicates."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlasso.domain.case_drafts import AgentProfile, Candidate, Slot, ToolSpec
from agentlasso.domain.checks import CHECK_TYPES, Check, ToolCalled, ToolNotCalled, ToolOrder
from agentlasso.generation.candidates import PlannedSlot, balanced_slots, read_candidate, read_plan
from agentlasso.generation.near_duplicates import SeenInputs, near, normalised
from agentlasso.judge.verdicts import ModelOutput

PROFILE = AgentProfile(
    system_prompt="Support agent.",
    tools=(ToolSpec(name="orders.lookup"), ToolSpec(name="stripe.refund")),
)
SLOT = Slot(category="happy_path", tool="orders.lookup", intent="look up an order")
GOOD: dict[str, Any] = {
    "input": "Where is order 1234?",
    "description": "Catches an agent that guesses instead of looking up.",
    "tools_expected": ["orders.lookup"],
    "tools_forbidden": ["stripe.refund"],
    "checks": [
        {"type": "tool_called", "tool": "orders.lookup", "severity": "critical"},
        {"type": "output_not_contains", "value": "guarantee", "severity": "minor", "tool": ""},
    ],
    "expected_output": "Gives the order's status.",
    "evaluation_type": "BOOLEAN",
}


def answer(case: Any, stop_reason: str = "end_turn") -> ModelOutput:
    return ModelOutput(stop_reason=stop_reason, text=json.dumps(case))


def read(case: Any, stop_reason: str = "end_turn") -> Candidate | str:
    return read_candidate(answer(case, stop_reason), SLOT, PROFILE, forced_tool=False)


def test_a_valid_case_becomes_a_candidate() -> None:
    candidate = read(GOOD)
    assert isinstance(candidate, Candidate)
    assert candidate.content.input == "Where is order 1234?"
    assert candidate.content.checks == (
        ToolCalled(tool="orders.lookup"),
        msgspec.convert(
            {"type": "output_not_contains", "value": "guarantee", "severity": "minor"}, Check
        ),
    )
    assert candidate.content.evaluation_type == "BOOLEAN"
    assert candidate.tools_forbidden == ("stripe.refund",)
    assert candidate.slot == SLOT


def test_the_forced_tool_path_reads_the_tool_input() -> None:
    output = ModelOutput(stop_reason="tool_use", tool_input=GOOD)
    assert isinstance(read_candidate(output, SLOT, PROFILE, forced_tool=True), Candidate)
    missing = ModelOutput(stop_reason="tool_use")
    assert "did not call" in str(read_candidate(missing, SLOT, PROFILE, forced_tool=True))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"tools_expected": ["refunds.delete"]}, "a tool the agent does not have: refunds.delete"),
        ({"tools_forbidden": ["shell"]}, "a tool the agent does not have: shell"),
        ({"checks": [{"type": "tool_called", "tool": "x", "severity": "critical"}]},
         "a tool the agent does not have: x"),
        ({"checks": [{"type": "tool_order", "tools": ["orders.lookup", "y"],
                      "severity": "minor"}]}, "a tool the agent does not have: y"),
        ({"checks": [{"type": "tool_called", "severity": "critical"}]}, "check 1 is not valid"),
        ({"checks": [{"type": "regex_magic", "severity": "critical"}]}, "check 1 is not valid"),
        ({"checks": [{"type": "output_valid_json", "severity": "major"}]}, "check 1 is not valid"),
        ({"checks": [{"type": "output_contains", "value": "x", "tool": "orders.lookup",
                      "severity": "minor"}]}, "check 1 is not valid"),
        ({"checks": [{"type": "tool_called", "tool": "orders.lookup", "severity": "critical",
                      "id": "a"}, {"type": "output_valid_json", "severity": "minor",
                      "id": "a"}]}, "two checks share an id"),
        ({"checks": [], "expected_output": " "}, "neither checks nor an expected output"),
        ({"input": "   "}, "the case has no input"),
        ({"input": "x" * 10_001}, "over 10,000 characters"),
        ({"tools_expected": ["orders.lookup"], "tools_forbidden": ["orders.lookup"]},
         "both expects and forbids orders.lookup"),
        ({"evaluation_type": "MAYBE"}, "did not match the schema"),
        ({"extra": 1}, "did not match the schema"),
        ({"checks": "all"}, "did not match the schema"),
    ],
)  # fmt: skip
def test_an_invalid_case_is_dropped_saying_why(change: dict[str, Any], reason: str) -> None:
    problem = read({**GOOD, **change})
    assert isinstance(problem, str)
    assert reason in problem


@pytest.mark.parametrize("stop_reason", ["refusal", "max_tokens", None])
def test_only_a_normal_finish_counts(stop_reason: str | None) -> None:
    problem = read(GOOD, stop_reason=stop_reason)  # type: ignore[arg-type]
    assert isinstance(problem, str) and "stopped without an answer" in problem


def test_a_missing_field_is_dropped() -> None:
    case = {name: value for name, value in GOOD.items() if name != "description"}
    assert "did not match the schema" in str(read(case))


# --- the plan ------------------------------------------------------------------------------


def planned(category: str, tool: str, intent: str) -> PlannedSlot:
    return PlannedSlot(category=category, tool=tool, intent=intent)  # type: ignore[arg-type]


def test_a_plan_is_read_and_balanced() -> None:
    text = json.dumps({"slots": [{"category": "happy_path", "tool": "x", "intent": "a"}]})
    plan = read_plan(ModelOutput(stop_reason="end_turn", text=text), forced_tool=False)
    assert plan == [planned("happy_path", "x", "a")]
    assert "did not match" in str(read_plan(ModelOutput(stop_reason="end_turn", text="{}"),
                                            forced_tool=False))  # fmt: skip


def test_the_happy_path_is_cut_to_a_third_and_unknown_tools_dropped() -> None:
    plan = [planned("happy_path", "orders.lookup", f"happy {n}") for n in range(6)]
    plan += [planned("tool_error", "ghost.tool", "the tool fails"),
             planned("tool_error", "orders.lookup", "the tool fails")]  # fmt: skip
    slots = balanced_slots(plan, 6, PROFILE)
    assert len(slots) == 6
    assert sum(slot.category == "happy_path" for slot in slots) == 2
    assert slots[2] == Slot(category="tool_error", tool="", intent="the tool fails")
    assert all(slot.tool in ("", "orders.lookup", "stripe.refund") for slot in slots)
    assert len({(slot.category, slot.intent) for slot in slots}) == 6, "no repeats"


def test_an_empty_plan_is_filled_round_the_kinds_of_case() -> None:
    slots = balanced_slots([], 9, PROFILE)
    assert len(slots) == 9
    assert "happy_path" not in {slot.category for slot in slots}
    no_tools = AgentProfile(system_prompt="chat", tools=())
    kinds = {slot.category for slot in balanced_slots([], 9, no_tools)}
    assert not kinds & {"tool_error", "tool_chain"}


# --- near-duplicates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "duplicate"),
    [
        ("Refund order 1234, please!", "refund order 1234 please", True),
        ("  Where   is MY parcel?? ", "where is my parcel", True),
        ("Where is my refund for order 1234?", "Where is my refund for order 1235?", True),
        ("Refund order 1234", "Cancel order 1234", False),
        ("Where is my parcel?", "Write me a poem about the sea.", False),
        ("", "anything", False),
        ("Ünïcode façade", "ünïcode FAÇADE!", True),
    ],
)
def test_near_duplicates(first: str, second: str, duplicate: bool) -> None:
    assert near(normalised(first), normalised(second)) is duplicate
    seen = SeenInputs([first])
    assert (seen.resembled(second) is not None) is duplicate or not first


# --- nothing invalid passes ------------------------------------------------------------------

TOOL_NAMES = st.sampled_from(["orders.lookup", "stripe.refund", "ghost", "", "ORDERS.LOOKUP"])
CHECK = st.fixed_dictionaries(
    {"type": st.sampled_from([*CHECK_TYPES, "bogus"])},
    optional={
        "severity": st.sampled_from(["critical", "minor", "fatal"]),
        "tool": TOOL_NAMES,
        "tools": st.lists(TOOL_NAMES, max_size=3),
        "value": st.text(max_size=5),
        "regex": st.booleans(),
        "criterion": st.text(max_size=5),
        "id": st.sampled_from(["a", "b", "expectation"]),
    },
)
CASE = st.fixed_dictionaries(
    {},
    optional={
        "input": st.one_of(st.text(max_size=20), st.integers()),
        "description": st.text(max_size=10),
        "tools_expected": st.lists(TOOL_NAMES, max_size=3),
        "tools_forbidden": st.lists(TOOL_NAMES, max_size=3),
        "checks": st.lists(CHECK, max_size=4),
        "expected_output": st.text(max_size=10),
        "evaluation_type": st.sampled_from(["BOOLEAN", "SCORE", "NEITHER"]),
    },
)


@settings(max_examples=400, deadline=None)
@given(CASE)
def test_nothing_invalid_becomes_a_candidate(case: dict[str, Any]) -> None:
    result = read(case)
    if isinstance(result, str):
        return
    content = result.content
    assert isinstance(content.input, str) and content.input.strip()
    assert content.checks or content.expected_output
    named = {*result.tools_expected, *result.tools_forbidden}
    for check in content.checks or ():
        assert isinstance(check, Check)  # type: ignore[arg-type,misc]
        if isinstance(check, ToolCalled | ToolNotCalled):
            named.add(check.tool)
        elif isinstance(check, ToolOrder):
            named.update(check.tools)
    assert named <= PROFILE.tool_names
    ids = [check.id for check in content.checks or () if check.id is not None]
    assert len(ids) == len(set(ids))
    # It is exactly what a test case could be written with.
    msgspec.convert(msgspec.to_builtins(content.checks), list[Check])


def test_a_plan_nested_too_deeply_is_refused_saying_so() -> None:
    deep = "[" * 5_000 + "]" * 5_000
    output = ModelOutput(stop_reason="end_turn", text=f'{{"slots": [], "x": {deep}}}')
    assert (
        read_plan(output, forced_tool=False) == "the answer is JSON nested more than 64 levels deep"
    )
