"""A dataset's flaky cases: those whose verdict flips from run to run while neither the case nor
the agent changed (the dataset page loads this list after itself, so it never slows the page)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.params import FromPath

from agentlasso.http.auth import PlatformDep
from agentlasso.services import comparisons as comparison_service
from agentlasso.web.objects import dataset_named
from agentlasso.web.rendering import page
from agentlasso.web.sessions import session_of

RECENT_RUNS = 10
LISTED = 20


@get("/datasets/{dataset_id:str}/flaky", name="flaky_cases")
async def flaky_cases(
    request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
) -> Response[Any]:
    """The dataset's flakiest cases over its last completed runs."""
    dataset = await dataset_named(request, platform, dataset_id)
    flaky = await comparison_service.flaky_cases(
        platform, session_of(request).project_id, dataset.id, RECENT_RUNS, LISTED
    )
    return page(request, "flaky.html", dataset=dataset, flaky=flaky, runs=RECENT_RUNS)
