"""Two sequences of tool calls lined up, for a person comparing what an agent did in a baseline
run with what it did now: each call is the same in both, added now, or removed since.

difflib's matcher costs up to the product of the two lengths, so sequences past MAX_CALL_PAIRS
are not aligned at all (the caller says so and shows both lists instead)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Literal, NamedTuple

AlignedKind = Literal["same", "added", "removed"]

# Calls in one sequence times calls in the other: far beyond any agent's turn, and still fast.
MAX_CALL_PAIRS = 250_000


class AlignedCall(NamedTuple):
    """One line of the alignment: the tool's name in the baseline, now, or both."""

    kind: AlignedKind
    before: str | None
    after: str | None


def align_tool_calls(before: Sequence[str], after: Sequence[str]) -> list[AlignedCall] | None:
    """The calls of `before` and `after` in order, matched where the names agree; None when
    the sequences are too long to align."""
    if len(before) * len(after) > MAX_CALL_PAIRS:
        return None
    # No autojunk: in a short sequence a tool called often is still a good anchor.
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    aligned: list[AlignedCall] = []
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            aligned += [AlignedCall("same", name, name) for name in before[old_start:old_end]]
            continue
        aligned += [AlignedCall("removed", name, None) for name in before[old_start:old_end]]
        aligned += [AlignedCall("added", None, name) for name in after[new_start:new_end]]
    return aligned
