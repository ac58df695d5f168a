"""What the AI judge was asked to pay for, and what is kept of each verdict."""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.domain.grades import JudgeVerdict


class Usage(msgspec.Struct, frozen=True):
    """Tokens billed for one or more calls; the cache counts are separate from input_tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def plus(self, other: Usage) -> Usage:
        """The two usages added up."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


class JudgeRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What is kept of one verdict: who judged, what it said, what it cost."""

    check_id: str
    model: str
    passed: bool | None = None
    score: float | None = None
    reasoning: str | None = None
    not_graded_reason: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_ms: int = 0
    cached: bool = False
    calls: int = 0
    samples: tuple[float, ...] = ()
    flaky: bool = False
    # The judge's key was refused (401/403): the run stops asking.
    refused: bool = False
    # What was cut to the configured size before the judge saw it ("reply", "input", ...).
    truncated: tuple[str, ...] = ()


class CachedAnswer(msgspec.Struct, frozen=True):
    """A verdict as the judge cache keeps it."""

    verdict: JudgeVerdict
    model: str


class ProjectJudge(msgspec.Struct, frozen=True, kw_only=True):
    """A project's own judge settings: its Anthropic key (sealed) and model, when it has them."""

    key_encrypted: bytes | None = None
    model: str | None = None
    # A criterion people disagree with: its failures count as not graded (section 15).
    doubted_not_graded: bool = False


def judge_key_owner(project_id: UUID) -> bytes:
    """What a project's sealed Anthropic key is bound to: it opens for this project only."""
    return b"judge-key:" + project_id.bytes
