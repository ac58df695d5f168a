"""How a case is named to a reader when it has no description: its input, or a conversation's
first user message."""

from __future__ import annotations

from agentlasso.domain.conversations import Conversation, ScriptedTurn, SimulatedUser, first_message

USER = SimulatedUser(persona="A customer", goal="Get a refund")


def test_a_single_turn_case_is_named_by_its_input() -> None:
    assert first_message({"order": 7}, None) == {"order": 7}


def test_a_conversation_is_named_by_its_first_scripted_message() -> None:
    conversation = Conversation(turns=(ScriptedTurn(user="Hi"), ScriptedTurn(user="Later")))
    assert first_message(None, conversation) == "Hi"


def test_a_simulated_only_conversation_is_named_by_its_opening_else_its_goal() -> None:
    opening = SimulatedUser(persona="A customer", goal="Get a refund", opening="Refund me")
    assert first_message(None, Conversation(simulated_user=opening)) == "Refund me"
    assert first_message(None, Conversation(simulated_user=USER)) == "Get a refund"
    assert first_message(None, Conversation()) == ""
