"""What a client can call next with what an operation created: the description's links.

They are what Schemathesis's stateful phase follows, so every operation on something a client
creates is reached from its create (a test holds this). Traces are the exception: one is stored
by a worker after the export answers, so no link could lead straight to it.
"""

from __future__ import annotations

from typing import NamedTuple


class Follow(NamedTuple):
    """An operation a client can call next, and where its inputs are in the answer."""

    parameters: dict[str, str]
    body: dict[str, str] | None = None


_AGENT = {"agent_id": "$response.body#/id"}
_DATASET = {"dataset_id": "$response.body#/id"}
_CASE = {"test_case_id": "$response.body#/id"}
_RUN = {"run_id": "$response.body#/run_id"}
_RULE = {"rule_id": "$response.body#/id"}
_ALERT = {"alert_id": "$response.body#/id"}
_DRAFT = {
    "dataset_id": "$response.body#/drafts/0/dataset_id",
    "draft_id": "$response.body#/drafts/0/id",
}
# Each operation that creates something: its success status, and what can be done with it next
# (so a client, and Schemathesis's stateful phase, can reach every operation from a create).
LINKS: dict[str, tuple[str, dict[str, Follow]]] = {
    "createAlert": ("201", {
        name: Follow(_ALERT) for name in ("getAlert", "deleteAlert", "testAlert")
    }),
    "createTraceRule": ("201", {
        name: Follow(_RULE) for name in ("getTraceRule", "deleteTraceRule")
    }),
    "createAgent": ("201", {
        name: Follow(_AGENT) for name in ("getAgent", "updateAgent", "deleteAgent", "invokeAgent")
    }),
    "createDataset": ("201", {
        **{name: Follow(_DATASET) for name in (
            "getDataset", "updateDataset", "deleteDataset", "listTestCases", "createTestCase",
            "importTestCases", "listFlakyCases", "exportTestCases", "generateCases",
            "listCaseDrafts", "createDatasetVersion", "listDatasetVersions", "getJudgeAgreement",
        )},
        "createRun": Follow({}, {"dataset_id": "$response.body#/id"}),
    }),
    "createTestCase": ("201", {
        **{name: Follow(_CASE)
           for name in ("getTestCase", "updateTestCase", "deleteTestCase", "previewTestCase")},
        "addJudgeExample": Follow({**_CASE, "check_id": "$response.body#/checks/0/id"}),
    }),
    "createRun": ("201", {
        **{name: Follow(_RUN) for name in (
            "getRun", "runEvents", "cancelRun", "listRunResults", "compareRuns",
        )},
        "postRunResults": Follow({}, {"run_id": "$response.body#/run_id"}),
        "nextUserTurn": Follow(_RUN, {"test_case_id": "$response.body#/test_cases/0/test_case_id"}),
    }),
    "generateCases": ("201", {
        name: Follow(_DRAFT)
        for name in ("acceptCaseDraft", "rejectCaseDraft", "regenerateCaseDraft")
    }),
}  # fmt: skip
