"""What the judge is shown of a case: each part cut to a configured size, the cuts stated.

Inputs are what a verdict costs: a 2 MB reply is half a million tokens. The operator bounds it
with AGENTLASSO_JUDGE_MAX_INPUT_CHARS; a verdict reached on a cut input says so in its
reasoning, so nobody reads it as a verdict on the whole reply.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.domain.conversations import Message
from agentlasso.domain.grades import JudgeVerdict, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.judge_checks import JudgeRequest
from agentlasso.judge.prompts import JudgeQuestion


def shown_to_judge(
    request: JudgeRequest,
    content: TestCaseContent,
    observation: Observation,
    context: dict[str, Any] | None,
    max_chars: int,
) -> tuple[JudgeQuestion, list[str]]:
    """The question as the judge sees it, and a note for each part that was cut."""
    cut: list[str] = []
    if request.conversation_input is None:
        shown_reply = observation.actual_output
        case_input = _cut_json(content.input, max_chars, "the input", cut)
    else:
        # A conversation: the transcript before the reply judged is what the user said; its
        # latest messages, nearest the reply, are the ones kept.
        shown_reply = request.conversation_reply
        case_input = _transcript_end(request.conversation_input, max_chars, cut)
    reply = _cut_text(shown_reply or "", max_chars, "the reply", cut)
    criterion = _cut_text(request.criterion, max_chars, _criterion_name(request), cut)
    shown_context = (
        None if context is None else _cut_json(context, max_chars, "the data context", cut)
    )
    question = JudgeQuestion(
        kind=request.kind,
        evaluation_type=request.evaluation_type,
        criterion=criterion,
        case_input=case_input,
        reply=reply,
        data_context=shown_context,
        # Left out of a question without examples, so its cache key is what it always was.
        examples=request.examples or msgspec.UNSET,
    )
    return question, cut


def with_cut_note(verdict: JudgeVerdict, cut: list[str]) -> JudgeVerdict:
    """The verdict, its reasoning ending with what the judge did not see whole."""
    if not cut or verdict.reasoning is None:
        return verdict
    note = f" (The judge was shown only the start of {', '.join(cut)}.)"
    return msgspec.structs.replace(verdict, reasoning=verdict.reasoning + note)


def _transcript_end(messages: tuple[Message, ...], max_chars: int, cut: list[str]) -> Any:
    """The transcript as JSON when it fits; else its latest messages that fit, whole (the
    oldest left out, and counted)."""
    encoded = [msgspec.json.encode(message).decode() for message in messages]
    total = sum(len(text) + 1 for text in encoded)
    if total <= max_chars:
        return msgspec.to_builtins(list(messages))
    kept: list[Message] = []
    size = 0
    for message, text in zip(reversed(messages), reversed(encoded), strict=True):
        size += len(text) + 1
        if size > max_chars:
            break
        kept.append(message)
    left_out = len(messages) - len(kept)
    cut.append(f"the conversation so far (its latest {len(kept)} of {len(messages)} messages)")
    if not kept:
        # Even the latest message alone is too long: the end of its JSON.
        return {"end_of_json": encoded[-1][-max_chars:], "messages_left_out": left_out}
    return {"messages_left_out": left_out, "latest": msgspec.to_builtins(kept[::-1])}


def _criterion_name(request: JudgeRequest) -> str:
    return "the expected output" if request.kind == "expectation" else "the criterion"


def _cut_text(text: str, max_chars: int, name: str, cut: list[str]) -> str:
    if len(text) <= max_chars:
        return text
    cut.append(f"{name} ({max_chars:,} of {len(text):,} characters)")
    return text[:max_chars]


def _cut_json(value: Any, max_chars: int, name: str, cut: list[str]) -> Any:
    """A string cut as text; any other value, when its JSON is too long, as the start of that."""
    if isinstance(value, str):
        return _cut_text(value, max_chars, name, cut)
    text = msgspec.json.encode(value).decode()
    if len(text) <= max_chars:
        return value
    cut.append(f"{name} ({max_chars:,} of {len(text):,} characters of JSON)")
    return {"start_of_json": text[:max_chars]}
