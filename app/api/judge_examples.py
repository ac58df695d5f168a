"""/api/v1/test-cases/{id}/checks/{check_id}/examples: calibrating an AI-judge criterion with
a labelled result (contract section 15)."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import FromPath, JSONBody

from agentlasso.api.test_cases import case_out
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.review import ExamplePost
from agentlasso.schemas.test_cases import TestCase
from agentlasso.services import judge_examples as service


class JudgeExampleController(Controller):
    """A criterion's calibration examples."""

    path = "/test-cases/{test_case_id:str}/checks/{check_id:str}/examples"
    tags = ("review",)

    @post(operation_id="addJudgeExample")
    async def add(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        test_case_id: FromPath[str],
        check_id: FromPath[str],
        data: JSONBody[ExamplePost],
    ) -> TestCase:
        """Make a labelled result an example of the case's llm_judge check: the judge's prompt
        for it then carries the example; the case is answered as its new revision."""
        case = await service.add_example(
            platform,
            project_id,
            parse_id(test_case_id, "test case"),
            check_id,
            (data.result_ref, data.verdict, data.note),
        )
        return case_out(case)
