"""The demo support bot of `agentlasso dev`, served by the API itself (never in production)."""

from __future__ import annotations

from typing import Any

from litestar import post
from litestar.params import Body

from agentlasso.devstack.demo import DEMO_AGENT_PATH, demo_reply
from agentlasso.http.strict_bodies import read_bodies_strictly


# Outside /api/v1, so its body is checked here: JSON nested too deeply is a 422, not a 500.
@post(
    DEMO_AGENT_PATH,
    operation_id="demoAgent",
    tags=["dev"],
    status_code=200,
    before_request=read_bodies_strictly,
)
async def demo_agent(data: Any = Body()) -> dict[str, Any]:  # noqa: B008
    """Answer as the demo support bot does: `{"output", "tool_calls"}` for `{"input", ...}`."""
    return demo_reply(data.get("input") if isinstance(data, dict) else None)
