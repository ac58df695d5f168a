"""What the use cases run on: the database, the queue, the run watcher and the configuration."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from app.agents import AgentClient
from app.config import Settings
from app.coordination.rate_limits import TokenBucket
from app.coordination.run_watch import RunWatcher
from app.coordination.server_spend import ServerKeySpend
from app.queue import QueueConnection
from app.services.preview_judge import PreviewJudge
from app.services.request_limits import RequestLimits


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
