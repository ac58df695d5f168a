"""The simulated user's next message for a CI client's conversation (contract section 13).

`agentlasso ci` plays a conversation case against the agent itself; for a case with a simulated
user it asks here for each next user message. The model is the judge's (the project's key and
model, else the server's), and what it costs is added to the run's judge counters (the run's
`judge` usage and cost): the simulated user is the judge's model at work for the run, so the
run's one cost figure includes it. A call on the server's key also counts against the server's
daily budget for the project, as judge calls do.
"""

from __future__ import annotations

import logging
import math
import time
from uuid import UUID

import msgspec
from redis.exceptions import RedisError

from agentlasso.coordination.rate_limits import TokenBucket
from agentlasso.coordination.server_spend import seconds_to_next_day
from agentlasso.db import pinned_cases, run_counts
from agentlasso.db import runs as run_rows
from agentlasso.db.run_counts import JudgeSpend
from agentlasso.domain.conversations import Conversation, Message, SimulatedUser, UserTurn
from agentlasso.domain.runs import Counters, Run
from agentlasso.errors import (
    Conflict,
    FieldError,
    InvalidInput,
    NotFound,
    TooManyRequests,
    Unavailable,
)
from agentlasso.observability import metrics
from agentlasso.schemas.user_turns import UserTurnAsk
from agentlasso.services.platform import Platform

log = logging.getLogger("agentlasso.simulated_user")

# The transcript's JSON at most (what the model is shown of each message is cut further).
MAX_TRANSCRIPT_BYTES = 2_000_000
# Next-turn questions a minute of one project, across every API process: each is a model call
# on its key (or the server's). A constant for now; a setting would be
# AGENTLASSO_QUOTA_SIMULATED_TURNS_PER_MIN.
TURNS_PER_MIN = 600
# The wait a client is told after the model was unavailable.
OUTAGE_RETRY_S = 30
MAX_TURNS_REACHED = "max_turns reached"
OPENING = "The conversation's opening message."
NO_MODEL_KEY = (
    "No model is configured to play the simulated user: set the project's Anthropic API key "
    "under Settings, AI judge (or the server's ANTHROPIC_API_KEY)."
)


async def next_user_turn(
    platform: Platform, project_id: UUID, run_id: UUID, ask: UserTurnAsk
) -> UserTurn:
    """The next user message, or that the conversation is done; Unavailable (503) when the
    model could not be asked, so the client records the conversation as not graded."""
    _check_size(ask)
    await _admit(platform, project_id)
    run = await _run_of(platform, project_id, run_id)
    simulated, conversation = await _simulated_user(platform, run, ask)
    messages = tuple(
        Message(role=m.role, content=m.content, tool_calls=m.tool_calls) for m in ask.transcript
    )
    written = _simulated_so_far(conversation, messages)
    if written >= simulated.max_turns:
        return UserTurn(user=None, done=True, reason=MAX_TURNS_REACHED)
    if written == 0 and not conversation.turns and simulated.opening is not None:
        return UserTurn(user=simulated.opening, done=False, reason=OPENING)
    return await _ask_model(platform, project_id, run_id, simulated, messages)


def _simulated_so_far(conversation: Conversation, messages: tuple[Message, ...]) -> int:
    """The user messages beyond the scripted turns: those the simulated user wrote."""
    users = sum(message.role == "user" for message in messages)
    return max(0, users - len(conversation.turns))


def _check_size(ask: UserTurnAsk) -> None:
    size = len(msgspec.json.encode(ask.transcript))
    if size > MAX_TRANSCRIPT_BYTES:
        detail = f"The transcript is {size} bytes of JSON; at most {MAX_TRANSCRIPT_BYTES} are read."
        raise InvalidInput(detail, [FieldError(pointer="/transcript", detail=detail)])


