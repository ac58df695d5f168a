"""The one place that calls the model: a judgement with our own timeout, retries and reasons."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anthropic
import httpx2
import msgspec
from anthropic.types import Message, TextBlock, ToolUseBlock

from app.domain.judging import Usage
from app.domain.results import JudgeVerdict
from app.judge.prompts import JudgeQuestion, message_params
from app.judge.verdicts import VERDICT_TOOL_NAME, ModelOutput, read_verdict
from app.retry_policy import RetryPolicy, Sleep, retry_after_s

log = logging.getLogger("agentlasso.judge")

NO_JUDGE = "no AI judge is configured: set ANTHROPIC_API_KEY"

# "Try again later": these, every 5xx, and Anthropic's 529 (overloaded).
_RETRYABLE_STATUSES = frozenset({408, 409, 429})
# The key is wrong or lacks access: every later call fails the same way, so never retry.
_AUTH_STATUSES = frozenset({401, 403})
# An unusable answer (invalid, cut off, refused) gets one more call: a third rarely differs.
_MAX_BAD_ANSWERS = 2
_MESSAGE_CHARS = 300


class JudgeSettings(msgspec.Struct, frozen=True):
    """How to reach the judge model and how patiently."""

    api_key: str | None
    model: str
    base_url: str | None = None
    # Per attempt, the whole request: connect, send, wait, read.
    timeout_s: float = 60.0
    max_attempts: int = 3
    # A retry-after beyond this (429s have asked for an hour) is cut to it.
    retry_after_cap_s: float = 30.0
    max_tokens: int = 1024
    # Models without structured outputs: they are forced to call a verdict tool instead.
    forced_tool_models: tuple[str, ...] = ("claude-haiku-4-5",)
    # The first retry waits up to this long (full jitter), doubling after each failure.
    backoff_base_s: float = 1.0


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


class _Reply(msgspec.Struct, frozen=True):
    """A model response, reduced to what a verdict needs."""

    output: ModelOutput
    usage: Usage
    model: str


class _Failure(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt without a response, translated at the SDK boundary."""

    reason: str
    retryable: bool = False
    auth_failed: bool = False
    # What the server asked us to wait (retry-after), before our cap.
    retry_after_s: float | None = None


class _Tally:
    """What the attempts of one judgement add up to."""

    def __init__(self, model: str) -> None:
        self.attempts = 0
        self.usage = Usage()
        self.model = model

    def record(self, reply: _Reply) -> None:
        """Count one response's tokens; the model that answered names the verdict."""
        self.usage = self.usage.plus(reply.usage)
        self.model = reply.model


class JudgeClient:
    """Asks the judge model for verdicts; one per process, shared by its tasks."""

    def __init__(self, settings: JudgeSettings, sleep: Sleep = asyncio.sleep) -> None:
        self._settings = settings
        self._sleep = sleep
        self._retry = RetryPolicy(
            max_attempts=settings.max_attempts,
            retry_after_cap_s=settings.retry_after_cap_s,
            backoff_base_s=settings.backoff_base_s,
        )
        self._forced_tool = settings.model in settings.forced_tool_models
        # Without a key there is no client at all: the SDK would otherwise go looking for
        # credentials in the environment and on disk.
        self._sdk: anthropic.AsyncAnthropic | None = None
        if settings.api_key:
            # SDK retries off: they obey any retry-after uncapped (an hour, measured) and would
            # multiply with ours. Its default timeout is 600 s; a worker needs far less.
            self._sdk = anthropic.AsyncAnthropic(
                api_key=settings.api_key,
                base_url=settings.base_url,
                timeout=settings.timeout_s,
                max_retries=0,
            )

    @property
    def model(self) -> str:
        """The model this client asks."""
        return self._settings.model

    async def judge(self, question: JudgeQuestion) -> JudgeAnswer:
        """The judge's verdict on one question; model-side problems become `unavailable`."""
        if self._sdk is None:
            no_judge = JudgeVerdict.unavailable(NO_JUDGE)
            return JudgeAnswer(no_judge, self._settings.model, Usage(), latency_ms=0, attempts=0)
        started = time.perf_counter()
        tally = _Tally(self._settings.model)
        verdict, auth_failed = await self._judge(self._sdk, question, tally)
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
        if self._sdk is None:
            return NO_JUDGE
        params = {
            "model": self._settings.model,
            "max_tokens": 1,
            "messages": [{"role": "user", "content": "Reply with OK."}],
        }
        outcome = await self._call(self._sdk, params)
        return outcome.reason if isinstance(outcome, _Failure) else None

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._sdk is not None:
            await self._sdk.close()

    async def _judge(
        self, sdk: anthropic.AsyncAnthropic, question: JudgeQuestion, tally: _Tally
    ) -> tuple[JudgeVerdict, bool]:
        """Call until a usable verdict, a final failure, or the attempts run out."""
        params = message_params(
            question,
            model=self._settings.model,
            max_tokens=self._settings.max_tokens,
            forced_tool=self._forced_tool,
        )
        bad_answers = 0
        while True:
            tally.attempts += 1
            outcome = await self._call(sdk, params)
            last_attempt = tally.attempts >= self._retry.max_attempts
            if isinstance(outcome, _Failure):
                if not outcome.retryable or last_attempt:
                    return _failed(outcome, tally.attempts), outcome.auth_failed
                await self._sleep(self._retry.delay_s(tally.attempts, outcome.retry_after_s))
                continue
            tally.record(outcome)
            verdict = read_verdict(
                outcome.output,
                question.evaluation_type,
                model=outcome.model,
                forced_tool=self._forced_tool,
            )
            bad_answers += verdict.not_graded_reason is not None
            if verdict.not_graded_reason is None or bad_answers >= _MAX_BAD_ANSWERS or last_attempt:
                return verdict, False

    async def _call(
        self, sdk: anthropic.AsyncAnthropic, params: dict[str, Any]
    ) -> _Reply | _Failure:
        """One request, every way it can go wrong translated into a `_Failure`."""
        timeout_s = self._settings.timeout_s
        try:
            # The SDK's timeout is per read; this bounds the whole attempt (a slow drip too).
            async with asyncio.timeout(timeout_s):
                response = await sdk.messages.create(**params)
        except anthropic.APIStatusError as exc:
            return _status_failure(exc)
        except (anthropic.APITimeoutError, TimeoutError):
            return _Failure(reason=f"no answer within {timeout_s:g} s", retryable=True)
        except anthropic.APIConnectionError as exc:
            return _Failure(reason=f"connection failed ({exc.__cause__ or exc})", retryable=True)
        except Exception as exc:  # the boundary: the SDK lets some errors through untranslated
            return _unexpected_failure(exc)
        return _reply(response, self._settings.model)


