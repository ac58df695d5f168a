"""Human review (contract section 15): the items people label, and what a label says.

A review item is one case result of a run (a run, a case and a trial) or one trace. A person's
label of a case result gives an overall verdict and a verdict on each judged check: an
`llm_judge` check or the case's `expectation`. Only those are labelled, since agreement with
people is a question about the judge; a deterministic check needs no second opinion.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.audit import Actor, CliActor, KeyActor, LinkActor, SsoActor, UserActor
from agentlasso.domain.grades import CheckResult

ReviewStatus = Literal["pending", "done"]
JudgedKind = Literal["llm_judge", "expectation"]
Verdict = Literal["passed", "failed"]
EXPECTATION_ID = "expectation"
# What a reviewer writes: a note a person reads, a corrected reply as long as a reply may be.
MAX_NOTE_CHARS = 4_000
MAX_CORRECTED_OUTPUT_CHARS = 100_000
# What one call may queue: a random sample of a run's results, or traces by id.
MAX_SAMPLE = 10_000
MAX_TRACES_PER_CALL = 1_000
Note = Annotated[str, msgspec.Meta(max_length=MAX_NOTE_CHARS)]


class Reviewer(msgspec.Struct, frozen=True, kw_only=True):
    """Who labelled: a stable key (one label per person per item) and how they are shown."""

    key: str
    name: str


def reviewer_of(actor: Actor) -> Reviewer:
    """The reviewer a caller labels as: a person by their id, a key by its id."""
    match actor:
        case UserActor(id=user_id, email=email):
            return Reviewer(key=f"user:{user_id}", name=email)
        case KeyActor(id=key_id, prefix=prefix):
            return Reviewer(key=f"api_key:{key_id}", name=f"key {prefix}")
        case LinkActor():
            return Reviewer(key="sign_in_link", name="sign-in link")
        case CliActor(command=command):
            return Reviewer(key=f"cli:{command}", name=f"agentlasso {command}")
        case SsoActor():  # pragma: no cover - refused sign-ins never act
            raise ValueError("a refused single sign-on cannot label")


class CheckLabel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A person's verdict on one judged check, as posted."""

    check_id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    verdict: Verdict
    note: Note | None = None


class JudgedCheck(msgspec.Struct, frozen=True, kw_only=True):
    """A judged check of the labelled result: what it asked and what the judge said."""

    check_id: str
    kind: JudgedKind
    # The llm_judge check's criterion; None for the expectation.
    criterion: str | None
    judge_passed: bool | None
    # Each sample's verdict, when the judge was asked more than once.
    samples: tuple[bool, ...] = ()


class StoredCheckLabel(msgspec.Struct, frozen=True, kw_only=True):
    """One person's verdict on a judged check, beside the judge's."""

    check_id: str
    kind: JudgedKind
    criterion: str | None
    human_passed: bool
    judge_passed: bool | None
    note: str | None


class ReviewLabel(msgspec.Struct, frozen=True, kw_only=True):
    """One person's labels of one item."""

    reviewer: str
    reviewer_name: str
    verdict: bool | None
    note: str | None
    corrected_output: str | None
    checks: tuple[StoredCheckLabel, ...]
    created_at: datetime
    updated_at: datetime


class ReviewItem(msgspec.Struct, frozen=True, kw_only=True):
    """A case result or a trace waiting for (or given) people's labels."""

    id: UUID
    project_id: UUID
    seq: int
    run_id: UUID | None
    test_case_id: UUID | None
    trial: int | None
    dataset_id: UUID | None
    trace_id: str | None
    assignee_id: UUID | None
    assignee_email: str | None
    done_at: datetime | None
    created_at: datetime
    label_count: int = 0

    @property
    def status(self) -> ReviewStatus:
        """done once its assignee (or, unassigned, anyone) has labelled it."""
        return "pending" if self.done_at is None else "done"


def judged_checks(
    check_results: tuple[CheckResult, ...],
    criteria: Mapping[str, str],
    samples: Mapping[str, tuple[float, ...]],
    expectation_floor: float,
) -> dict[str, JudgedCheck]:
    """The result's judged checks by id, with the judge's verdict on each (None: not graded).

    `criteria` are the graded revision's llm_judge criteria by check id. A sample of a yes/no
    verdict is 1 or 0; an expectation's SCORE samples pass at the case's confidence floor.
    """
    judged: dict[str, JudgedCheck] = {}
    for result in check_results:
        is_expectation = result.id == EXPECTATION_ID
        if result.type != "llm_judge" and not is_expectation:
            continue
        floor = expectation_floor if is_expectation else 0.5
        judged[result.id] = JudgedCheck(
            check_id=result.id,
            kind="expectation" if is_expectation else "llm_judge",
            criterion=None if is_expectation else criteria.get(result.id),
            judge_passed=result.passed,
            samples=tuple(sample >= floor for sample in samples.get(result.id, ())),
        )
    return judged
