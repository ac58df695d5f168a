"""How a worker decides to hand lanes to the rest of the pool (pure arithmetic)."""

from __future__ import annotations

import pytest

from agentlasso_workers.lane_balance import Load, calls_to_hand_over


@pytest.mark.parametrize(
    ("mine", "others", "expected"),
    [
        # Alone: nobody to hand to.
        (Load("a", 4000, 4000), [], 0),
        # A new, empty worker of the same size: half goes over.
        (Load("a", 4000, 4000), [Load("b", 0, 4000)], 2000),
        # The pool is full everywhere: handing over would only move the wait.
        (Load("a", 4000, 1000), [Load("b", 1000, 1000)], 0),
        # Shares go by capacity: a small newcomer gets its share, not half.
        (Load("a", 4000, 4000), [Load("b", 0, 100)], 97),
        # No more than the others have free.
        (Load("a", 3000, 1000), [Load("b", 900, 1000)], 100),
        # Already at or below its share: keeps everything.
        (Load("a", 1000, 2000), [Load("b", 1000, 2000)], 0),
        (Load("a", 500, 2000), [Load("b", 1500, 2000)], 0),
        # An idle worker has nothing to give.
        (Load("a", 0, 4000), [Load("b", 0, 4000)], 0),
        # Four equal workers, one holding everything: three quarters go over.
        (Load("a", 4000, 4000), [Load(w, 0, 4000) for w in "bcd"], 3000),
    ],
)
def test_calls_to_hand_over(mine: Load, others: list[Load], expected: int) -> None:
    assert calls_to_hand_over(mine, [mine, *others]) == expected
