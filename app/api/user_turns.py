"""The simulated user's next turn for a CI client: /api/v1/eval-runs/{id}/next-user-turn."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import FromPath, JSONBody

from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.user_turns import NextUserTurn, UserTurnAsk
from agentlasso.services import user_turns


class UserTurnController(Controller):
    """The simulated user of a CI-mode run's conversations."""

    path = "/eval-runs/{run_id:str}/next-user-turn"
    tags = ("runs",)

    @post(operation_id="nextUserTurn", status_code=200)
    async def next_user_turn(
        self, platform: PlatformDep, project_id: ProjectId, run_id: FromPath[str],
        data: JSONBody[UserTurnAsk],
    ) -> NextUserTurn:  # fmt: skip
        """The conversation's next user message, written by the simulated user from its
        persona, its goal and the transcript, or `done` (the goal reached or out of reach, or
        `max_turns reached`). 503 when the model could not be asked: record the conversation
        as not graded."""
        turn = await user_turns.next_user_turn(platform, project_id, parse_id(run_id, "run"), data)
        return NextUserTurn(user=turn.user, done=turn.done, reason=turn.reason)
