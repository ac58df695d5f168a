"""Paste a reply for a conversation case: the pasted transcript read as a played conversation
and graded as a run would grade it (app/web/transcripts.py says how one is written)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from uuid import UUID

from agentlasso.domain.conversations import ENDED_IN_WORDS, EndedBy
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.services.conversation_preview import (
    PlayedPreview,
    preview_conversation,
    preview_pasted_conversation,
)
from agentlasso.services.platform import Platform
from agentlasso.web.case_form import CaseForm
from agentlasso.web.forms import text
from agentlasso.web.transcripts import played_from_paste

# How a pasted conversation can have ended (an agent error is not pasted: it has no reply).
ENDED_CHOICES: list[tuple[str, str]] = [
    (name, words) for name, words in ENDED_IN_WORDS.items() if name != "error"
]


async def graded(
    platform: Platform,
    project_id: UUID,
    dataset: Dataset,
    content: TestCaseContent,
    posted: Mapping[str, Any],
    action: str,
    test_case_id: UUID | None = None,
) -> PlayedPreview:
    """The conversation played against the agent (Preview) or pasted (Paste a reply), graded;
    InvalidInput naming the field when a pasted one cannot be read."""
    conversation = content.conversation
    assert conversation is not None, "only a conversation case is pasted as a transcript"
    if action != "paste":
        return await preview_conversation(
            platform, project_id, content, dataset.data_context, test_case_id
        )
    ended_by = _ended_by(posted, conversation.simulated_user is not None)
    played = played_from_paste(text(posted, "pasted_transcript"), len(conversation.turns), ended_by)
    return await preview_pasted_conversation(
        platform, project_id, content, dataset.data_context, played
    )


def _ended_by(posted: Mapping[str, Any], simulated: bool) -> EndedBy:
    chosen = text(posted, "pasted_ended_by")
    if chosen in dict(ENDED_CHOICES):
        return cast(EndedBy, chosen)
    return _default_ended_by(simulated)


def _default_ended_by(simulated: bool) -> EndedBy:
    return "simulated_user" if simulated else "script"


def fields(form: CaseForm, posted: Mapping[str, Any]) -> dict[str, Any]:
    """The editor's Paste a reply fields for a conversation, as posted (or their defaults)."""
    simulated = form.conversation is not None and form.conversation.has_simulated_user
    return {
        "pasted_transcript": text(posted, "pasted_transcript"),
        "pasted_ended_by": text(posted, "pasted_ended_by") or _default_ended_by(simulated),
        "ended_choices": ENDED_CHOICES,
    }
