"""The one place that calls the model for a judgement: a verdict, or why there is none."""

from __future__ import annotations

import asyncio
import time

import msgspec

from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.judging import Usage
from agentlasso.judge.model_calls import Failure, JudgeSettings, ModelCaller, Reply, Tally
from agentlasso.judge.prompts import JudgeQuestion, message_params
from agentlasso.judge.verdicts import VERDICT_TOOL_NAME, read_verdict
from agentlasso.retry_policy import Sleep

NO_JUDGE = "no AI judge is configured: set ANTHROPIC_API_KEY"

__all__ = ["NO_JUDGE", "JudgeAnswer", "JudgeClient", "JudgeSettings"]


class JudgeAnswer(msgspec.Struct, frozen=True):
    """One judgement: the verdict or why there is none, and what it took."""

    # decided/scored, or unavailable(reason): never a guessed pass or fail.
    verdict: JudgeVerdict
    model: str
    # Summed over every attempt that got an answer.
    usage: Usage
    # The whole judgement, waits between attempts included.
    latency_ms: int
    attempts: int
    # 401/403: the caller stops judging for that run.
    auth_failed: bool = False


class JudgeClient:
    """Asks the judge model for verdicts; one per process, shared by its tasks."""

    def __init__(self, settings: JudgeSettings, sleep: Sleep = asyncio.sleep) -> None:
        self._settings = settings
        self._caller = ModelCaller(settings, sleep)

    @property
    def model(self) -> str:
        """The model this client asks."""
        return self._settings.model

    async def judge(self, question: JudgeQuestion) -> JudgeAnswer:
        """The judge's verdict on one question; model-side problems become `unavailable`."""
        if self._caller.sdk is None:
            no_judge = JudgeVerdict.unavailable(NO_JUDGE)
            return JudgeAnswer(no_judge, self._settings.model, Usage(), latency_ms=0, attempts=0)
        started = time.perf_counter()
        tally = Tally(self._settings.model)
        verdict, auth_failed = await self._judge(question, tally)
        return JudgeAnswer(
            verdict,
            tally.model,
            tally.usage,
            latency_ms=round((time.perf_counter() - started) * 1000),
            attempts=tally.attempts,
            auth_failed=auth_failed,
        )

    async def check_key(self) -> str | None:
        """One minimal request (a one-token answer): None when the key and model work, else
        what went wrong, in words."""
        if self._caller.sdk is None:
            return NO_JUDGE
        params = {
            "model": self._settings.model,
            "max_tokens": 1,
            "messages": [{"role": "user", "content": "Reply with OK."}],
        }
        outcome = await self._caller.call(params, None)
        return outcome.reason if isinstance(outcome, Failure) else None

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._caller.aclose()

    async def _judge(self, question: JudgeQuestion, tally: Tally) -> tuple[JudgeVerdict, bool]:
        """Call until a usable verdict, a final failure, or the attempts run out."""
        forced_tool = self._caller.forced_tool
        params = message_params(
            question,
            model=self._settings.model,
            max_tokens=self._settings.max_tokens,
            forced_tool=forced_tool,
        )

        def read(reply: Reply) -> JudgeVerdict:
            return read_verdict(
                reply.output, question.evaluation_type, model=reply.model, forced_tool=forced_tool
            )

        def usable(verdict: JudgeVerdict) -> bool:
            return verdict.not_graded_reason is None

        outcome = await self._caller.ask(params, VERDICT_TOOL_NAME, tally, read, usable)
        if isinstance(outcome, Failure):
            return _failed(outcome, tally.attempts), outcome.auth_failed
        return outcome, False


def _failed(failure: Failure, attempts: int) -> JudgeVerdict:
    """The verdict for a judgement that ended in a failure."""
    if not failure.retryable:
        return JudgeVerdict.unavailable(failure.reason)
    tries = "try" if attempts == 1 else "tries"
    return JudgeVerdict.unavailable(
        f"the judge was unavailable after {attempts} {tries}: {failure.reason}"
    )
