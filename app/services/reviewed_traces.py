"""From production (contract section 15): a reviewed trace turned into a test case whose
expectation is what its reviewer decided: the corrected reply they wrote, or the trace's own
reply when they passed it."""

from __future__ import annotations

from uuid import UUID

from agentlasso.domain.review import ReviewLabel
from agentlasso.domain.test_cases import TestCase
from agentlasso.errors import Conflict
from agentlasso.services import review
from agentlasso.services import traces as trace_service
from agentlasso.services.platform import Platform


def expectation_of(labels: list[ReviewLabel], trace_output: str | None) -> str:
    """The expected output the reviewers' newest verdict makes: a corrected reply first, else
    the trace's reply when it was passed; Conflict when they left none to expect."""
    for label in sorted(labels, key=lambda each: each.updated_at, reverse=True):
        if label.corrected_output:
            return label.corrected_output
        if label.verdict is True and trace_output:
            return trace_output
        if label.verdict is not None:
            break
    raise Conflict(
        "This trace's review gives no reply to expect: pass its reply, or write a corrected "
        "reply, in its review first."
    )


async def case_from_reviewed_trace(
    platform: Platform, project_id: UUID, item_id: UUID, dataset_id: UUID
) -> TestCase:
    """A test case of the reviewed trace, in the dataset, expecting what its reviewer decided."""
    item = await review.get_item(platform, project_id, item_id)
    if item.trace_id is None:
        raise Conflict("This review item is a run's result, which is a test case already.")
    trace = await trace_service.get_trace_summary(platform, project_id, item.trace_id)
    expected = expectation_of(await review.labels_of(platform, item), trace.output)
    case, _, _ = await trace_service.make_case_from_trace(
        platform, project_id, trace, dataset_id, expected_output=expected
    )
    return case
