"""The simulated user: a model that plays the user of a conversation case, turn by turn.

It uses the judge's key and model (the project's own, else the server's: app/judge/keys.py)
and the judge's calls (our timeout, retries on overload, reasons for an outage). An outage, or
an answer still unusable after the retries, is a UserTurn with `failure` set: a message is
never made up in its place. It never decides a verdict.

Loads the model SDK: the API imports it only inside the endpoint that needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import msgspec

from agentlasso.domain.conversations import Message, SimulatedUser, UserTurn
from agentlasso.judge.calls import priced_usd
from agentlasso.judge.model_calls import Failure, JudgeSettings, ModelCaller, Reply, Tally
from agentlasso.judge.user_prompts import USER_TOOL_NAME, UserAnswer, read_user_answer, user_params
from agentlasso.retry_policy import Sleep

WHO = "the simulated user"


class AskedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """One next-turn question: the answer, and what asking took and cost."""

    turn: UserTurn
    # Requests made, failed ones included (as the judge's calls are counted).
    calls: int
    # None when the server has no price for the model (its tokens are still counted).
    cost_usd: float | None


class SimulatedUserPlayer:
    """Asks the model for the simulated user's next turn; shared by the turns of many cases."""

    def __init__(
        self,
        settings: JudgeSettings,
        prices: Mapping[str, tuple[float, float]],
        *,
        server_key: bool = False,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._prices = prices
        self._caller = ModelCaller(settings, sleep, who=WHO, use="simulated_user")
        # The server's key, not the project's: its spend counts against the server's budget.
        self.server_key = server_key

    @property
    def model(self) -> str:
        """The model this player asks."""
        return self._settings.model

    async def next_turn(self, simulated: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
        """The next user message, or that the goal is reached or out of reach, or a failure."""
        return (await self.ask(simulated, messages)).turn

    async def ask(self, simulated: SimulatedUser, messages: tuple[Message, ...]) -> AskedTurn:
        """next_turn, with the calls it took and their price."""
        tally = Tally(self._settings.model)
        if self._caller.sdk is None:
            return self._asked(UserTurn(user=None, done=False, reason="", failure=NO_KEY), tally)
        forced_tool = self._caller.forced_tool
        params = user_params(
            simulated, messages, model=self._settings.model,
            max_tokens=self._settings.max_tokens, forced_tool=forced_tool,
        )  # fmt: skip

        def read(reply: Reply) -> UserAnswer | str:
            return read_user_answer(reply.output, forced_tool=forced_tool)

        def usable(answer: UserAnswer | str) -> bool:
            return not isinstance(answer, str)

        answer = await self._caller.ask(params, USER_TOOL_NAME, tally, read, usable)
        return self._asked(_turn(answer, tally), tally)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._caller.aclose()

    def _asked(self, turn: UserTurn, tally: Tally) -> AskedTurn:
        cost: float | None
        try:
            cost = priced_usd(tally.usage, tally.model, self._settings.model, self._prices)
        except KeyError:
            cost = None
        return AskedTurn(turn=turn, calls=tally.attempts, cost_usd=cost)


NO_KEY = "no model is configured to play the user: set ANTHROPIC_API_KEY"


def _turn(answer: UserAnswer | str | Failure, tally: Tally) -> UserTurn:
    """The answer as a UserTurn; a failure or an unusable answer says why, with no message."""
    if isinstance(answer, UserAnswer):
        done = answer.status != "continue"
        return UserTurn(
            user=None if done else answer.message,
            done=done,
            reason=answer.reason or _STATUS_WORDS[answer.status],
            usage=tally.usage,
            model=tally.model,
        )
    if isinstance(answer, Failure):
        failure = answer.reason
        if answer.retryable:
            tries = "try" if tally.attempts == 1 else "tries"
            failure = f"{WHO} was unavailable after {tally.attempts} {tries}: {answer.reason}"
    else:
        failure = f"{WHO}'s answer could not be used: {answer}"
    return UserTurn(
        user=None, done=False, reason=failure, usage=tally.usage, model=tally.model,
        failure=failure,
    )  # fmt: skip


_STATUS_WORDS = {
    "continue": "The simulated user goes on.",
    "goal_reached": "The simulated user's goal is reached.",
    "goal_out_of_reach": "The simulated user's goal is out of reach.",
}
