"""What grading a case involves: its checks (ids assigned), ungraded items, its expectation."""

from __future__ import annotations

from typing import NamedTuple

from agentlasso.domain.checks import Check, assign_check_ids
from agentlasso.domain.grades import UngradedItem
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.legacy import criteria_checks


class CasePlan(NamedTuple):
    """The explicit checks to grade and the items that are listed but never graded."""

    checks: tuple[Check, ...]
    ungraded_items: tuple[UngradedItem, ...]
    # The case has a checks list (maybe empty), so its evaluation_criteria_json is not read.
    criteria_ignored: bool


def plan_case(content: TestCaseContent) -> CasePlan:
    """The case's checks: its checks list, or when it has none its older criteria (4.4).

    An empty checks list is a list: it is authoritative and the criteria are not read, just
    as editing a converted case down to no checks must not bring its old criteria back.
    """
    if content.checks is None:
        checks, items = criteria_checks(content.evaluation_criteria_json)
        return CasePlan(checks, items, False)
    checks = content.checks
    for check in checks:
        if check.id is None:
            # Ids are assigned at write time; this only keeps a stray unassigned check gradable.
            checks = assign_check_ids(checks)
            break
    return CasePlan(checks, (), bool(content.evaluation_criteria_json))


def expected_output(content: TestCaseContent) -> str | None:
    """The expected output the judge grades as the implicit check, or None when absent or blank."""
    expected = content.expected_output
    return expected if expected is not None and expected.strip() else None
