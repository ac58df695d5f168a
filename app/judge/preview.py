"""The AI judge for previews, opened in the API process the first time a preview needs it;
and the simulated user the API asks (a CI client's next-user-turn, a conversation's preview),
one player per key and model kept open for the process.

Runs are judged by workers; a preview is judged at once, in the request, by the same code (the
cache, the shared limits, repeats near a floor, the project's own key and model). The model SDK
costs a process some 77 MB, so an API that never previews a judged case never loads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentlasso.config import Settings
from agentlasso.domain.grades import JudgeVerdict, Observation
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import Answer, verdicts_needed
from agentlasso.grading.conversation import whole_observation

if TYPE_CHECKING:
    import asyncpg
    from redis.asyncio import Redis

    from agentlasso.judge.calls import Judge
    from agentlasso.judge.keys import JudgeClients
    from agentlasso.judge.simulated_user import SimulatedUserPlayer


class PreviewJudge:
    """Opens the judge and its clients on first use; closes them with the process."""

    def __init__(
        self, settings: Settings, pool: asyncpg.Pool, redis: Redis, secret_key: bytes
    ) -> None:
        self._settings = settings
        self._pool = pool
        self._redis = redis
        self._secret_key = secret_key
        self._opened: tuple[Judge, JudgeClients] | None = None
        self._players: dict[tuple[str, str, bool], SimulatedUserPlayer] = {}

    async def verdicts(
        self,
        project_id: UUID,
        content: TestCaseContent,
        answer: Answer,
        context: dict[str, Any] | None,
    ) -> tuple[Mapping[str, JudgeVerdict], list[JudgeRecord]]:
        """Every verdict grading this reply (or played conversation) needs, asked now; with
        what each cost."""
        requests = verdicts_needed(content, answer)
        if not requests:
            return {}, []
        # A conversation's requests carry the transcript and the reply they judge.
        observation = answer if isinstance(answer, Observation) else whole_observation(answer)
        judge, clients = self._open()
        from agentlasso.judge.calls import RunJudging

        run = RunJudging(
            project_id=project_id,
            client=await clients.for_project(project_id),
            use_cache=True,
            stopped=None,
            server_key=await clients.uses_server_key(project_id),
        )
        answered = await asyncio.gather(
            *(judge.verdict(request, content, observation, context, run) for request in requests)
        )
        verdicts = {
            request.check_id: verdict
            for request, (verdict, _) in zip(requests, answered, strict=True)
        }
        return verdicts, [record for _, record in answered]

    async def simulated_user(self, project_id: UUID) -> SimulatedUserPlayer | None:
        """Who plays the user for the project: its judge key and model, else the server's
        (None when neither has a key); opened once and kept, so a turn costs no new
        connection."""
        from agentlasso.judge.simulated_user import SimulatedUserPlayer

        _, clients = self._open()
        chosen = await clients.settings_for(project_id)
        if chosen is None or chosen.api_key is None:
            return None
        server_key = await clients.uses_server_key(project_id)
        key = (chosen.api_key, chosen.model, server_key)
        player = self._players.get(key)
        if player is None:
            prices = self._settings.judge_prices
            player = self._players[key] = SimulatedUserPlayer(chosen, prices, server_key=server_key)
        return player

    async def aclose(self) -> None:
        """Close the judge clients and the players, if they were ever opened."""
        for player in self._players.values():
            await player.aclose()
        if self._opened is not None:
            await self._opened[1].aclose()

    def _open(self) -> tuple[Judge, JudgeClients]:
        if self._opened is None:
            from agentlasso.coordination.agent_limits import AgentLimiter
            from agentlasso.judge.keys import JudgeClients
            from agentlasso.judge.setup import build_judge

            settings = self._settings
            limiter = AgentLimiter(self._redis, settings.queue_name, settings.slot_lease_s)
            judge = build_judge(settings, self._pool, limiter, self._redis)
            self._opened = (judge, JudgeClients(settings, self._pool, self._secret_key))
        return self._opened
