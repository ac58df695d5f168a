"""Benchmark: grade 100,000 case results with 6 deterministic checks each, on one core.

Run: .venv/bin/python tests/perf/bench_grading.py [--cases N] [--profile]
Prints cases per second and microseconds per check for three sets of six checks: the original
types (`classic`), those with two of the section 17 types in the mix (`mixed`: a tool check
with an argument matcher, a JSON Schema), and six of the new kinds (`new`: tool arguments, a
tool order with arguments, max_tool_calls, tool_args_valid against declared tools, a JSON
Schema, latency_below). Target: 50,000 cases/s or more.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import time

from agentlasso.domain.checks import (
    Check,
    LatencyBelow,
    MaxToolCalls,
    OutputContains,
    OutputMatchesSchema,
    OutputNotContains,
    OutputValidJson,
    ToolArgsValid,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
)
from agentlasso.domain.declared_tools import declared_tools
from agentlasso.domain.grades import DeclaredTools, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.tool_arguments import ToolStep
from agentlasso.grading import grade_case, observation_from_wire

CHECKS_PER_CASE = 6
TOOLS = ("orders.lookup", "policy.get", "stripe.refund", "email.send", "crm.note", "audit.log")
PHRASES = (
    "Your refund has been issued and should arrive in 3-5 business days.",
    "I looked up order {n} and it shipped yesterday.",
    "Please contact support if the amount of ${n}.00 looks wrong.",
    "Die Erstattung für Bestellung {n} ist unterwegs. Grüße aus der Straße.",
    "We cannot share card numbers such as 4111 1111 1111 1111 in chat.",
)


def make_content(index: int) -> TestCaseContent:
    """A case with six checks of mixed types: one regex, one JSON check."""
    checks: tuple[Check, ...] = (
        ToolCalled(id="c1", tool=("orders.lookup", "policy.get", "stripe.refund")[index % 3]),
        ToolNotCalled(id="c2", tool="email.send", severity="minor"),
        ToolOrder(id="c3", tools=("orders.lookup", "stripe.refund")),
        OutputContains(id="c4", value="3-5 BUSINESS days" if index % 2 else "Order"),
        OutputNotContains(id="c5", value=rf"\b(?:\d[ -]?){{13,{16 - index % 3}}}\b", regex=True),
        OutputValidJson(id="c6", severity="minor"),
    )
    return TestCaseContent(input=f"case {index}", checks=checks)


# The reply's shape, for output_matches_schema; each case holds its own copy of the schema, as
# cases decoded from the database do.
REPLY_SCHEMA = {
    "type": "object",
    "required": ["reply", "ok"],
    "properties": {"reply": {"type": "string", "maxLength": 2000}, "ok": {"type": "boolean"}},
}
# The agent's declared tools, as a run takes them from the agent when it starts.
TOOL_SCHEMAS = declared_tools(
    [
        {
            "name": name,
            "input_schema": {
                "type": "object",
                "required": ["order_id"],
                "properties": {"order_id": {"type": "integer", "minimum": 1}},
            },
        }
        for name in TOOLS
    ]
)


def make_new_content(index: int) -> TestCaseContent:
    """A case with six checks, five of them of the section 17 types."""
    checks: tuple[Check, ...] = (
        ToolCalled(id="c1", tool="orders.lookup", arguments={"order_id": {"$gte": 1}}),
        ToolOrder(id="c2", tools=("orders.lookup", ToolStep("stripe.refund", {"order_id": 42}))),
        MaxToolCalls(id="c3", count=4 + index % 2),
        ToolArgsValid(id="c4"),
        OutputMatchesSchema(id="c5", schema=json.loads(json.dumps(REPLY_SCHEMA)), severity="minor"),
        LatencyBelow(id="c6", ms=1500),
    )
    return TestCaseContent(input=f"case {index}", checks=checks)


def make_mixed_content(index: int) -> TestCaseContent:
    """The original six with two of them of the new types: the tool check lists an argument,
    the JSON check is a schema."""
    original = make_content(index).checks or ()
    checks: tuple[Check, ...] = (
        ToolCalled(id="c1", tool="orders.lookup", arguments={"order_id": {"$gte": 1}}),
        *original[1:5],
        OutputMatchesSchema(id="c6", schema=json.loads(json.dumps(REPLY_SCHEMA)), severity="minor"),
    )
    return TestCaseContent(input=f"case {index}", checks=checks)


MAKERS = {"classic": make_content, "mixed": make_mixed_content, "new": make_new_content}


def make_observation(rng: random.Random, faithful: bool) -> Observation:
    """A result as posted on the wire: a faithful agent follows the script, others wander."""
    if faithful:
        names = ["orders.lookup", "policy.get", "stripe.refund", "audit.log"][: rng.randrange(3, 5)]
        sentences = [PHRASES[0], PHRASES[1].format(n=rng.randrange(10_000))]
    else:
        names = [rng.choice(TOOLS) for _ in range(rng.randrange(2, 7))]
        sentences = [rng.choice(PHRASES).format(n=rng.randrange(10_000)) for _ in range(4)]
    sentences += [rng.choice(PHRASES[2:4]).format(n=rng.randrange(10_000))]
    text = " ".join(sentences)
    reply = json.dumps({"reply": text, "ok": True}) if rng.random() < 0.5 else text
    calls = [{"name": name, "arguments": '{"order_id": 42}'} for name in names]
    return observation_from_wire(reply, calls, latency_ms=rng.randrange(200, 2000))


def bench(label: str, cases: int, faithful_share: float, profile: bool, mix: str) -> None:
    """Build the inputs, then time grading alone."""
    rng = random.Random(20240601)
    make = MAKERS[mix]
    # Distinct contents, as a run pins distinct cases (a content repeats only across trials).
    contents = [make(index) for index in range(min(cases, 5_000))]
    tools: DeclaredTools | None = TOOL_SCHEMAS if mix == "new" else None
    pairs = [
        (contents[index % len(contents)], make_observation(rng, rng.random() < faithful_share))
        for index in range(cases)
    ]
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    started = time.perf_counter()
    passed = sum(
        grade_case(content, observation, declared_tools=tools).pass_fail
        for content, observation in pairs
    )
    elapsed = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    per_second = cases / elapsed
    per_check_us = elapsed / (cases * CHECKS_PER_CASE) * 1e6
    print(f"{label}: graded {cases:,} cases ({passed:,} passed) in {elapsed:.3f} s")
    print(f"  {per_second:,.0f} cases/s, {per_check_us:.2f} us per check (target: 50,000 cases/s)")


def main() -> None:
    """Parse arguments and run the benchmark on a typical run and on a mostly failing one."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary")
    parser.add_argument("--mix", choices=(*MAKERS, "all"), default="all")
    arguments = parser.parse_args()
    mixes = tuple(MAKERS) if arguments.mix == "all" else (arguments.mix,)
    for mix in mixes:
        typical = f"{mix} checks, typical run (90% of agents follow the script)"
        bench(typical, arguments.cases, 0.9, arguments.profile, mix)
        failing = f"{mix} checks, mostly failing run (details built for most checks)"
        bench(failing, arguments.cases, 0.0, arguments.profile, mix)


if __name__ == "__main__":
    main()