async def _run_of(platform: Platform, project_id: UUID, run_id: UUID) -> Run:
    run = await run_rows.get_run(platform.pool, project_id, run_id)
    if run is None:
        raise NotFound("No run with this id in your project.")
    if run.mode != "ci":
        raise Conflict(
            "This run calls the agent itself (server mode): the platform plays its simulated users."
        )
    if run.status in ("cancelled", "failed"):
        raise Conflict(f"The run is {run.status}; it plays no more conversations.")
    return run


async def _simulated_user(
    platform: Platform, run: Run, ask: UserTurnAsk
) -> tuple[SimulatedUser, Conversation]:
    """The pinned case's simulated user; InvalidInput naming the field when there is none."""
    problem = "Test case {} is not in this run."
    try:
        case_id = UUID(ask.test_case_id)
    except ValueError:
        case_id = None
    pinned = None
    if case_id is not None:
        async with platform.pool.acquire() as connection:
            found = await pinned_cases.pinned_cases_by_id(connection, run.id, [case_id])
        pinned = found.get(case_id)
    conversation = None if pinned is None else pinned.content.conversation
    if pinned is not None:
        problem = "Test case {} is not a conversation with a simulated_user."
    if conversation is None or conversation.simulated_user is None:
        detail = problem.format(ask.test_case_id)
        raise InvalidInput(detail, [FieldError(pointer="/test_case_id", detail=detail)])
    if ask.trial is not None and ask.trial > run.trials:
        detail = f"This run has {run.trials} trial(s) of each case; trial {ask.trial} is not one."
        raise InvalidInput(detail, [FieldError(pointer="/trial", detail=detail)])
    return conversation.simulated_user, conversation


async def _ask_model(
    platform: Platform, project_id: UUID, run_id: UUID, simulated: SimulatedUser,
    messages: tuple[Message, ...],
) -> UserTurn:  # fmt: skip
    # Opened on first use, kept for the process: the model SDK costs it some 77 MB.
    player = await platform.preview_judge.simulated_user(project_id)
    if player is None:
        raise Conflict(NO_MODEL_KEY)
    if player.server_key:
        spent = await platform.server_spend.spent_reason(project_id)
        if spent is not None:
            raise Unavailable(
                f"The simulated user could not be asked: {spent}.",
                retry_after_s=seconds_to_next_day(time.time()),
            )
    asked = await player.ask(simulated, messages)
    turn = asked.turn
    cost = asked.cost_usd or 0.0
    await run_counts.add(platform.pool, run_id, Counters(), _spend(turn, asked.calls, cost))
    metrics.JUDGE_COST_USD.labels("simulated_user").inc(cost)
    if player.server_key:
        await platform.server_spend.add(project_id, cost)
    if turn.failure is not None:
        log.warning("the simulated user of run %s could not be asked: %s", run_id, turn.failure)
        raise Unavailable(f"The simulated user could not be asked: {turn.failure}", OUTAGE_RETRY_S)
    return turn


def _spend(turn: UserTurn, calls: int, cost_usd: float) -> JudgeSpend:
    usage = turn.usage
    return JudgeSpend(
        calls=calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens,
        cost_usd=cost_usd,
    )


async def _admit(platform: Platform, project_id: UUID) -> None:
    """Count a next-turn question against the project's quota; TooManyRequests past it."""
    settings = platform.settings
    bucket = TokenBucket(
        platform.queue, f"{settings.queue_name}:rate:user-turns", TURNS_PER_MIN / 60, TURNS_PER_MIN
    )
    try:
        wait_s = await bucket.take(str(project_id))
    except (RedisError, OSError):
        # Redis away: questions go on unlimited rather than all refused, as requests do.
        log.warning("the simulated user quota is not applied: Redis did not answer", exc_info=True)
        return
    if wait_s > 0:
        retry_after_s = max(1, math.ceil(wait_s))
        raise TooManyRequests(
            f"Your project may ask for {TURNS_PER_MIN} simulated user turns a minute; try "
            f"again in {retry_after_s} s.",
            retry_after_s=retry_after_s,
        )
