"""A conversation's result stored as a CI client's would be, through the recording path
(app/services/recording.py), for pages to show it: graded and counted like any other."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db import pinned_cases
from agentlasso.db import runs as run_rows
from agentlasso.db.pool import connect
from agentlasso.domain.case_results import Played, Reported
from agentlasso.domain.conversations import EndedBy, PlayedConversation, TurnRecord
from agentlasso.domain.runs import Counters
from agentlasso.grading.conversation import whole_observation
from agentlasso.services.recording import BatchRecording, Reply, RunGrading, grade, store


def played(
    turns: list[tuple[str, str | None, list[dict[str, object]]]],
    ended_by: EndedBy = "script",
    scripted: int | None = None,
    error_at: int | None = None,
) -> PlayedConversation:
    """(user, reply, tool calls) per turn; turns past `scripted` are the simulated user's."""
    records = tuple(
        TurnRecord(
            turn=number,
            user=user,
            simulated=scripted is not None and number > scripted,
            actual_output=None if number == error_at else reply,
            actual_tool_calls=None if number == error_at else calls,
            latency_ms=40 + number,
            error="HTTP 500 from the agent" if number == error_at else None,
        )
        for number, (user, reply, calls) in enumerate(turns, start=1)
    )
    return PlayedConversation(turns=records, ended_by=ended_by)


async def record_conversation(
    database_url: str, run_id: str, test_case_id: str, conversation: PlayedConversation
) -> None:
    """Grade and store one conversation's result in a CI run (the judge not configured)."""
    connection = await connect(database_url)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM eval_runs WHERE id = $1", UUID(run_id)
        )
        run = await run_rows.get_run(connection, project_id, UUID(run_id))
        assert run is not None
        case_id = UUID(test_case_id)
        pinned = (await pinned_cases.pinned_cases_by_id(connection, run.id, [case_id]))[case_id]
        final = whole_observation(conversation)
        reply = Reply(
            case=pinned, trial=1, actual_output=final.actual_output,
            actual_tool_calls=[
                {"name": call.name, "arguments": call.arguments}
                for call in final.tool_calls or ()
            ],
            reported=Reported(actual_output=final.actual_output),
            agent_error=None, played=Played(conversation=conversation, attempt=1),
        )  # fmt: skip
        _, row = grade(RunGrading(run_id=run.id, judge_configured=False), reply, lambda: False)
        recording = BatchRecording(run.project_id, [case_id], Counters.counting([row.flags()]))
        async with connection.transaction():
            await store(connection, run.id, [row], recording)
    finally:
        await connection.close()
