"""The simulated user in a worker: one player per key and model for the worker's life, asked
under the judge's slots (its calls are the judge's model's), its spend on the server's key
counted against the project's daily budget, as the judge's is.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from uuid import UUID

import msgspec
from redis.exceptions import RedisError

from agentlasso.config import Settings
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso.domain.conversation_play import NextUser
from agentlasso.domain.conversations import Message, SimulatedUser, UserTurn
from agentlasso.judge.calls import Judge
from agentlasso.judge.keys import JudgeClients
from agentlasso.judge.simulated_user import SimulatedUserPlayer

# How stale this worker's reading of a project's spend on the server's key may be, and how long
# what it spent may go uncounted. A simulated user asks the model hundreds of times a second;
# reading and adding to the shared count each time was two of its five Redis round trips.
SPEND_EVERY_S = 1.0
NO_SLOT = (
    "the simulated user could not be asked: Redis, which holds the judge's slots, did not answer"
)

log = logging.getLogger("agentlasso.simulated_users")


class SpendMeter:
    """A project's spend on the server's key, as one worker counts it: the day's budget read
    at most once a second; what the worker spent added by its next call a second on, or by
    the worker's duty (`SimulatedUsers.share_spend`, every SPEND_EVERY_S), so a worker that
    goes idle shares it within a second too. The budget may be overrun by about a second of
    the workers' calls; a worker that dies loses at most a second of its count."""

    def __init__(
        self, spend: ServerKeySpend, project_id: UUID, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._spend = spend
        self._project_id = project_id
        self._clock = clock
        self._reason: str | None = None
        self._read_at = -math.inf
        self._unsaved_usd = 0.0
        self._saved_at = clock()

    async def spent_reason(self) -> str | None:
        """Why no more calls may be made on the project's behalf today, or None."""
        now = self._clock()
        if now - self._read_at >= SPEND_EVERY_S:
            self._read_at = now
            self._reason = await self._spend.spent_reason(self._project_id)
        return self._reason

    async def add(self, cost_usd: float) -> None:
        """Count a call's cost; the count is shared once a second."""
        self._unsaved_usd += cost_usd
        if self._clock() - self._saved_at >= SPEND_EVERY_S:
            await self.flush()

    @property
    def unsaved_usd(self) -> float:
        """What this worker spent that is not shared yet."""
        return self._unsaved_usd

    async def flush(self) -> None:
        """Share what is not counted yet."""
        unsaved, self._unsaved_usd = self._unsaved_usd, 0.0
        self._saved_at = self._clock()
        if unsaved > 0:
            await self._spend.add(self._project_id, unsaved)


class SimulatedUsers:
    """A worker's simulated-user players, chosen per project like its judge clients."""

    def __init__(self, settings: Settings, clients: JudgeClients, judge: Judge | None) -> None:
        self._settings = settings
        self._clients = clients
        self._judge = judge
        self._players: dict[tuple[str, str, bool], SimulatedUserPlayer] = {}
        self._meters: dict[UUID, SpendMeter] = {}

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

    def meter(self, project_id: UUID) -> SpendMeter | None:
        """The project's meter of its spend on the server's key; None without a server judge."""
        judge = self._judge
        if judge is None or judge.server_spend is None:
            return None
        meter = self._meters.get(project_id)
        if meter is None:
            meter = self._meters[project_id] = SpendMeter(judge.server_spend, project_id)
        return meter

    async def share_spend(self) -> None:
        """Share every meter's spend not counted yet (a worker duty, every SPEND_EVERY_S)."""
        for meter in list(self._meters.values()):
            if meter.unsaved_usd > 0:
                await meter.flush()

    def _asking(self, player: SimulatedUserPlayer, project_id: UUID) -> NextUser:
        judge = self._judge
        spend = self.meter(project_id) if player.server_key else None

        async def next_user(simulated: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
            if spend is not None and (spent := await spend.spent_reason()) is not None:
                return UserTurn(user=None, done=False, reason=spent, failure=spent, calls=0)
            if judge is None:
                asked = await player.ask(simulated, messages)
            else:
                try:
                    async with judge.slot(project_id):
                        asked = await player.ask(simulated, messages)
                except (RedisError, OSError):
                    # The judge's slots live in Redis: its conversation ends not graded, rather
                    # than the chunk failing with every conversation it holds.
                    log.warning(
                        "the simulated user was not asked: Redis did not answer", exc_info=True
                    )
                    return UserTurn(user=None, done=False, reason=NO_SLOT, failure=NO_SLOT, calls=0)
            if spend is not None and asked.cost_usd:
                await spend.add(asked.cost_usd)
            return msgspec.structs.replace(asked.turn, cost_usd=asked.cost_usd, calls=asked.calls)

        return next_user

    async def aclose(self) -> None:
        """Count what is not counted yet; close every player's connections."""
        for meter in self._meters.values():
            await meter.flush()
        for player in self._players.values():
            await player.aclose()
        self._players.clear()
