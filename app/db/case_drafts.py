"""Case generations and the drafts they made, always read and written inside one project."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.case_drafts import (
    AgentProfile,
    CaseDraft,
    Category,
    DraftStatus,
    GenerationRecord,
    ToolSpec,
)
from agentlasso.domain.judging import Usage

_DRAFT_COLUMNS = ", ".join(f"c.{name}" for name in CaseDraft.__struct_fields__)
# A draft's dataset must be live and the caller's: a deleted dataset's drafts are gone for reads.
_SCOPED = """
FROM case_drafts c
JOIN datasets d ON d.id = c.dataset_id AND d.project_id = c.project_id
WHERE c.project_id = $1 AND c.dataset_id = $2 AND d.deleted_at IS NULL
"""

_LIST = f"""
SELECT {_DRAFT_COLUMNS} {_SCOPED}
  AND ($3::text IS NULL OR c.status = $3) AND c.seq > $4
ORDER BY c.seq
LIMIT $5
"""

_GET = f"SELECT {_DRAFT_COLUMNS} {_SCOPED} AND c.id = $3"

_LOCK = _GET + " FOR UPDATE OF c"

_INSERT_GENERATION = """
INSERT INTO case_generations (id, project_id, dataset_id, agent_id, system_prompt, tools,
    instruction, requested, model, prompt_version, usage, cost_usd, calls, latency_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
"""

_GET_GENERATION = """
SELECT id, dataset_id, agent_id, system_prompt, tools, instruction, requested, model,
       prompt_version, usage, cost_usd, calls, latency_ms
FROM case_generations
WHERE project_id = $1 AND id = $2
"""

DRAFT_INSERT_COLUMNS = (
    "id", "project_id", "dataset_id", "generation_id", "category", "tool", "intent", "input",
    "description", "checks", "expected_output", "evaluation_type", "min_confidence",
    "tools_expected", "tools_forbidden",
)  # fmt: skip

_DECIDE = """
UPDATE case_drafts
SET status = $3, decided_at = now(), test_case_id = $4, replaced_by = $5
WHERE project_id = $1 AND id = $2 AND status = 'pending'
"""

# What a new case must not repeat: the dataset's newest live cases and its pending drafts.
_SEEN_INPUTS = """
(SELECT r.input FROM test_cases t
 JOIN test_case_revisions r ON r.id = t.current_revision_id
 WHERE t.dataset_id = $1 ORDER BY t.seq DESC LIMIT $2)
UNION ALL
(SELECT input FROM case_drafts
 WHERE dataset_id = $1 AND status = 'pending' ORDER BY seq DESC LIMIT $2)
"""

_COUNTS = f"SELECT c.status, c.category, count(*) AS n {_SCOPED} GROUP BY c.status, c.category"


def _draft(row: asyncpg.Record) -> CaseDraft:
    return msgspec.convert(dict(row), CaseDraft)


async def insert_generation(
    connection: Connection, project_id: UUID, record: GenerationRecord
) -> None:
    """Store a generation: what it was asked from and what it cost."""
    tools = [msgspec.structs.asdict(tool) for tool in record.profile.tools]
    await connection.execute(
        _INSERT_GENERATION, record.id, project_id, record.dataset_id, record.agent_id,
        record.profile.system_prompt, tools, record.instruction, record.requested, record.model,
        record.prompt_version, msgspec.structs.asdict(record.usage), record.cost_usd,
        record.calls, record.latency_ms,
    )  # fmt: skip


async def insert_drafts(connection: Connection, rows: Sequence[Sequence[Any]]) -> None:
    """Store drafts, each a row of DRAFT_INSERT_COLUMNS."""
    placeholders = ", ".join(f"${i}" for i in range(1, len(DRAFT_INSERT_COLUMNS) + 1))
    sql = f"INSERT INTO case_drafts ({', '.join(DRAFT_INSERT_COLUMNS)}) VALUES ({placeholders})"
    await connection.executemany(sql, rows)


async def list_drafts(
    executor: Executor, project_id: UUID, dataset_id: UUID, status: DraftStatus | None,
    after_seq: int, limit: int,
) -> list[CaseDraft]:  # fmt: skip
    """A page of the dataset's drafts in the order they were made, of one status or all."""
    rows = await executor.fetch(_LIST, project_id, dataset_id, status, after_seq, limit)
    return [_draft(row) for row in rows]


async def get_draft(
    executor: Executor, project_id: UUID, dataset_id: UUID, draft_id: UUID
) -> CaseDraft | None:
    """The draft, or None when it is not in this dataset of this project."""
    row = await executor.fetchrow(_GET, project_id, dataset_id, draft_id)
    return None if row is None else _draft(row)


async def lock_draft(
    connection: Connection, project_id: UUID, dataset_id: UUID, draft_id: UUID
) -> CaseDraft | None:
    """The draft, locked until the transaction ends; None when it is not the project's."""
    row = await connection.fetchrow(_LOCK, project_id, dataset_id, draft_id)
    return None if row is None else _draft(row)


async def decide(
    executor: Executor, project_id: UUID, draft_id: UUID, status: DraftStatus, *,
    test_case_id: UUID | None = None, replaced_by: UUID | None = None,
) -> bool:  # fmt: skip
    """Accept or reject a pending draft; False when it was no longer pending."""
    result: str = await executor.execute(
        _DECIDE, project_id, draft_id, status, test_case_id, replaced_by
    )
    return result == "UPDATE 1"


async def get_generation(
    executor: Executor, project_id: UUID, generation_id: UUID
) -> GenerationRecord | None:
    """A generation, or None when it is not the project's."""
    row = await executor.fetchrow(_GET_GENERATION, project_id, generation_id)
    if row is None:
        return None
    fields = dict(row)
    tools = msgspec.convert(fields.pop("tools"), tuple[ToolSpec, ...])
    profile = AgentProfile(system_prompt=fields.pop("system_prompt"), tools=tools)
    usage = msgspec.convert(fields.pop("usage"), Usage)
    return GenerationRecord(**fields, profile=profile, usage=usage)


async def seen_inputs(executor: Executor, dataset_id: UUID, limit: int) -> list[Any]:
    """Inputs a new case must not repeat: the newest live cases' and the pending drafts'."""
    return [row["input"] for row in await executor.fetch(_SEEN_INPUTS, dataset_id, limit)]


async def counts(
    executor: Executor, project_id: UUID, dataset_id: UUID
) -> dict[tuple[DraftStatus, Category], int]:
    """How many drafts of each status and kind the dataset has."""
    rows = await executor.fetch(_COUNTS, project_id, dataset_id)
    return {(row["status"], row["category"]): row["n"] for row in rows}
