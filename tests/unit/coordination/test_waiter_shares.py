"""A project's share of an API process's waiting places: half of what the others leave free."""

from __future__ import annotations

import pytest

from agentlasso.coordination.waiter_shares import within_fair_share


@pytest.mark.parametrize(
    ("held_by_project", "held_in_all", "capacity", "admitted"),
    [
        (0, 0, 10, True),  # an idle server
        (4, 4, 10, True),  # alone: up to half of everything
        (5, 5, 10, False),
        (0, 9, 10, True),  # a newcomer takes the last place
        (0, 10, 10, False),  # none left
        (1, 9, 10, False),  # others left 2: one of them is its share
        (2, 8, 10, False),  # others left 4: it holds half of them already
        (1, 7, 10, True),
    ],
)
def test_a_project_holds_at_most_half_of_what_others_leave_free(
    held_by_project: int, held_in_all: int, capacity: int, admitted: bool
) -> None:
    assert within_fair_share(held_by_project, held_in_all, capacity) is admitted


def test_no_number_of_projects_below_many_fills_the_server() -> None:
    """Projects arriving one after another, each taking all it may of 5,000 (1,000 at most):
    five projects leave room, and each newcomer finds a place while any is left."""
    capacity, per_project, holdings = 5_000, 1_000, []
    while sum(holdings) < capacity:
        held = 0
        while held < per_project and within_fair_share(held, sum(holdings) + held, capacity):
            held += 1
        holdings.append(held)
    assert sum(holdings[:5]) < capacity
    assert len(holdings) > 10 and all(held >= 1 for held in holdings)
