"""The simulated user in a worker: one player per key and model for the worker's life, asked
under the judge's slots (its calls are the judge's model's), its spend on the server's key
counted against the project's daily budget, as the judge's is.
"""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.config import Settings
from agentlasso.domain.conversation_play import NextUser
from agentlasso.domain.conversations import Message, SimulatedUser, UserTurn
from agentlasso.judge.calls import Judge
from agentlasso.judge.keys import JudgeClients
from agentlasso.judge.simulated_user import SimulatedUserPlayer


class SimulatedUsers:
    """A worker's simulated-user players, chosen per project like its judge clients."""

    def __init__(self, settings: Settings, clients: JudgeClients, judge: Judge | None) -> None:
        self._settings = settings
        self._clients = clients
        self._judge = judge
        self._players: dict[tuple[str, str, bool], SimulatedUserPlayer] = {}

    async def for_project(self, project_id: UUID) -> NextUser | None:
        """Who plays the user in the project's conversations; None when it has no model."""
        chosen = await self._clients.settings_for(project_id)
        if chosen is None or chosen.api_key is None:
            return None
        server_key = await self._clients.uses_server_key(project_id)
        key = (chosen.api_key, chosen.model, server_key)
        player = self._players.get(key)
        if player is None:
            player = SimulatedUserPlayer(chosen, self._settings.judge_prices, server_key=server_key)
            self._players[key] = player
        return self._asking(player, project_id)

    def _asking(self, player: SimulatedUserPlayer, project_id: UUID) -> NextUser:
        judge = self._judge
        spend = judge.server_spend if judge is not None and player.server_key else None

        async def next_user(simulated: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
            if spend is not None and (spent := await spend.spent_reason(project_id)) is not None:
                return UserTurn(user=None, done=False, reason=spent, failure=spent, calls=0)
            if judge is None:
                asked = await player.ask(simulated, messages)
            else:
                async with judge.slot(project_id):
                    asked = await player.ask(simulated, messages)
            if spend is not None and asked.cost_usd:
                await spend.add(project_id, asked.cost_usd)
            return msgspec.structs.replace(asked.turn, cost_usd=asked.cost_usd, calls=asked.calls)

        return next_user

    async def aclose(self) -> None:
        """Close every player's connections."""
        for player in self._players.values():
            await player.aclose()
        self._players.clear()
