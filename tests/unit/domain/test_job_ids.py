"""Telling a judge chunk's job from an agent chunk's by its id (a worker's room ignores the
former: it calls no agent)."""

from __future__ import annotations

import pytest

from agentlasso.domain.runs import is_judge_job

RUN = "6f1c2a8e-2d7b-4f3e-9a51-0c1d2e3f4a5b"


@pytest.mark.parametrize(
    ("job_id", "judge"),
    [
        (f"chunk:{RUN}:-1:1", True),
        (f"chunk:{RUN}:-42:1", True),
        (f"chunk:{RUN}:0:1", False),
        (f"chunk:{RUN}:17:3", False),
        ("something else", False),
        ("", False),
    ],
)
def test_judge_jobs_are_the_negative_chunks(job_id: str, judge: bool) -> None:
    assert is_judge_job(job_id) is judge
