"""How many of an API process's waiting places (long-polls, event streams, CI batches awaiting
verdicts) one project may hold.

A fixed cap per project alone lets a few projects fill the process: five at 1,000 each fill
5,000. So a project may also hold at most half of the places the other projects leave free:
however many projects pile in, each newcomer still finds a place while any is left, and
filling the process takes many projects, not a few.
"""

from __future__ import annotations


def within_fair_share(held_by_project: int, held_in_all: int, capacity: int) -> bool:
    """Whether a project holding `held_by_project` of the `held_in_all` places taken may take
    one more of `capacity`: it may hold at most half of what the others leave free."""
    left_by_others = capacity - (held_in_all - held_by_project)
    return 2 * held_by_project < left_by_others
