"""The objects a page's path names, looked up in the session's project: another project's
object is a NotFound, as one that does not exist is."""

from __future__ import annotations

from typing import Any

from litestar import Request

from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import TestCase
from agentlasso.http.pagination import parse_id
from agentlasso.services import datasets as dataset_service
from agentlasso.services import test_cases as case_service
from agentlasso.services.platform import Platform
from agentlasso.web.sessions import session_of


async def dataset_named(
    request: Request[Any, Any, Any], platform: Platform, raw_id: str
) -> Dataset:
    """The dataset the path names."""
    return await dataset_service.get_dataset(
        platform, session_of(request).project_id, parse_id(raw_id, "dataset")
    )


async def case_named(request: Request[Any, Any, Any], platform: Platform, raw_id: str) -> TestCase:
    """The test case the path names."""
    return await case_service.get_test_case(
        platform, session_of(request).project_id, parse_id(raw_id, "test case")
    )


async def case_and_dataset_named(
    request: Request[Any, Any, Any], platform: Platform, raw_id: str
) -> tuple[TestCase, Dataset]:
    """The test case the path names, and its dataset (in one round trip)."""
    return await case_service.get_test_case_with_dataset(
        platform, session_of(request).project_id, parse_id(raw_id, "test case")
    )
