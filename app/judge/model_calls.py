"""Calling the model: one request with our own timeout, retries and reasons, shared by the
judge and case generation (the SDK's own retries and timeouts are wrong for us)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anthropic
import httpx2
import msgspec
from anthropic.types import Message, TextBlock, ToolUseBlock

from agentlasso.domain.judging import Usage
from agentlasso.judge.model_transport import PooledTransport, proxied
from agentlasso.judge.verdicts import ModelOutput
from agentlasso.observability import metrics
from agentlasso.retry_policy import RetryPolicy, Sleep, retry_after_s

log = logging.getLogger("agentlasso.judge")

Answer = TypeVar("Answer")

# "Try again later": these, every 5xx, and Anthropic's 529 (overloaded).
_RETRYABLE_STATUSES = frozenset({408, 409, 429})
# The key is wrong or lacks access: every later call fails the same way, so never retry.
_AUTH_STATUSES = frozenset({401, 403})
# An unusable answer (invalid, cut off, refused) gets one more call: a third rarely differs.
MAX_BAD_ANSWERS = 2
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


class Reply(msgspec.Struct, frozen=True):
    """A model response, reduced to what an answer needs."""

    output: ModelOutput
    usage: Usage
    model: str


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt without a response, translated at the SDK boundary."""

    reason: str
    retryable: bool = False
    auth_failed: bool = False
    # What the server asked us to wait (retry-after), before our cap.
    retry_after_s: float | None = None
    # For metrics: the HTTP status if one came, and what went wrong in a word.
    status: int | None = None
    kind: str = "error"


class Tally:
    """What the attempts of one question add up to."""

    def __init__(self, model: str) -> None:
        self.attempts = 0
        self.usage = Usage()
        self.model = model

    def record(self, reply: Reply) -> None:
        """Count one response's tokens; the model that answered names the answer."""
        self.usage = self.usage.plus(reply.usage)
        self.model = reply.model


# Connections one caller keeps to the model at most; requests beyond wait for one (the judge's
# shared slots bound what is in flight long before this).
MAX_MODEL_CONNECTIONS = 512


