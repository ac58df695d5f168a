"""How a conversation's chat says it ended: a conversation that could not be played out says
why, rather than how a played one ends."""

from __future__ import annotations

from agentlasso.domain.conversations import TurnRecord
from agentlasso.web.conversation_views import chat

TURN = TurnRecord(
    turn=1, user="Where is my order?", actual_output="Which one?", actual_tool_calls=[]
)


def test_a_played_conversation_says_how_it_ended() -> None:
    assert (
        chat([TURN], [], "simulated_user")["ended"] == "The simulated user ended the conversation."
    )


def test_a_conversation_not_played_out_says_why_instead() -> None:
    shown = chat([TURN], [], "simulated_user", "the simulated user was unavailable after 3 tries.")
    assert shown["ended"] == (
        "It could not be played out, so it was not graded: the simulated user was unavailable "
        "after 3 tries."
    )
