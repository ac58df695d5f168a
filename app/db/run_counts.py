"""A run's counters as tallies: what each store adds, summed on read, folded into the run's row.

A store never updates or locks the run's row (every chunk of a run would queue on it): it
appends one tally row of its own. A reader adds the run's tallies to its row in the statement
that reads it, so it sees whole commits only. A fold moves tallies into the row in one
statement, which readers see entirely or not at all.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.runs import Counters


class JudgeSpend(msgspec.Struct, frozen=True, kw_only=True):
    """What some judge verdicts cost: calls, cache hits, tokens and dollars."""

    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0


# The run's columns a tally adds to, in the order of Counters then JudgeSpend.
TALLIED = (
    *Counters.__struct_fields__,
    *(f"judge_{name}" for name in JudgeSpend.__struct_fields__),
)

_ADD = f"""
INSERT INTO run_tallies (run_id, {", ".join(TALLIED)}, judge_stopped)
VALUES ($1, {", ".join(f"${i}" for i in range(2, len(TALLIED) + 2))}, ${len(TALLIED) + 2})
"""

# The first reason a tally gives for the run judging no more.
_FIRST_STOP = "(array_agg(judge_stopped ORDER BY seq) FILTER (WHERE judge_stopped IS NOT NULL))[1]"
# Sums of bigint columns are numeric (Decimal in Python): read back as the columns' types.
_SUMS = ", ".join(
    f"sum({name})::{'float8' if name.endswith('_usd') else 'bigint'} AS {name}" for name in TALLIED
)

# The tallies of run `r` taken together (one row, all null when it has none); `{}` is the run id.
TALLIES_OF = f"""
SELECT {_SUMS}, {_FIRST_STOP} AS judge_stopped, max(created_at) AS updated_at,
       count(*) AS tallies
FROM run_tallies WHERE run_id = {{}}
"""


def run_column(name: str) -> str:
    """How a read of eval_runs `r` joined to TALLIES_OF `t` says one of the run's columns."""
    if name in TALLIED:
        return f"r.{name} + coalesce(t.{name}, 0) AS {name}"
    if name == "judge_stopped":
        return "coalesce(r.judge_stopped, t.judge_stopped) AS judge_stopped"
    if name == "updated_at":
        return "greatest(r.updated_at, t.updated_at) AS updated_at"
    return f"r.{name}"


# Every tally of the run (or of every run with at least $2 of them) moved into its row. The
# tallies deleted are the ones added: one appended meanwhile stays, and is read as before.
_FOLD = f"""
WITH folded AS (
    DELETE FROM run_tallies WHERE run_id = ANY($1::uuid[]) RETURNING *
), sums AS (
    SELECT run_id, {_SUMS}, {_FIRST_STOP} AS judge_stopped, max(created_at) AS updated_at
    FROM folded GROUP BY run_id
)
UPDATE eval_runs r
SET {", ".join(f"{name} = r.{name} + s.{name}" for name in TALLIED)},
    judge_stopped = coalesce(r.judge_stopped, s.judge_stopped),
    updated_at = greatest(r.updated_at, s.updated_at)
FROM sums s WHERE r.id = s.run_id
"""

_CROWDED = "SELECT run_id FROM run_tallies GROUP BY run_id HAVING count(*) >= $1"


async def add(
    executor: Executor,
    run_id: UUID,
    counts: Counters,
    spend: JudgeSpend | None = None,
    stopped: str | None = None,
) -> None:
    """Append what a store counts for to the run's tallies (nothing, when it counts for none)."""
    spend = spend or JudgeSpend()
    if counts == Counters() and spend == JudgeSpend() and stopped is None:
        return
    values: list[Any] = [*msgspec.structs.astuple(counts), *msgspec.structs.astuple(spend)]
    await executor.execute(_ADD, run_id, *values, stopped)


async def fold(connection: Connection, run_ids: list[UUID]) -> int:
    """Move these runs' tallies into their rows; how many runs had some."""
    if not run_ids:
        return 0
    status: str = await connection.execute(_FOLD, run_ids)
    return int(status.split()[-1])


async def fold_crowded(connection: Connection, at_least: int) -> list[UUID]:
    """Fold the tallies of every run that has at least this many; returns those runs."""
    run_ids = [row["run_id"] for row in await connection.fetch(_CROWDED, at_least)]
    await fold(connection, run_ids)
    return run_ids
