"""What the use cases run on: the database, the queue, the run watcher and the configuration."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from agentlasso.agents import AgentClient
from agentlasso.config import Settings
from agentlasso.coordination.rate_limits import TokenBucket
from agentlasso.coordination.run_watch import RunWatcher
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso.judge.preview import PreviewJudge
from agentlasso.queue import QueueConnection
from agentlasso.services.request_limits import RequestLimits


@dataclass(frozen=True, slots=True)
class Platform:
    """The long-lived clients of one API process, opened at start-up and closed at shutdown."""

    settings: Settings
    pool: asyncpg.Pool
    queue: QueueConnection
    watcher: RunWatcher
    # AGENTLASSO_SECRET_KEY's bytes: seals agent headers at rest.
    secret_key: bytes
    # Calls agents outside runs (a free try, a preview).
    agent_client: AgentClient
    # Each project's and web session's request rate, previews and new keys, shared by every
    # API process.
    limits: RequestLimits
    # What the server's Anthropic key spent today on each project without a key of its own.
    server_spend: ServerKeySpend
    # Each project's case generations a minute, shared by every API process.
    generation_limiter: TokenBucket
    # The AI judge for previews, opened on first use.
    preview_judge: PreviewJudge