def _failed(failure: _Failure, attempts: int) -> JudgeVerdict:
    """The verdict for a judgement that ended in a failure."""
    if not failure.retryable:
        return JudgeVerdict.unavailable(failure.reason)
    tries = "try" if attempts == 1 else "tries"
    return JudgeVerdict.unavailable(
        f"the judge was unavailable after {attempts} {tries}: {failure.reason}"
    )


def _status_failure(exc: anthropic.APIStatusError) -> _Failure:
    """An HTTP error answer: stop on auth, give up on other 4xx, retry the rest."""
    status = exc.status_code
    if status in _AUTH_STATUSES:
        return _Failure(reason=f"the judge's API key was refused (HTTP {status})", auth_failed=True)
    described = _described(exc)
    if status in _RETRYABLE_STATUSES or status >= 500:
        asked_s = _asked_wait_s(exc.response.headers)
        return _Failure(reason=described, retryable=True, retry_after_s=asked_s)
    # 400, 404, 413...: a configuration problem that a retry cannot fix.
    return _Failure(reason=f"the judge's request was rejected ({described})")


def _described(exc: anthropic.APIStatusError) -> str:
    """`HTTP 529 overloaded_error: Overloaded`, or the content type of a body that is not JSON."""
    if exc.type is not None:
        message = (exc.api_message or "")[:_MESSAGE_CHARS]
        return f"HTTP {exc.status_code} {exc.type}: {message}"
    content_type = exc.response.headers.get("content-type", "no content type").split(";")[0]
    return f"HTTP {exc.status_code} ({content_type} body)"


def _asked_wait_s(headers: httpx2.Headers) -> float | None:
    """The wait the server asked for, in seconds: retry-after-ms, else retry-after."""
    milliseconds = headers.get("retry-after-ms")
    try:
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000)
    except ValueError:
        pass
    return retry_after_s(headers.get("retry-after"))


def _unexpected_failure(exc: Exception) -> _Failure:
    """An error the SDK did not translate: an unreadable body is retried, the rest is not."""
    described = f"{type(exc).__name__}: {str(exc)[:_MESSAGE_CHARS]}"
    # A truncated or garbled body reaches us as a decode error (json.JSONDecodeError).
    if isinstance(exc, ValueError):
        log.warning("the judge's response could not be read: %s", described)
        reason = f"the judge's response could not be read ({described})"
        return _Failure(reason=reason, retryable=True)
    log.warning("the judge call failed outside the SDK's errors", exc_info=exc)
    return _Failure(reason=f"the judge call failed ({described})")


def _reply(response: object, fallback_model: str) -> _Reply | _Failure:
    """The parts of a response a verdict needs, taking content blocks by their type."""
    if not isinstance(response, Message):
        # A 200 that is not JSON (text/plain) comes back from the SDK as a str.
        kind = type(response).__name__
        return _Failure(reason=f"the judge's response was not a message ({kind})", retryable=True)
    text = "".join(block.text for block in response.content if isinstance(block, TextBlock))
    tool_input = next(
        (
            dict(block.input)
            for block in response.content
            if isinstance(block, ToolUseBlock) and block.name == VERDICT_TOOL_NAME
        ),
        None,
    )
    output = ModelOutput(stop_reason=response.stop_reason, text=text, tool_input=tool_input)
    return _Reply(output, _usage(response), response.model or fallback_model)


def _usage(response: Message) -> Usage:
    """The response's token counts; any may be missing or null."""
    usage = getattr(response, "usage", None)

    def count(name: str) -> int:
        value = getattr(usage, name, None)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_creation_input_tokens=count("cache_creation_input_tokens"),
        cache_read_input_tokens=count("cache_read_input_tokens"),
    )
