"""Trajectories for comparing our tool checks with LangChain's agentevals trajectory match.

A trajectory is the tool calls an agent made, in order. The same trajectory goes to both
sides as OpenAI chat messages (agentevals reads the messages, we read the assistant messages'
`tool_calls` as an agent would post them). The generator is deterministic: a fixed seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from typing import Any

# agentevals ships no type information.
from agentevals.trajectory.match import (  # type: ignore[import-untyped]
    create_trajectory_match_evaluator,
)

Arguments = dict[str, Any]
Call = tuple[str, Arguments]
Trajectory = tuple[Call, ...]
Message = dict[str, Any]

# The tools an agent has: a check may forbid each by name.
TOOLS = ("search", "lookup", "refund")
KEYS = ("id", "q", "n", "opts")
# Small values, chosen so that Python's == and JSON equality meet: 1 and 1.0 (equal in both),
# true and 1 (equal to Python only), nested objects and lists, strings.
VALUES: tuple[Any, ...] = (
    1,
    2,
    1.0,
    0,
    True,
    False,
    "a",
    "b",
    {"x": 1},
    {"x": True},
    {"x": 1, "y": "a"},
    [1, "a"],
    [True],
)


def messages(trajectory: Iterable[Call], *, parallel: bool = False) -> list[Message]:
    """A question, each call in its own assistant message (or all in one, `parallel`), each
    answered by a tool message, then the reply."""
    calls = [_openai_call(index, name, args) for index, (name, args) in enumerate(trajectory)]
    groups = [calls] if parallel and calls else [[call] for call in calls]
    said: list[Message] = [{"role": "user", "content": "Refund order 7 please."}]
    for group in groups:
        said.append({"role": "assistant", "content": "", "tool_calls": group})
        said.extend({"role": "tool", "content": "ok", "tool_call_id": c["id"]} for c in group)
    said.append({"role": "assistant", "content": "Done."})
    return said


def _openai_call(index: int, name: str, arguments: Arguments) -> dict[str, Any]:
    # OpenAI sends arguments as a JSON string; both sides parse it.
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": f"call_{index}", "type": "function", "function": function}


def wire_calls(said: list[Message]) -> list[dict[str, Any]]:
    """The tool calls of the assistant messages, in order, as an agent posts them to us."""
    return [call for message in said for call in message.get("tool_calls") or ()]


def agentevals_verdict(
    mode: str,
    args_mode: str,
    reference: list[Message],
    actual: list[Message],
    overrides: dict[str, Any] | None = None,
) -> bool:
    """agentevals' trajectory match score for the actual messages against the reference."""
    evaluator = create_trajectory_match_evaluator(
        trajectory_match_mode=mode,
        tool_args_match_mode=args_mode,
        tool_args_match_overrides=overrides,
    )
    score = evaluator(outputs=actual, reference_outputs=reference)["score"]
    assert isinstance(score, bool)
    return score


def generated_pairs(count: int, seed: int) -> list[tuple[Trajectory, Trajectory]]:
    """(reference, actual) pairs: a random reference of one to three calls (sometimes with a
    call repeated), and the actual one made from it by one or two small changes (or none)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        reference = tuple(_call(rng) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:
            reference += (rng.choice(reference),)
        actual = reference
        for _ in range(rng.choice((0, 1, 1, 2))):
            actual = rng.choice(_CHANGES)(rng, actual)
        pairs.append((reference, actual))
    return pairs


def _call(rng: random.Random) -> Call:
    keys = rng.sample(KEYS, rng.randint(0, 3))
    return rng.choice(TOOLS), {key: rng.choice(VALUES) for key in keys}


def _at(rng: random.Random, trajectory: Trajectory) -> int:
    return rng.randrange(len(trajectory))


def _replaced(trajectory: Trajectory, index: int, call: Call) -> Trajectory:
    return (*trajectory[:index], call, *trajectory[index + 1 :])


def _shuffled(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    calls = list(trajectory)
    rng.shuffle(calls)
    return tuple(calls)


def _dropped(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    if not trajectory:
        return trajectory
    index = _at(rng, trajectory)
    return trajectory[:index] + trajectory[index + 1 :]


def _repeated(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    if not trajectory:
        return trajectory
    index = _at(rng, trajectory)
    return trajectory[: index + 1] + trajectory[index:]


def _added(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    index = rng.randint(0, len(trajectory))
    return (*trajectory[:index], _call(rng), *trajectory[index:])


def _renamed(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    if not trajectory:
        return trajectory
    index = _at(rng, trajectory)
    name, args = trajectory[index]
    return _replaced(trajectory, index, (rng.choice([t for t in TOOLS if t != name]), args))


def _edited(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    """One call's arguments with a key set to another value, added, or taken out."""
    if not trajectory:
        return trajectory
    index = _at(rng, trajectory)
    name, args = trajectory[index]
    edited = dict(args)
    if edited and rng.random() < 0.4:
        del edited[rng.choice(sorted(edited))]
    else:
        edited[rng.choice(KEYS)] = rng.choice(VALUES)
    return _replaced(trajectory, index, (name, edited))


def _renumbered(rng: random.Random, trajectory: Trajectory) -> Trajectory:
    """One call's arguments with each number written another way: 1 as 1.0 or true, and back."""
    if not trajectory:
        return trajectory
    index = _at(rng, trajectory)
    name, args = trajectory[index]
    return _replaced(trajectory, index, (name, {k: _renumber(rng, v) for k, v in args.items()}))


def _renumber(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _renumber(rng, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_renumber(rng, item) for item in value]
    others = {1: (1.0, True), 0: (False, 0.0)}
    for number, spellings in others.items():
        if value == number and not isinstance(value, str):
            return rng.choice([number, *spellings])
    return value


_CHANGES: tuple[Callable[[random.Random, Trajectory], Trajectory], ...] = (
    _shuffled,
    _dropped,
    _repeated,
    _added,
    _renamed,
    _edited,
    _edited,
    _renumbered,
    _renumbered,
)