class ModelCaller:
    """Asks the model; `who` names it in reasons ("the judge's API key was refused")."""

    def __init__(
        self,
        settings: JudgeSettings,
        sleep: Sleep = asyncio.sleep,
        who: str = "the judge",
        use: str = "judge",
    ) -> None:
        self.settings = settings
        self.who = who
        # What the calls are for, as the metrics label them: judge or generation.
        self.use = use
        self._sleep = sleep
        self.retry = RetryPolicy(
            max_attempts=settings.max_attempts,
            retry_after_cap_s=settings.retry_after_cap_s,
            backoff_base_s=settings.backoff_base_s,
        )
        self.forced_tool = settings.model in settings.forced_tool_models
        # Without a key there is no client at all: the SDK would otherwise go looking for
        # credentials in the environment and on disk.
        self.sdk: anthropic.AsyncAnthropic | None = None
        if settings.api_key:
            # SDK retries off: they obey any retry-after uncapped (an hour, measured) and would
            # multiply with ours. Its default timeout is 600 s; a worker needs far less.
            self.sdk = anthropic.AsyncAnthropic(
                api_key=settings.api_key,
                base_url=settings.base_url,
                timeout=settings.timeout_s,
                max_retries=0,
                http_client=_http_client(settings.base_url),
            )

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self.sdk is not None:
            await self.sdk.close()

    async def ask(
        self,
        params: dict[str, Any],
        tool_name: str | None,
        tally: Tally,
        read: Callable[[Reply], Answer],
        usable: Callable[[Answer], bool],
    ) -> Answer | Failure:
        """Call until a usable answer, a final failure, or the attempts run out."""
        bad_answers = 0
        while True:
            tally.attempts += 1
            outcome = await self.call(params, tool_name)
            last_attempt = tally.attempts >= self.retry.max_attempts
            if isinstance(outcome, Failure):
                if not outcome.retryable or last_attempt:
                    return outcome
                await self._sleep(self.retry.delay_s(tally.attempts, outcome.retry_after_s))
                continue
            tally.record(outcome)
            answer = read(outcome)
            good = usable(answer)
            bad_answers += not good
            if good or bad_answers >= MAX_BAD_ANSWERS or last_attempt:
                return answer

    async def call(self, params: dict[str, Any], tool_name: str | None) -> Reply | Failure:
        """One request, every way it can go wrong translated into a `Failure`; counted."""
        outcome = await self._call(params, tool_name)
        if isinstance(outcome, Reply):
            metrics.JUDGE_CALLS.labels(self.use, "ok").inc()
            metrics.JUDGE_TOKENS.labels(self.use, "input").inc(outcome.usage.input_tokens)
            metrics.JUDGE_TOKENS.labels(self.use, "output").inc(outcome.usage.output_tokens)
        else:
            metrics.JUDGE_CALLS.labels(self.use, outcome.kind).inc()
            if outcome.status == 429:
                metrics.JUDGE_RATE_LIMITED.inc()
        return outcome

    async def _call(self, params: dict[str, Any], tool_name: str | None) -> Reply | Failure:
        assert self.sdk is not None, "no key: callers check before asking"
        timeout_s = self.settings.timeout_s
        try:
            # The SDK's timeout is per read; this bounds the whole attempt (a slow drip too).
            async with asyncio.timeout(timeout_s):
                response = await self.sdk.messages.create(**params)
        except anthropic.APIStatusError as exc:
            return self._status_failure(exc)
        except (anthropic.APITimeoutError, TimeoutError):
            return Failure(
                reason=f"no answer within {timeout_s:g} s", retryable=True, kind="timeout"
            )
        except anthropic.APIConnectionError as exc:
            reason = f"connection failed ({exc.__cause__ or exc})"
            return Failure(reason=reason, retryable=True, kind="connection")
        except Exception as exc:  # the boundary: the SDK lets some errors through untranslated
            return self._unexpected_failure(exc)
        return self._reply(response, tool_name)

    def _status_failure(self, exc: anthropic.APIStatusError) -> Failure:
        """An HTTP error answer: stop on auth, give up on other 4xx, retry the rest."""
        status = exc.status_code
        if status in _AUTH_STATUSES:
            reason = f"{self.who}'s API key was refused (HTTP {status})"
            return Failure(reason=reason, auth_failed=True, status=status, kind="auth_refused")
        described = _described(exc)
        if status in _RETRYABLE_STATUSES or status >= 500:
            asked_s = _asked_wait_s(exc.response.headers)
            kind = "rate_limited" if status == 429 else "unavailable"
            return Failure(
                reason=described, retryable=True, retry_after_s=asked_s, status=status, kind=kind
            )
        # 400, 404, 413...: a configuration problem that a retry cannot fix.
        reason = f"{self.who}'s request was rejected ({described})"
        return Failure(reason=reason, status=status, kind="rejected")

    def _unexpected_failure(self, exc: Exception) -> Failure:
        """An error the SDK did not translate: an unreadable body is retried, the rest is not."""
        described = f"{type(exc).__name__}: {str(exc)[:_MESSAGE_CHARS]}"
        # A truncated or garbled body reaches us as a decode error (json.JSONDecodeError).
        if isinstance(exc, ValueError):
            log.warning("%s's response could not be read: %s", self.who, described)
            reason = f"{self.who}'s response could not be read ({described})"
            return Failure(reason=reason, retryable=True, kind="unreadable")
        log.warning("%s call failed outside the SDK's errors", self.who, exc_info=exc)
        return Failure(reason=f"{self.who} call failed ({described})")

    def _reply(self, response: object, tool_name: str | None) -> Reply | Failure:
        """The parts of a response an answer needs, taking content blocks by their type."""
        if not isinstance(response, Message):
            # A 200 that is not JSON (text/plain) comes back from the SDK as a str.
            kind = type(response).__name__
            reason = f"{self.who}'s response was not a message ({kind})"
            return Failure(reason=reason, retryable=True, kind="unreadable")
        text = "".join(block.text for block in response.content if isinstance(block, TextBlock))
        tool_input = next(
            (
                dict(block.input)
                for block in response.content
                if isinstance(block, ToolUseBlock) and block.name == tool_name
            ),
            None,
        )
        output = ModelOutput(stop_reason=response.stop_reason, text=text, tool_input=tool_input)
        return Reply(output, _usage(response), response.model or self.settings.model)


def _http_client(base_url: str | None) -> httpx2.AsyncClient | None:
    """The platform's pooled connections; None (the SDK's own client, which goes through the
    proxy) when the environment names a proxy for the model's address."""
    if proxied(base_url):
        return None
    return httpx2.AsyncClient(transport=PooledTransport(MAX_MODEL_CONNECTIONS))


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
